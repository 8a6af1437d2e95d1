import { resolveSchemaRef, sampleFromSchema, type JsonSchema, type OpenApiDocument, type OpenApiOperation, type OpenApiParameter } from '@sortie/contracts';

/**
 * /docs: the OpenAPI document as one self-contained HTML page (inline CSS, no scripts, nothing fetched),
 * so it reads the same on an air-gapped ground station as on the internet.
 */
export function renderDocsPage(document: OpenApiDocument): string {
  const operations = listOperations(document);
  const sections = document.tags.map(({ name }) => {
    const ops = operations.filter((op) => op.operation.tags.includes(name));
    return `<section><h2 id="${anchor('tag', name)}">${esc(name)}</h2>\n${ops.map((op) => renderOperation(document, op)).join('\n')}</section>`;
  });
  const toc = document.tags
    .map(({ name }) => {
      const items = operations
        .filter((op) => op.operation.tags.includes(name))
        .map((op) => `<li><a href="#${anchor('op', op.operation.operationId)}"><span class="m ${op.method}">${op.method.toUpperCase()}</span> <code>${esc(op.path)}</code></a></li>`)
        .join('');
      return `<li><a href="#${anchor('tag', name)}">${esc(name)}</a><ul>${items}</ul></li>`;
    })
    .join('');
  const schemas = Object.entries(document.components.schemas)
    .map(([name, schema]) => `<section class="schema"><h3 id="${anchor('schema', name)}">${esc(name)}</h3>${renderShape(document, schema)}</section>`)
    .join('\n');
  const server = document.servers[0]?.url;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(document.info.title)} ${esc(document.info.version)}</title>
