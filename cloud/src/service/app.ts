import { Hono } from 'hono';
import { armingRoutes } from '../arming/routes.ts';
import { IMPORT_UPLOAD_PATH, importsRoutes } from '../imports/routes.ts';
import { channelsRoutes } from '../channels/routes.ts';
import { commandsRoutes } from '../commands/routes.ts';
import { consoleRoutes } from '../console/routes.ts';
import type { AppContext } from '../platform/context.ts';
import { datasetsRoutes } from '../datasets/routes.ts';
import type { DeliveryDeps } from '../delivery/deliver.ts';
import { deliveriesRoutes } from '../delivery/routes.ts';
import { webhookTestRoutes } from '../delivery/test-event-route.ts';
import { eventsRoutes } from '../events/routes.ts';
import { experimentsRoutes } from '../experiments/routes.ts';
import { limitsRoutes } from '../limits/routes.ts';
import { exportRoutes } from '../export/routes.ts';
import { RPC_PREFIX, telemetryRpcRoutes } from '../grpc/http-routes.ts';
import { appendRoutes } from '../telemetry/append-route.ts';
import { notificationsRoutes } from '../notifications/routes.ts';
import { httpMetrics } from '../observability/http-metrics.ts';
import { operationsRoutes } from '../observability/routes.ts';
import { templatesRoutes } from '../templates/routes.ts';
import { webhooksRoutes } from '../webhooks/routes.ts';
import { ServiceError } from '../platform/errors.ts';
import type { AppEnv } from '../http/app-env.ts';
import { BodyBudget, bodyAdmission } from '../http/body-admission.ts';
import { bodyLimit } from '../http/body-limit.ts';
import { docsRoutes } from '../api-docs/routes.ts';
import { renderError, renderThrown } from '../http/render-error.ts';
import { requestId } from '../http/request-id.ts';

export interface HttpAppParts {
  /** The delivery engine's sender, for POST /api/webhooks/test; without it that route cannot send (tests that only list routes). */
  sendWebhook?: DeliveryDeps['send'];
}

export function createHttpApp(ctx: AppContext, parts: HttpAppParts = {}): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.use(requestId);
  app.use(httpMetrics(ctx.metrics));
  app.use(async (c, next) => {
    const started = performance.now();
    await next();
    ctx.logger.info(
      { requestId: c.get('requestId'), method: c.req.method, path: c.req.path, status: c.res.status, ms: Math.round(performance.now() - started) },
      'http request',
    );
  });
  const limit = bodyLimit({
    maxSize: ctx.config.http.bodyLimit,
    onError: (c) => renderError(c, new ServiceError('payload_too_large', `request body exceeds the limit of ${ctx.config.http.bodyLimit} bytes`)),
  });
  // TelemetryService's Connect handlers bound their messages themselves (readMaxBytes, RESOURCE_EXHAUSTED), as on the gRPC port.
  // A log upload streams to disk under its own limit (SORTIE_IMPORT_MAX_BYTES): neither bound applies to it.
  const unbounded = (path: string) => path.startsWith(`${RPC_PREFIX}/`) || path === IMPORT_UPLOAD_PATH;
  app.use('/api/*', (c, next) => (unbounded(c.req.path) ? next() : limit(c, next)));
  // Bodies the limit let through, bounded together in bytes: many large ones wait their turn.
  const admission = bodyAdmission(new BodyBudget(ctx.config.http.bodyBytesInFlight), ctx.config.http.bodyLimit);
  app.use('/api/*', (c, next) => (c.req.path === IMPORT_UPLOAD_PATH ? next() : admission(c, next)));

  app.route('/', operationsRoutes(ctx));
  app.route('/api', experimentsRoutes(ctx));
  app.route('/api', datasetsRoutes(ctx));
  app.route('/api', channelsRoutes(ctx));
  app.route('/api', appendRoutes(ctx));
  app.route('/api', eventsRoutes(ctx));
  app.route('/api', limitsRoutes(ctx));
  app.route('/api', importsRoutes(ctx));
  app.route('/api', exportRoutes(ctx));
  app.route('/api', commandsRoutes(ctx));
  app.route('/api', armingRoutes(ctx));
  app.route('/api', templatesRoutes(ctx));
  app.route('/api', webhooksRoutes(ctx));
  app.route('/api', deliveriesRoutes(ctx));
  app.route('/api', webhookTestRoutes(ctx, parts.sendWebhook));
  app.route('/api', notificationsRoutes(ctx));
  app.route('/api', telemetryRpcRoutes(ctx));
  app.route('/', docsRoutes(ctx));
  app.route('/', consoleRoutes(ctx));

  app.notFound((c) => renderError(c, new ServiceError('not_found', `no route for ${c.req.method} ${c.req.path}`)));
  // The envelope for whatever a route threw; a database outage is 503 unavailable, not a 500.
  app.onError((error, c) => renderThrown(c, error, ctx.logger));
  return app;
}
