import type { Transaction } from 'kysely';
import type { Database } from '../db/schema.ts';
import { notifyOwners, type Recipient } from '../notifications/notify-owners.ts';
import { disableEndpoint } from '../webhooks/failure-streak.ts';

/** The spec: "After twenty consecutive failed attempts the endpoint is auto-disabled and owners are notified." */
export const AUTO_DISABLE_AFTER_FAILURES = 20;

export type EndpointHealth =
  | { disabledNow: false }
  | {
      disabledNow: true;
      reason: string;
      recipients: Recipient[];
      organizationId: string;
      label: string;
      url: string;
      subject: string;
      message: string;
    };

/**
 * Disable an endpoint whose failure streak (kept by recordAttempts in one UPDATE, webhooks/failure-streak.ts, so concurrent attempts
 * never lose a count) reached the limit, and notify the owners in the same transaction. The disable is a
 * compare-and-set on `disabled_at is null`, so however many attempts see the limit, owners hear once.
 */
export async function disableFailingEndpoint(
  tx: Transaction<Database>,
  input: { endpointId: string; consecutiveFailures: number; now: Date },
): Promise<EndpointHealth> {
  const reason = `${input.consecutiveFailures} consecutive failed delivery attempts`;
  const disabled = await disableEndpoint(tx, { endpointId: input.endpointId, reason, now: input.now });
  if (!disabled) return { disabledNow: false };

  const subject = `Webhook endpoint "${disabled.label || disabled.url}" was disabled`;
  const message =
    `Sortie stopped delivering to ${disabled.url} after ${AUTO_DISABLE_AFTER_FAILURES} failed attempts in a row. ` +
    'See GET /api/webhooks/deliveries for what the receiver answered. To deliver again, fix the receiver, ' +
    'delete the endpoint and register it anew (a new secret is issued).';
  const recipients = await notifyOwners(
    tx,
    disabled.organization_id,
    { kind: 'webhook.endpoint_disabled', subject, message, data: { endpointId: input.endpointId, url: disabled.url, label: disabled.label, reason } },
    input.now,
  );
  return { disabledNow: true, reason, recipients, organizationId: disabled.organization_id, label: disabled.label, url: disabled.url, subject, message };
}
