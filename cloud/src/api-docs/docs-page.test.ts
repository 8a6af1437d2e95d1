import { buildOpenApiDocument, type OpenApiDocument } from '@sortie/contracts';
import { describe, expect, it } from 'vitest';
import { renderDocsPage } from './docs-page.ts';

const document = buildOpenApiDocument({ serverUrl: 'https://sortie.example' });

describe('renderDocsPage', () => {
  const html = renderDocsPage(document);

  it('groups operations by tag, each with method, path, scope, summary, fields and responses', () => {
    for (const { name } of document.tags) expect(html).toContain(`>${name}</h2>`);
    const create = html.slice(html.indexOf('id="op-createCommand"'), html.indexOf('</article>', html.indexOf('id="op-createCommand"')));
    expect(create).toContain('<span class="m post">POST</span> <code>/api/commands/create</code>');
    expect(create).toContain('Scope: <code>commands:write</code>');
    expect(create).toContain('<code>commandText</code></td><td>string</td><td>required</td><td>min length <code>1</code>, max length <code>1000</code>');
    expect(create).toContain('<code>description</code></td><td>string</td><td>optional</td><td>max length <code>4000</code>, default <code>&#34;&#34;</code>');
    expect(create).toContain('<td><code>201</code></td>');
    expect(create).toContain('<td><code>404</code></td>');
    expect(create).toContain('Smallest valid body');
    const list = html.slice(html.indexOf('id="op-listCommands"'));
    expect(list).toMatch(/Query parameters<\/h4>\s*<table>.*?<code>experimentId<\/code><\/td><td>string \(uuid\)<\/td><td>required/s);
    expect(html).toContain('Auth: <code>Authorization: Bearer cak_…</code>');
  });

  it('shows a file body as a file, and both bodies of an answer the Accept header chooses between', () => {
    const start = html.indexOf('id="op-createImport"');
    const create = html.slice(start, html.indexOf('</article>', start));
    expect(create).toContain('<h4>Body: a file (<code>application/octet-stream</code>)</h4>');
    expect(create).not.toContain('Smallest valid body');
    expect(create).toMatch(/<td><code>200<\/code><\/td>.*CreateImportResponse<\/a> \(<code>application\/json<\/code>\) or .*ImportProgressLine<\/a> \(<code>application\/x-ndjson<\/code>\)/);
    expect(create).toContain('SORTIE_IMPORT_MAX_BYTES');
  });

  it('links every referenced schema to its section', () => {
    const targets = new Set([...html.matchAll(/href="#(schema-[^"]+)"/g)].map((m) => m[1]));
    expect(targets.size).toBeGreaterThan(20);
    for (const target of targets) expect(html, target).toContain(`id="${target}"`);
  });

  it('escapes everything it takes from the document', () => {
    const hostile: OpenApiDocument = structuredClone(document);
    hostile.info.title = '<script>alert(1)</script>';
    const operation = hostile.paths['/api/commands/create']!.post!;
    operation.summary = 'a `<b>code</b>` & "quote" <img src=x onerror=alert(1)>';
    operation.description = "it's <i>";
    hostile.servers = [{ url: '"><script>x</script>' }];
    const page = renderDocsPage(hostile);
    expect(page).not.toMatch(/<script|<img|<b>|<i>/);
    expect(page).toContain('&#60;script&#62;alert(1)&#60;/script&#62;');
    expect(page).toContain('<code>&#60;b&#62;code&#60;/b&#62;</code> &#38; &#34;quote&#34;');
    expect(page).toContain('it&#39;s &#60;i&#62;');
  });

  it('needs nothing from the network', () => {
    expect(html).not.toMatch(/<script|<link|\ssrc=|@import|url\(/i);
    expect(html.match(/href="[^"#][^"]*"/g)).toEqual(['href="openapi.json"', 'href="docs/grpc"', 'href="docs/webhooks"', 'href="docs/mavlink"']);
  });
});