<style>${STYLE}</style>
</head>
<body>
<header>
<h1>${esc(document.info.title)} <small>${esc(document.info.version)}</small></h1>
<p>${inline(document.info.description)}</p>
<p>Machine-readable: <a href="openapi.json">openapi.json</a> (OpenAPI ${esc(document.openapi)}).${server ? ` Server: <code>${esc(server)}</code>.` : ''}
Authenticate with the <code>x-api-key</code> header holding an <code>sk_</code> key with the scope each operation names;
<code>POST /api/commands/ack</code> takes <code>Authorization: Bearer cak_…</code> instead.
Send <code>X-Request-Id</code> to correlate logs; every response carries one.</p>
<p>Guides: <a href="docs/grpc">telemetry over gRPC and Connect</a> (also on this port under <code>/api/rpc</code>) ·
<a href="docs/webhooks">webhook delivery and signature verification</a> · <a href="docs/mavlink">MAVLink signal catalogue</a>.</p>
</header>
<nav><h2>Operations</h2><ul>${toc}</ul><p><a href="#schemas">Schemas</a></p></nav>
<main>
${sections.join('\n')}
<section><h2 id="schemas">Schemas</h2>
${schemas}
</section>
</main>
</body>
</html>
`;
}

interface ListedOperation {
  method: string;
  path: string;
  operation: OpenApiOperation;
}

function listOperations(document: OpenApiDocument): ListedOperation[] {
  const out: ListedOperation[] = [];
  for (const [path, item] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(item)) if (operation) out.push({ method, path, operation });
  }
  return out;
}

function renderOperation(document: OpenApiDocument, { method, path, operation }: ListedOperation): string {
  const auth = operation['x-sortie-auth'];
  const parts = [
    `<article class="op" id="${anchor('op', operation.operationId)}">`,
    `<h3><span class="m ${method}">${esc(method.toUpperCase())}</span> <code>${esc(path)}</code></h3>`,
    `<p class="summary">${inline(operation.summary)}</p>`,
    `<p class="meta">${auth === 'ack-token' ? 'Auth: <code>Authorization: Bearer cak_…</code> (no API key)' : `Scope: <code>${esc(auth)}</code>`} · operationId <code>${esc(operation.operationId)}</code></p>`,
  ];
  if (operation.description) parts.push(`<p>${inline(operation.description)}</p>`);
  const query = operation.parameters.filter((p): p is OpenApiParameter => !('$ref' in p) && p.in === 'query');
  if (query.length > 0) {
    parts.push('<h4>Query parameters</h4>', fieldTable(document, query.map((p) => ({ name: p.name, schema: p.schema, required: p.required === true }))));
  }
  const bodyRef = operation.requestBody?.content['application/json']?.schema.$ref;
  const rawBody = operation.requestBody?.content['application/octet-stream'];
  if (rawBody) {
    // A file sent as it is (an imported log): no JSON shape to show, only what it is.
    parts.push(`<h4>Body: a file (<code>application/octet-stream</code>)</h4>`, `<p>${inline(operation.requestBody?.description ?? '')}</p>`);
  }
  if (typeof bodyRef === 'string') {
    const name = refName(bodyRef);
    parts.push(`<h4>Body <a href="#${anchor('schema', name)}">${esc(name)}</a></h4>`, renderShape(document, resolveSchemaRef(document, bodyRef)));
    const example = JSON.stringify(sampleFromSchema(document, { $ref: bodyRef }), null, 2);
    parts.push(`<details><summary>Smallest valid body</summary><pre>${esc(example)}</pre></details>`);
  }
  parts.push('<h4>Responses</h4><table><thead><tr><th>status</th><th>meaning</th><th>body</th></tr></thead><tbody>');
  for (const [status, answer] of Object.entries(operation.responses)) {
    const response = '$ref' in answer ? document.components.responses[refName(answer.$ref)] : answer;
    if (!response) throw new Error(`unresolvable response ${JSON.stringify(answer)}`);
    const media = Object.keys(response.content ?? {});
    const refs = media.map((m) => response.content?.[m]?.schema.$ref);
    let body: string;
    if (media.length > 1 && new Set(refs).size > 1) {
      // Bodies the request's Accept chooses between (an import's JSON answer or its NDJSON progress): each with its type.
      body = media.map((m, i) => `${typeof refs[i] === 'string' ? typeLink(refName(refs[i])) : ''} (<code>${esc(m)}</code>)`).join(' or ');
    } else {
      const file = media.length > 0 && !media.includes('application/json') ? ` (${media.map((m) => `<code>${esc(m)}</code>`).join(' or ')})` : '';
      body = (typeof refs[0] === 'string' ? typeLink(refName(refs[0])) : '') + file;
    }
    parts.push(`<tr><td><code>${esc(status)}</code></td><td>${inline(response.description)}</td><td>${body}</td></tr>`);
  }
  parts.push('</tbody></table></article>');
  return parts.join('\n');
}

/** An object's fields as a table; anything else as its type. */
function renderShape(document: OpenApiDocument, schema: JsonSchema): string {
  if (schema.type === 'object' && schema.properties) {
    const required = (schema.required ?? []) as string[];
    const fields = Object.entries(schema.properties as Record<string, JsonSchema>).map(([name, field]) => ({
      name,
      schema: field,
      required: required.includes(name),
    }));
    const closed = schema.additionalProperties === false ? '<p class="note">Other fields are refused.</p>' : '';
    return fieldTable(document, fields) + closed;
  }
  return `<p>${describeType(schema)}</p>`;
}

function fieldTable(document: OpenApiDocument, fields: { name: string; schema: JsonSchema; required: boolean }[]): string {
  const rows = fields
    .map(
      (f) =>
        `<tr><td><code>${esc(f.name)}</code></td><td>${describeType(f.schema)}</td><td>${f.required ? 'required' : 'optional'}</td><td>${constraints(f.schema)}</td></tr>`,
    )
    .join('');
  return `<table><thead><tr><th>field</th><th>type</th><th></th><th>rules</th></tr></thead><tbody>${rows}</tbody></table>`;
}

function describeType(schema: JsonSchema): string {
  if (typeof schema.$ref === 'string') return typeLink(refName(schema.$ref));
  if ('const' in schema) return `<code>${esc(JSON.stringify(schema.const))}</code>`;
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => `<code>${esc(JSON.stringify(v))}</code>`).join(' | ');
  for (const key of ['anyOf', 'oneOf'] as const) {
    if (Array.isArray(schema[key])) return (schema[key] as JsonSchema[]).map(describeType).join(' | ');
  }
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : typeof schema.type === 'string' ? [schema.type] : [];
  if (types.length === 0) return 'any';
  return types
    .map((type) => {
      if (type === 'array') return `${describeType((schema.items ?? {}) as JsonSchema)}[]`;
      if (type === 'object' && schema.properties) {
        const inner = Object.entries(schema.properties as Record<string, JsonSchema>)
          .map(([name, field]) => `${esc(name)}${((schema.required ?? []) as string[]).includes(name) ? '' : '?'}: ${describeType(field)}`)
          .join(', ');
        return `{ ${inner} }`;
      }
      if (type === 'object' && schema.additionalProperties && typeof schema.additionalProperties === 'object') {
        const values = schema.additionalProperties as JsonSchema;
        return Object.keys(values).length === 0 ? 'object' : `object of ${describeType(values)}`;
      }
      if (type === 'string' && typeof schema.format === 'string') return `string (${esc(schema.format)})`;
      return esc(type);
    })
    .join(' | ');
}

const RULES: [keyword: string, label: string][] = [
  ['minLength', 'min length'],
  ['maxLength', 'max length'],
  ['minimum', 'min'],
  ['maximum', 'max'],
  ['exclusiveMinimum', 'greater than'],
  ['exclusiveMaximum', 'less than'],
  ['minItems', 'min items'],
  ['maxItems', 'max items'],
  ['default', 'default'],
];

function constraints(schema: JsonSchema): string {
  const out: string[] = [];
  for (const [keyword, label] of RULES) {
    if (keyword in schema) out.push(`${label} <code>${esc(JSON.stringify(schema[keyword]))}</code>`);
  }
  if (typeof schema.startsWith === 'string') out.push(`starts with <code>${esc(schema.startsWith)}</code>`);
  // A format already says what a uuid or date-time pattern would; other patterns are the rule itself.
  if (typeof schema.pattern === 'string' && typeof schema.format !== 'string') out.push(`pattern <code>${esc(schema.pattern)}</code>`);
  return out.join(', ');
}

function typeLink(name: string): string {
  return `<a href="#${anchor('schema', name)}">${esc(name)}</a>`;
}

function refName(ref: string): string {
  return ref.slice(ref.lastIndexOf('/') + 1);
}

function anchor(kind: string, name: string): string {
  return `${kind}-${name.replace(/[^A-Za-z0-9_-]+/g, '-')}`;
}

/** Escape text, then turn `code` spans into <code> (after escaping, so nothing in them is markup). */
function inline(text: string): string {
  return esc(text).replace(/`([^`]+)`/g, '<code>$1</code>');
}

