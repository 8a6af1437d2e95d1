import { sql, type Kysely, type Transaction } from 'kysely';
import type { CommandRow, Database, DeliveryJobState, WebhookEndpointRow } from '../db/schema.ts';
import type { PendingJob } from './memory-queue.ts';
import type { QueuedJob } from './queue.ts';

/** The delivery outbox (`delivery_jobs`): the truth the queues are driven from. */

type Executor = Kysely<Database> | Transaction<Database>;

/** Record that the queue holds these jobs, so the relay leaves them alone. */
export async function markPublished(db: Executor, jobIds: readonly string[], now: Date): Promise<void> {
  if (jobIds.length === 0) return;
  await db.updateTable('delivery_jobs').set({ published_at: now }).where('id', 'in', jobIds).where('published_at', 'is', null).execute();
}

/**
 * Jobs committed but never confirmed published (the process died between commit and publish, or the
 * queue was unreachable), older than `graceMs` by the database's clock so a dispatch still publishing
 * its own jobs is not raced. Oldest first.
 */
export async function listUnpublished(db: Executor, input: { graceMs: number; limit: number }): Promise<QueuedJob[]> {
  const rows = await db
    .selectFrom('delivery_jobs')
    .select(['id', 'organization_id'])
    .where('published_at', 'is', null)
    .where('state', '=', 'pending')
    .where('created_at', '<', sql<Date>`now() - make_interval(secs => ${input.graceMs / 1000})`)
    .orderBy('created_at')
    .limit(input.limit)
    .execute();
  return rows.map((r) => ({ jobId: r.id, organizationId: r.organization_id }));
}

/** Every pending job and when it is due, for the in-process queue to rebuild itself at start. */
export async function loadPendingJobs(db: Executor, now: Date): Promise<PendingJob[]> {
  const rows = await db
    .selectFrom('delivery_jobs')
    .select(['id', 'organization_id', 'next_attempt_at'])
    .where('state', '=', 'pending')
    .orderBy('created_at')
    .execute();
  return rows.map((r) => ({
    jobId: r.id,
    organizationId: r.organization_id,
    dueInMs: r.next_attempt_at ? Math.max(0, r.next_attempt_at.getTime() - now.getTime()) : 0,
  }));
}

export async function readJobState(db: Executor, jobId: string) {
  return db.selectFrom('delivery_jobs').select(['state', 'leased_until']).where('id', '=', jobId).executeTakeFirst();
}

/** Close a job for good. */
export async function finishJob(db: Executor, input: { jobId: string; state: Exclude<DeliveryJobState, 'pending'>; reason: string; now: Date }) {
  await db
    .updateTable('delivery_jobs')
    .set({ state: input.state, finish_reason: input.reason, finished_at: input.now, leased_until: null, next_attempt_at: null })
    .where('id', '=', input.jobId)
    .execute();
}

/** What one attempt needs, read in the statement that takes the lease. */
export interface LoadedJob {
  job: { id: string; organization_id: string; command_id: string; endpoint_id: string; attempts: number };
  command: CommandRow | undefined;
  endpoint: WebhookEndpointRow | undefined;
  arming: { expires_at: Date; disarmed_at: Date | null } | undefined;
  /** Whether the ack token hash passed in was stored (the command was queued and before its deadline). */
  tokenMinted: boolean;
}

/**
 * Lease the job, read its command, endpoint and arming, and store the hash of the ack token this
 * attempt will carry — one round trip on the hot path. The token is minted only for a command still
 * queued and before its deadline; if the attempt then does not happen (endpoint gone, disarmed) the
 * unused hash simply expires with the deadline.
 */
