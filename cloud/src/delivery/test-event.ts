import { PING_COMMAND_ID, type DeliveryAttempt, type PingBody } from '@sortie/contracts';
import type { AppContext } from '../platform/context.ts';
import { signWebhookSync } from '../crypto/node-crypto.ts';
import type { Executor } from '../db/executor.ts';
import type { WebhookEndpointRow } from '../db/schema.ts';
import { conflict, notFound } from '../platform/errors.ts';
import { checkWebhookUrl } from '../net/url-guard.ts';
import { isDeliverable, liveSecrets } from '../webhooks/endpoints.ts';
import { deliveryId } from './body.ts';
import type { DeliveryDeps } from './deliver.ts';

/** The event type of a test delivery (X-Sortie-Event and the body's `eventType`). */
export const PING = 'ping';

/** The organization's endpoint by id, deleted ones left out. */
function findEndpoint(db: Executor, organizationId: string, id: string): Promise<WebhookEndpointRow | undefined> {
  return db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('id', '=', id)
    .where('organization_id', '=', organizationId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

/**
 * POST /api/webhooks/test: one signed `ping` to one endpoint, now, on the path a command delivery takes
 * (URL rules with fresh DNS, the pinned addresses, every live secret, the engine's sender with its CA
 * and time-out), so a passing ping means a dispatch would reach the receiver too. It is one attempt,
 * never retried and not recorded: no command owns it, and a receiver being set up must not walk its
 * endpoint towards auto-disable.
 */
export async function sendTestEvent(
  ctx: AppContext,
  send: DeliveryDeps['send'],
  input: { organizationId: string; endpointId: string },
): Promise<DeliveryAttempt> {
  const endpoint = await findEndpoint(ctx.db, input.organizationId, input.endpointId);
  if (!endpoint) throw notFound(`no webhook endpoint ${input.endpointId}`);
  if (!isDeliverable(endpoint)) throw conflict(`webhook endpoint ${endpoint.id} is disabled (${endpoint.disabled_reason ?? 'by its owner'}); nothing is delivered to it`);
  const now = ctx.clock.now();
  const id = deliveryId(crypto.randomUUID(), 1);
  const body: PingBody = { eventType: PING, sentAt: now.toISOString(), endpoint: { id: endpoint.id, organizationId: endpoint.organization_id } };
  const check = await checkWebhookUrl(endpoint.url, ctx.webhookGuard);
  const answer = check.ok
    ? await send({
        url: check.url,
        hostname: check.hostname,
        addresses: check.addresses,
        headers: signWebhookSync({ secrets: liveSecrets(endpoint, ctx.secretKey, now), eventType: PING, deliveryId: id, rawBody: JSON.stringify(body), nowMs: now.getTime() }),
        body: JSON.stringify(body),
        timeoutMs: ctx.config.webhook.timeoutMs,
      })
    : { response: '', error: `refused by the URL rules: ${check.message}`, durationMs: 0 };
  const ok = answer.statusCode !== undefined && answer.statusCode >= 200 && answer.statusCode < 300;
  ctx.logger.info({ endpointId: endpoint.id, deliveryId: id, statusCode: answer.statusCode, error: answer.error }, 'webhook test event sent');
  return {
    id: crypto.randomUUID(),
    commandId: PING_COMMAND_ID,
    endpointId: endpoint.id,
    endpointUrl: endpoint.url,
    eventType: PING,
    attempt: 1,
    statusCode: answer.statusCode ?? 0,
    response: answer.response,
    error: answer.error ?? (ok ? null : describeAnswer(answer.statusCode, answer.location)),
    durationMs: answer.durationMs,
    attemptedAt: now.toISOString(),
    deliveryId: id,
  };
}

function describeAnswer(statusCode: number | undefined, location: string | undefined): string {
  if (statusCode === undefined) return 'no HTTP answer';
  if (statusCode >= 300 && statusCode < 400) return `redirect not followed${location ? ` (Location: ${location})` : ''}`;
  return `receiver answered ${statusCode}`;
}
