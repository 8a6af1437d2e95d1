import { sql, type Kysely, type Transaction } from 'kysely';
import type { Database, DeliveryJobState } from '../db/schema.ts';
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

/**
 * Take a short lease on a pending job. Undefined when it is not pending any more or another worker holds
 * the lease (a redelivered message while the first attempt is still running).
 */
export async function leaseJob(db: Executor, jobId: string, now: Date, leaseMs: number) {
  return db
    .updateTable('delivery_jobs')
    .set({ leased_until: new Date(now.getTime() + leaseMs) })
    .where('id', '=', jobId)
    .where('state', '=', 'pending')
    .where((eb) => eb.or([eb('leased_until', 'is', null), eb('leased_until', '<', now)]))
    .returningAll()
    .executeTakeFirst();
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

/** Keep a job pending with its next attempt at `at`, and let go of the lease. */
export async function rescheduleJob(db: Executor, jobId: string, at: Date) {
  await db.updateTable('delivery_jobs').set({ next_attempt_at: at, leased_until: null }).where('id', '=', jobId).execute();
}
