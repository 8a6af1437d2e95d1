import type { Context, MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import type { Metrics } from '../platform/metrics.ts';

/** Label of requests no route answered (404s): one series for every unknown URL. */
export const UNMATCHED_ROUTE = 'unmatched';

/** Count and time every HTTP request under its route pattern (`/api/commands/create`), never its raw URL. */
export function httpMetrics(metrics: Metrics): MiddlewareHandler {
  return async (c, next) => {
    const started = performance.now();
    await next();
    metrics.httpRequest(c.req.method, routeLabel(c), c.res.status, (performance.now() - started) / 1000);
  };
}

/**
 * The pattern of the route the request matched, even when middleware answered first (413, 401).
 * Middleware (`use`, method ALL) matches any path; a request matching nothing else reached no route.
 * (No route of this app is registered with `all`.)
 */
export function routeLabel(c: Context): string {
  return matchedRoutes(c).findLast((r) => r.method !== 'ALL')?.path ?? UNMATCHED_ROUTE;
}
