import { buildOpenApiDocument } from '@sortie/contracts';
import { Hono } from 'hono';
import type { AppContext } from '../platform/context.ts';
import type { AppEnv } from '../http/app-env.ts';
import { renderDocsPage } from './docs-page.ts';
import { renderGrpcPage } from './grpc-page.ts';
import { renderMavlinkPage } from './mavlink-page.ts';
import { renderWebhooksPage } from './webhooks-page.ts';

// The pages have no scripts and fetch nothing; the policy makes that a promise the browser keeps.
const DOCS_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
// The signal catalogue's search is a plain GET form back to itself.
const SEARCH_CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
const HTML = 'text/html; charset=utf-8';

/**
 * GET /openapi.json and GET /docs, with the guides beside it: /docs/grpc (TelemetryService and its
 * Connect JSON form), /docs/webhooks (what a receiver gets and how to verify it), /docs/mavlink (the
 * signal catalogue, `?q=` to search). Public (no API key); built on first request and kept.
 */
export function docsRoutes(ctx: AppContext) {
  let json: string | undefined;
  let html: string | undefined;
  let grpc: string | undefined;
  let webhooks: string | undefined;
  let mavlink: string | undefined;
  const document = () => buildOpenApiDocument({ serverUrl: ctx.config.publicUrl });
  const page = (body: string, csp = DOCS_CSP) => ({ body, headers: { 'content-type': HTML, 'content-security-policy': csp } });
  return new Hono<AppEnv>()
    .get('/openapi.json', (c) => {
      json ??= JSON.stringify(document());
      return c.body(json, 200, { 'content-type': 'application/json; charset=utf-8' });
    })
    .get('/docs', (c) => {
      html ??= renderDocsPage(document());
      const { body, headers } = page(html);
      return c.body(body, 200, headers);
    })
    .get('/docs/grpc', (c) => {
      const { host, port } = ctx.config.grpc;
      grpc ??= renderGrpcPage({ http: ctx.config.publicUrl, grpc: `http://${host.includes(':') ? `[${host}]` : host}:${port}` });
      const { body, headers } = page(grpc);
      return c.body(body, 200, headers);
    })
    .get('/docs/webhooks', (c) => {
      webhooks ??= renderWebhooksPage({ ...ctx.config.webhook, publicUrl: ctx.config.publicUrl });
      const { body, headers } = page(webhooks);
      return c.body(body, 200, headers);
    })
    .get('/docs/mavlink', (c) => {
      const q = (c.req.query('q') ?? '').slice(0, 100);
      // The unsearched page is the common one: kept like the others.
      const rendered = q.trim() === '' ? (mavlink ??= renderMavlinkPage('')) : renderMavlinkPage(q);
      const { body, headers } = page(rendered, SEARCH_CSP);
      return c.body(body, 200, headers);
    });
}
