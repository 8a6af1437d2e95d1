import { gzipSync } from 'node:zlib';
import { ConsoleSessionSchema } from '@sortie/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';
import { CONSOLE_CSP } from './routes.ts';

// The budget for the console's JavaScript: what a browser on a test range's link must fetch (decision 0008
// says what it weighs and how it stays under).
const MAX_SCRIPT_GZIP_BYTES = 100 * 1024;

describe('console serving', () => {
  let svc: TestService;
  let org: TestOrg;
  beforeAll(async () => {
    svc = await startTestService({ embedded: true });
    org = await svc.createOrg('Range Ops');
  });
  afterAll(() => svc?.stop());

  it('serves the page at / with a strict CSP and only same-origin hashed assets', async () => {
    const response = await fetch(`${svc.url}/`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(response.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).not.toContain('unsafe');
    const html = await response.text();
    // Nothing from another origin, and no inline script the CSP would have to allow.
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(html).not.toMatch(/<script>(?!<\/script>)/);
    const assets = [...html.matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets.some((a) => a.endsWith('.js'))).toBe(true);
    expect(assets.some((a) => a.endsWith('.css'))).toBe(true);
    for (const asset of assets) {
      const a = await fetch(svc.url + asset);
      expect(a.status).toBe(200);
      expect(a.headers.get('cache-control')).toContain('immutable');
      const etag = a.headers.get('etag')!;
      const body = new Uint8Array(await a.arrayBuffer());
      if (asset.endsWith('.js')) {
        expect(a.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
        expect(gzipSync(body).length).toBeLessThanOrEqual(MAX_SCRIPT_GZIP_BYTES);
        // No CDN: the script fetches nothing from another origin.
        expect(new TextDecoder().decode(body)).not.toMatch(/https?:\/\/(cdn|unpkg|fonts)\./);
      }
      const again = await fetch(svc.url + asset, { headers: { 'if-none-match': etag } });
      expect(again.status).toBe(304);
    }
  });

  it('answers 404 for an unknown asset and keeps the API under /api', async () => {
    expect((await fetch(`${svc.url}/console/assets/app-nope.js`)).status).toBe(404);
    const api = await svc.call('GET', '/api/experiments/list');
    expect(api.status).toBe(401);
  });

  it("tells a key its organization and scopes, and refuses a bad key in the envelope", async () => {
    const { apiKey, keyId } = await org.keyWith(['datasets:read', 'commands:read']);
    const ok = await svc.call('GET', '/console/session', { key: apiKey });
    expect(ok.status).toBe(200);
    const session = ConsoleSessionSchema.parse(ok.body);
    expect(session).toEqual({ organization: { id: org.organizationId, name: 'Range Ops' }, keyId, scopes: ['datasets:read', 'commands:read'], expiresAt: null });
    const bad = await svc.call('GET', '/console/session', { key: 'sk_live_nope' });
    expect(bad.status).toBe(401);
    expect(bad.body.error.code).toBe('unauthorized');
    const none = await svc.call('GET', '/console/session');
    expect(none.status).toBe(401);
  });
});
