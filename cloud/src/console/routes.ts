import { API_KEY_HEADER, type ConsoleSession } from '@sortie/contracts';
import { Hono } from 'hono';
import { checkApiKey } from '../auth/api-keys.ts';
import { keyRejected } from '../auth/principal.ts';
import type { AppEnv } from '../http/app-env.ts';
import type { AppContext } from '../platform/context.ts';
import { buildConsole, type ConsoleBundle } from './bundle.ts';
import { renderConsolePage } from './page.ts';
import { organizationName } from './session.ts';

/**
 * Everything the page may load comes from this origin; no inline script or style, no eval, no plugin,
 * no framing. uPlot and Preact set element styles through the CSSOM, which style-src does not govern.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE_HEADERS = {
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  // The page names the hashed assets of this process's bundle; a cached copy would name stale ones.
  'cache-control': 'no-store',
};

/** One bundle per process, however many apps it creates (tests start many services). */
const bundles = new WeakMap<() => Promise<ConsoleBundle>, Promise<ConsoleBundle | Error>>();

/**
 * The console: GET / (the page), GET /console/assets/<hashed name> (its script and stylesheet, built
 * in memory), and GET /console/session (who the key is: organization and scopes, which the API routes
 * do not tell). The bundle is made on the first console request, not at start-up, so services that
 * never serve the console (tests, headless deployments) never spawn esbuild; a bundle failure is
 * logged and answered 503, and the API keeps working.
 */
export function consoleRoutes(ctx: AppContext, build: () => Promise<ConsoleBundle> = buildConsole) {
  const load = (): Promise<ConsoleBundle | Error> => {
    const cached = bundles.get(build);
    if (cached) return cached;
    const started = performance.now();
    const shared = build().then(
      (b) => {
        ctx.logger.info({ ms: Math.round(performance.now() - started), assets: [...b.assets.keys()] }, 'console bundled');
        return b;
      },
      (error: unknown) => {
        ctx.logger.error({ err: error }, 'console bundle failed; the API is unaffected');
        return error instanceof Error ? error : new Error(String(error));
      },
    );
    bundles.set(build, shared);
    return shared;
  };
  return new Hono<AppEnv>()
    .get('/', async (c) => {
      const b = await load();
      if (b instanceof Error) {
        return c.body(`The console could not be built: ${b.message}\n`, 503, { ...PAGE_HEADERS, 'content-type': 'text/plain; charset=utf-8' });
      }
      return c.body(renderConsolePage(b), 200, PAGE_HEADERS);
    })
    .get('/console/assets/:name', async (c) => {
      const b = await load();
      const asset = b instanceof Error ? undefined : b.assets.get(c.req.param('name'));
      if (!asset) return c.body('not found\n', 404, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' });
      const headers = {
        'content-type': asset.contentType,
        etag: asset.etag,
        'x-content-type-options': 'nosniff',
        // The name carries the content hash: a changed asset is a new URL.
        'cache-control': 'public, max-age=31536000, immutable',
      };
      if (c.req.header('if-none-match') === asset.etag) return c.body(null, 304, headers);
      return c.body(asset.body as Uint8Array<ArrayBuffer>, 200, headers);
    })
    .get('/console/session', async (c) => {
      const now = ctx.clock.now();
      const check = await checkApiKey(ctx.db, c.req.header(API_KEY_HEADER), now);
      if (!check.ok) throw keyRejected(check.reason, 'header');
      const session: ConsoleSession = {
        organization: { id: check.organizationId, name: await organizationName(ctx.db, check.organizationId) },
        keyId: check.keyId,
        scopes: check.scopes,
        expiresAt: check.expiresAt?.toISOString() ?? null,
      };
      return c.json(session, 200, { 'cache-control': 'no-store' });
    });
}
