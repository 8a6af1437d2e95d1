import { buildOpenApiDocument } from '@sortie/contracts';
import { Hono } from 'hono';
import type { AppContext } from '../platform/context.ts';
import type { AppEnv } from '../http/app-env.ts';
import { renderDocsPage } from './docs-page.ts';

// The page has no scripts and fetches nothing; the policy makes that a promise the browser keeps.
const DOCS_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** GET /openapi.json and GET /docs: public (no API key), built on first request and kept for the process. */
export function docsRoutes(ctx: AppContext) {
  let json: string | undefined;
  let html: string | undefined;
  const document = () => buildOpenApiDocument({ serverUrl: ctx.config.publicUrl });
  return new Hono<AppEnv>()
    .get('/openapi.json', (c) => {
      json ??= JSON.stringify(document());
      return c.body(json, 200, { 'content-type': 'application/json; charset=utf-8' });
    })
    .get('/docs', (c) => {
      html ??= renderDocsPage(document());
      return c.body(html, 200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': DOCS_CSP });
    });
}