function esc(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

const STYLE = `
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1b1f24;background:#fff;display:grid;grid-template-columns:22rem 1fr;grid-template-areas:"head head" "nav main"}
header{grid-area:head;padding:1rem 2rem;border-bottom:1px solid #d0d7de;background:#f6f8fa}
header h1{margin:.2rem 0}header small{color:#57606a;font-weight:normal}
nav{grid-area:nav;padding:1rem;border-right:1px solid #d0d7de;font-size:13px;position:sticky;top:0;align-self:start;max-height:100vh;overflow:auto}
nav ul{list-style:none;padding-left:.6rem;margin:.2rem 0}nav li{white-space:nowrap}nav h2{font-size:15px}
main{grid-area:main;padding:1rem 2rem;min-width:0}
a{color:#0969da;text-decoration:none}a:hover{text-decoration:underline}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px}
pre{background:#f6f8fa;padding:.6rem;overflow:auto;border-radius:6px}
.op{border:1px solid #d0d7de;border-radius:8px;padding:.4rem 1rem 1rem;margin:1rem 0}
.op h3{margin:.5rem 0;word-break:break-all}.summary{font-weight:600;margin:.2rem 0}.meta{color:#57606a;font-size:13px;margin:.2rem 0}
.m{display:inline-block;min-width:3.2em;text-align:center;border-radius:4px;color:#fff;font-size:12px;font-weight:700;padding:0 .3em}
.m.get{background:#1f7a3d}.m.post{background:#0550ae}
table{border-collapse:collapse;width:100%;margin:.4rem 0;font-size:14px}
th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top}th{background:#f6f8fa}
td code{word-break:break-word}.note{color:#57606a;font-size:13px;margin:.2rem 0}
.schema h3{margin-bottom:.2rem}
@media (max-width:800px){body{display:block}nav{position:static;max-height:none;border-right:0}}
`;