export async function leaseAndLoad(
  db: Executor,
  input: { jobId: string; now: Date; leaseMs: number; tokenHash: string },
): Promise<LoadedJob | undefined> {
  const leaseUntil = new Date(input.now.getTime() + input.leaseMs);
  const { rows } = await sql<Record<string, any>>`
    with leased as (
      update delivery_jobs set leased_until = ${leaseUntil}
      where id = ${input.jobId} and state = 'pending' and (leased_until is null or leased_until < ${input.now})
      returning id, organization_id, command_id, endpoint_id, attempts
    ),
    minted as (
      insert into ack_tokens (token_hash, command_id, expires_at)
      select ${input.tokenHash}, c.id, c.ack_deadline_at
      from leased l join commands c on c.id = l.command_id
      where c.status = 'queued' and c.ack_deadline_at > ${input.now}
      returning 1
    )
    select
      l.id as job_id, l.organization_id as job_organization_id, l.command_id as job_command_id,
      l.endpoint_id as job_endpoint_id, l.attempts as job_attempts,
      (select count(*) from minted) as minted,
      c.*,
      e.id as e_id, e.organization_id as e_organization_id, e.label as e_label, e.url as e_url,
      e.secret_ciphertext as e_secret_ciphertext, e.previous_secret_ciphertext as e_previous_secret_ciphertext,
      e.rotating_until as e_rotating_until, e.disabled_at as e_disabled_at, e.disabled_reason as e_disabled_reason,
      e.consecutive_failures as e_consecutive_failures, e.deleted_at as e_deleted_at,
      e.created_at as e_created_at, e.updated_at as e_updated_at,
      a.expires_at as a_expires_at, a.disarmed_at as a_disarmed_at, a.dataset_id as a_dataset_id
    from leased l
    left join commands c on c.id = l.command_id
    left join webhook_endpoints e on e.id = l.endpoint_id
    left join armings a on a.dataset_id = c.dataset_id
  `.execute(db);
  const r = rows[0];
  if (!r) return undefined;
  const prefixed = (prefix: string) =>
    Object.fromEntries(Object.entries(r).filter(([k]) => k.startsWith(prefix)).map(([k, v]) => [k.slice(prefix.length), v]));
  const command = r.id ? (Object.fromEntries(Object.entries(r).filter(([k]) => !/^(job_|e_|a_|minted$)/.test(k))) as CommandRow) : undefined;
  return {
    job: { id: r.job_id, organization_id: r.job_organization_id, command_id: r.job_command_id, endpoint_id: r.job_endpoint_id, attempts: r.job_attempts },
    command,
    endpoint: r.e_id ? (prefixed('e_') as WebhookEndpointRow) : undefined,
    arming: r.a_dataset_id ? { expires_at: r.a_expires_at, disarmed_at: r.a_disarmed_at } : undefined,
    tokenMinted: Number(r.minted) > 0,
  };
}

export interface AttemptRecord {
  job: LoadedJob['job'];
  endpointUrl: string;
  attempt: number;
  deliveryId: string;
  eventType: string;
  statusCode: number | null;
  response: string;
  error: string | null;
  durationMs: number;
  attemptedAt: Date;
  success: boolean;
  /** The job's next state: finished (with why), or pending until `nextAttemptAt`. */
  next: { state: 'delivered' | 'failed' | 'abandoned'; reason: string; at: Date } | { state: 'pending'; nextAttemptAt: Date };
}

/**
 * Everything an attempt changes, in one statement (so it is also atomic): the attempt row, the job, the
 * command's counters and the endpoint's failure streak. Returns the streak after this attempt.
 */
export async function recordAttempt(db: Executor, a: AttemptRecord): Promise<{ consecutiveFailures: number; disabled: boolean }> {
  const finished = a.next.state !== 'pending';
  const { rows } = await sql<{ consecutive_failures: number; disabled: boolean }>`
    with attempt as (
      insert into delivery_attempts
        (id, organization_id, job_id, command_id, endpoint_id, endpoint_url, event_type, attempt, status_code,
         response, error, duration_ms, attempted_at, delivery_id)
      values (${crypto.randomUUID()}, ${a.job.organization_id}, ${a.job.id}, ${a.job.command_id}, ${a.job.endpoint_id},
        ${a.endpointUrl}, ${a.eventType}, ${a.attempt}, ${a.statusCode}, ${a.response}, ${a.error}, ${a.durationMs},
        ${a.attemptedAt}, ${a.deliveryId})
    ),
    job as (
      update delivery_jobs set
        attempts = ${a.attempt},
        leased_until = null,
        state = ${a.next.state},
        finish_reason = ${finished ? (a.next as { reason: string }).reason : null},
        finished_at = ${finished ? (a.next as { at: Date }).at : null},
        next_attempt_at = ${finished ? null : (a.next as { nextAttemptAt: Date }).nextAttemptAt}
      where id = ${a.job.id}
    ),
    cmd as (
      update commands set
        delivery_attempts = delivery_attempts + 1,
        delivered_at = case when ${a.success} then coalesce(delivered_at, ${a.attemptedAt}) else delivered_at end
      where id = ${a.job.command_id}
    )
    update webhook_endpoints set
      consecutive_failures = case when ${a.success} then 0 else consecutive_failures + 1 end
    where id = ${a.job.endpoint_id}
    returning consecutive_failures, disabled_at is not null as disabled
  `.execute(db);
  const r = rows[0];
  return { consecutiveFailures: r?.consecutive_failures ?? 0, disabled: r?.disabled ?? false };
}
