import { generateWebhookSecret, type WebhookEndpoint } from '@sortie/contracts';
import { sql, type RawBuilder } from 'kysely';
import type { WebhookEndpointRow } from '../db/schema.ts';
import { openSecret, sealSecret } from './secret-box.ts';
import type { Executor } from '../db/executor.ts';

/**
 * Webhook endpoints: the use-cases behind /api/webhooks/* and the reads the dispatcher and the delivery
 * engine need. Secrets are sealed with the deployment key (secret-box.ts) using the endpoint id as
 * associated data; only create and rotate ever see a plaintext leave this module towards a client.
 */

/** An endpoint's latest delivery attempt: what its receiver answered last, and when. */
export interface LastAttempt {
  at: Date;
  statusCode: number | null;
  error: string | null;
  eventType: string;
}

/**
 * The spec's record. `rotatingUntil` is shown only while the window is open: after it, one secret is live.
 * `last` is the endpoint's latest delivery attempt (lastAttempts), undefined for one never attempted.
 */
export function toWebhookEndpoint(row: WebhookEndpointRow, now: Date, last?: LastAttempt): WebhookEndpoint {
  return {
    id: row.id,
    label: row.label,
    url: row.url,
    disabledAt: row.disabled_at?.toISOString() ?? null,
    disabledReason: row.disabled_reason,
    rotatingUntil: overlapOpen(row, now) ? row.rotating_until!.toISOString() : null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    limitEvents: row.limit_events,
    consecutiveFailures: row.consecutive_failures,
    lastAttempt: last ? { at: last.at.toISOString(), statusCode: last.statusCode ?? 0, error: last.error, eventType: last.eventType } : null,
  };
}

/** The latest delivery attempt of each endpoint given, by id: one probe each of the attempts' endpoint index. */
export async function lastAttempts(db: Executor, endpointIds: readonly string[]): Promise<Map<string, LastAttempt>> {
  if (endpointIds.length === 0) return new Map();
  const result = await sql<{ id: string } & LastAttemptColumns>`
    select e.id, a.last_at, a.last_status_code, a.last_error, a.last_event_type
    from unnest(${[...endpointIds]}::uuid[]) as e(id)
    cross join lateral (${lastAttemptOf(sql`e.id`)}) a`.execute(db);
  return new Map(result.rows.map((r) => [r.id, lastAttemptFrom(r)!]));
}

/**
 * The organization's endpoints that are not deleted, disabled ones included, oldest first, each with its
 * latest delivery attempt. One statement, so a failure streak and the attempt beside it are from one
 * snapshot: read apart, a delivery recorded between the two reads showed its success next to the
 * streak it had just reset.
 */
export async function listEndpointViews(db: Executor, organizationId: string): Promise<Array<{ row: WebhookEndpointRow; last?: LastAttempt }>> {
  const result = await sql<WebhookEndpointRow & LastAttemptColumns>`
    select e.*, a.last_at, a.last_status_code, a.last_error, a.last_event_type
    from webhook_endpoints e
    left join lateral (${lastAttemptOf(sql`e.id`)}) a on true
    where e.organization_id = ${organizationId} and e.deleted_at is null
    order by e.created_at, e.id`.execute(db);
  return result.rows.map(({ last_at, last_status_code, last_error, last_event_type, ...row }) => ({
    row: row as WebhookEndpointRow,
    last: lastAttemptFrom({ last_at, last_status_code, last_error, last_event_type }),
  }));
}

interface LastAttemptColumns {
  last_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  last_event_type: string | null;
}

/** An endpoint's latest attempt as one row of `LastAttemptColumns`: one probe of the attempts' endpoint index. */
function lastAttemptOf(endpointId: RawBuilder<unknown>) {
  return sql`select attempted_at as last_at, status_code as last_status_code, error as last_error, event_type as last_event_type
             from delivery_attempts where endpoint_id = ${endpointId} order by attempted_at desc limit 1`;
}

function lastAttemptFrom(r: LastAttemptColumns): LastAttempt | undefined {
  return r.last_at === null ? undefined : { at: new Date(r.last_at), statusCode: r.last_status_code, error: r.last_error, eventType: r.last_event_type! };
}

function overlapOpen(row: WebhookEndpointRow, now: Date): boolean {
  return row.previous_secret_ciphertext !== null && row.rotating_until !== null && now < row.rotating_until;
}

