import { ListDeliveriesQuerySchema, type DeliveryAttempt } from '@sortie/contracts';
import { Hono } from 'hono';
import { requireScope } from '../auth/require-scope.ts';
import { commandExists } from '../commands/queries.ts';
import type { AppContext } from '../platform/context.ts';
import type { DeliveryAttemptRow } from '../db/schema.ts';
import { notFound } from '../platform/errors.ts';
import type { AppEnv } from '../http/app-env.ts';
import { readQuery } from '../http/validation.ts';
import { listDeliveryAttempts } from './queries.ts';

export function toDeliveryAttempt(row: DeliveryAttemptRow): DeliveryAttempt {
  return {
    id: row.id,
    // Listed by command only (the query names one), so never a limit notification's attempt.
    commandId: row.command_id!,
    endpointId: row.endpoint_id,
    endpointUrl: row.endpoint_url,
    eventType: row.event_type,
    attempt: row.attempt,
    statusCode: row.status_code ?? 0,
    response: row.response,
    error: row.error,
    durationMs: row.duration_ms,
    attemptedAt: row.attempted_at.toISOString(),
    deliveryId: row.delivery_id,
  };
}

/** GET /api/webhooks/deliveries?commandId=: every attempt for a command, newest first, deleted endpoints included. */
export function deliveriesRoutes(ctx: AppContext) {
  return new Hono<AppEnv>().get('/webhooks/deliveries', requireScope(ctx, 'webhooks:read'), async (c) => {
    const { commandId } = readQuery(c, ListDeliveriesQuerySchema);
    const organizationId = c.get('principal').organizationId;
    if (!(await commandExists(ctx.db, organizationId, commandId))) throw notFound(`no command ${commandId}`);
    const rows = await listDeliveryAttempts(ctx.db, organizationId, commandId);
    return c.json(rows.map(toDeliveryAttempt));
  });
}
