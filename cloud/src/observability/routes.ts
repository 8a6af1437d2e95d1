import { Hono } from 'hono';
import type { AppContext } from '../platform/context.ts';
import type { AppEnv } from '../http/app-env.ts';

/**
 * Probes and metrics, outside /api and without an API key: load balancers, orchestrators and Prometheus
 * call them. They reveal no tenant data (metrics labels are routes and outcomes, never ids).
 */
export function operationsRoutes(ctx: AppContext) {
  return new Hono<AppEnv>()
    // Alive: no I/O, so a slow database never gets a healthy process restarted.
    .get('/healthz', (c) => c.json({ status: 'ok' }))
    .get('/readyz', async (c) => {
      const report = await ctx.readiness.check(c.get('requestId'));
      if (report.reason) return c.json({ status: 'not_ready', reason: report.reason }, 503);
      return c.json({ status: report.ready ? 'ready' : 'not_ready', checks: report.checks }, report.ready ? 200 : 503);
    })
    .get('/metrics', async (c) => {
      const { contentType, body } = await ctx.metrics.scrape();
      return c.body(body, 200, { 'Content-Type': contentType });
    });
}