/** Insert an endpoint with a fresh secret. `url` must already have passed checkWebhookUrl. */
export async function createEndpoint(
  db: Executor,
  input: { organizationId: string; label: string; url: string; limitEvents?: boolean; secretKey: Uint8Array; now: Date },
): Promise<{ row: WebhookEndpointRow; secret: string }> {
  const id = crypto.randomUUID();
  const secret = generateWebhookSecret();
  const row = await db
    .insertInto('webhook_endpoints')
    .values({
      id,
      organization_id: input.organizationId,
      label: input.label,
      url: input.url,
      secret_ciphertext: sealSecret(secret, input.secretKey, id),
      limit_events: input.limitEvents ?? false,
      created_at: input.now,
      updated_at: input.now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { row, secret };
}

/**
 * Replace the current secret with a fresh one. With an overlap the current secret becomes the previous
 * one until now + overlap; whatever was previous before is dropped, so a second rotation inside an open
 * window leaves exactly the two newest secrets. The shift happens inside one UPDATE, so two concurrent
 * rotations serialise on the row lock and neither loses the other's secret shift.
 *
 * Returns undefined when the endpoint does not exist, is deleted, or belongs to another organization.
 * A disabled endpoint may be rotated (e.g. after a leak); rotating does not re-enable it.
 */
export async function rotateEndpointSecret(
  db: Executor,
  input: { organizationId: string; id: string; overlapSeconds: number; secretKey: Uint8Array; now: Date },
): Promise<{ row: WebhookEndpointRow; secret: string } | undefined> {
  const secret = generateWebhookSecret();
  const sealed = sealSecret(secret, input.secretKey, input.id);
  const overlap = input.overlapSeconds > 0;
  const row = await db
    .updateTable('webhook_endpoints')
    .set((eb) => ({
      previous_secret_ciphertext: overlap ? eb.ref('secret_ciphertext') : null,
      rotating_until: overlap ? new Date(input.now.getTime() + input.overlapSeconds * 1000) : null,
      secret_ciphertext: sealed,
      updated_at: input.now,
    }))
    .where('id', '=', input.id)
    .where('organization_id', '=', input.organizationId)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
  return row ? { row, secret } : undefined;
}

/**
 * Change an endpoint's label or whether it receives limit events. Undefined when it does not exist, is
 * deleted, or belongs to another organization. A disabled endpoint may be changed; it stays disabled.
 */
export async function updateEndpoint(
  db: Executor,
  input: { organizationId: string; id: string; label?: string; limitEvents?: boolean; now: Date },
): Promise<WebhookEndpointRow | undefined> {
  return db
    .updateTable('webhook_endpoints')
    .set({
      ...(input.label !== undefined && { label: input.label }),
      ...(input.limitEvents !== undefined && { limit_events: input.limitEvents }),
      updated_at: input.now,
    })
    .where('id', '=', input.id)
    .where('organization_id', '=', input.organizationId)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/**
 * Soft delete: deliveries stop (the delivery engine re-reads the row and skips deleted endpoints) while
 * delivery history keeps pointing at it. False when there was nothing live to delete.
 */
export async function deleteEndpoint(db: Executor, input: { organizationId: string; id: string; now: Date }): Promise<boolean> {
  const result = await db
    .updateTable('webhook_endpoints')
    .set({ deleted_at: input.now, updated_at: input.now })
    .where('id', '=', input.id)
    .where('organization_id', '=', input.organizationId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) > 0;
}

// ---- For dispatch and the delivery engine -------------------------------------------------------

/** Endpoints a dispatch fans out to: the organization's, neither deleted nor disabled, oldest first. */
export function listEnabledEndpoints(db: Executor, organizationId: string): Promise<WebhookEndpointRow[]> {
  return db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('deleted_at', 'is', null)
    .where('disabled_at', 'is', null)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** Neither deleted nor disabled. */
export function isDeliverable(row: WebhookEndpointRow): boolean {
  return row.deleted_at === null && row.disabled_at === null;
}

/**
 * The plaintext secrets a delivery must be signed with, newest first: two while a rotation overlap is
 * open (now < rotating_until), otherwise one. Throws SecretBoxError if a stored secret cannot be opened
 * (wrong deployment key or an altered row): never sign with something else instead.
 */
export function liveSecrets(row: WebhookEndpointRow, secretKey: Uint8Array, now: Date, open: typeof openSecret = openSecret): string[] {
  const secrets = [open(row.secret_ciphertext, secretKey, row.id)];
  if (overlapOpen(row, now)) secrets.push(open(row.previous_secret_ciphertext!, secretKey, row.id));
  return secrets;
}

