import { sql } from 'kysely';
import type { ArmingRow, CommandRow, DeliveryJobRow, DeliveryJobState, WebhookEndpointRow } from '../db/schema.ts';
import type { PendingJob } from './memory-queue.ts';
import type { QueuedJob } from './queue.ts';
import type { Executor } from '../db/executor.ts';
import { runHot, type HotTarget } from '../db/prepared.ts';
import { recordDeliveryAttempts } from '../commands/attempt-counters.ts';
import { updateFailureStreaks } from '../webhooks/failure-streak.ts';
import { COMMAND_COLUMNS, ENDPOINT_COLUMNS, PREFIXED_COLUMNS, unprefix, type Prefixed } from './attempt-columns.ts';

/** The delivery outbox (`delivery_jobs`): the truth the queues are driven from. */

/**
 * Record that the queue holds these jobs, so the relay leaves them alone. Rows locked right now are
 * skipped, not waited for: the lock is a worker's lease, which sets published_at itself. Waiting instead
 * deadlocked with lease batches that lock the same rows in another order (Postgres broke the cycle after
 * its 1 s deadlock_timeout, which showed as 1 s delivery stalls).
 */
export async function markPublished(db: Executor, jobIds: readonly string[], now: Date): Promise<void> {
  if (jobIds.length === 0) return;
  await sql`
    update delivery_jobs set published_at = ${now}
    where id in (
      select id from delivery_jobs
      where id = any(${[...jobIds]}::uuid[]) and published_at is null
      order by id
      for update skip locked
    )
  `.execute(db);
}

/**
 * After the queue lost every message (NATS came back without its storage): pending jobs count as never
 * published again, so the relay publishes them anew. A job leased right now keeps its lease; a second
 * message for it finds the lease and waits its turn. Returns how many jobs went back to the relay.
 */
export async function markAllPendingUnpublished(db: Executor): Promise<number> {
  const result = await sql`update delivery_jobs set published_at = null where state = 'pending' and published_at is not null`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

/**
 * Jobs committed but never confirmed published (the process died between commit and publish or before
 * its attempt at dispatch was recorded, or the queue was unreachable), older than `graceMs` by the
 * database's clock so a dispatch still publishing its own jobs is not raced, and not leased. Oldest first.
 */
export async function listUnpublished(db: Executor, input: { graceMs: number; limit: number; now: Date }): Promise<QueuedJob[]> {
  const rows = await db
    .selectFrom('delivery_jobs')
    .select(['id', 'organization_id'])
    .where('published_at', 'is', null)
    .where('state', '=', 'pending')
    .where('created_at', '<', sql<Date>`now() - make_interval(secs => ${input.graceMs / 1000})`)
    // A job leased at dispatch is being attempted by the dispatching process; if that process died,
    // its lease runs out (seconds) and the job is the relay's from then.
    .where((eb) => eb.or([eb('leased_until', 'is', null), eb('leased_until', '<', input.now)]))
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
 * The outbox backlog (metrics): jobs not finished, and how long the oldest job that is due and not
 * leased has been waiting for a worker, in seconds (0 when none is), by the database's clock.
 */
export async function outboxBacklog(db: Executor): Promise<{ pending: number; lagSeconds: number }> {
  const { rows } = await sql<{ pending: number; lag: number | null }>`
    select count(*)::int as pending,
      extract(epoch from now() - min(coalesce(next_attempt_at, created_at))
        filter (where coalesce(next_attempt_at, created_at) <= now() and (leased_until is null or leased_until < now())))::float8 as lag
    from delivery_jobs where state = 'pending'
  `.execute(db);
  return { pending: rows[0]?.pending ?? 0, lagSeconds: Math.max(0, rows[0]?.lag ?? 0) };
}

export async function readJobState(db: Executor, jobId: string) {
  return db.selectFrom('delivery_jobs').select(['state', 'leased_until']).where('id', '=', jobId).executeTakeFirst();
}

/** Lengthen a lease this process holds (`from` is its end as taken), for an attempt still running. */
export async function extendLease(db: Executor, input: { jobId: string; from: Date; until: Date }): Promise<void> {
  await db
    .updateTable('delivery_jobs')
    .set({ leased_until: input.until })
    .where('id', '=', input.jobId)
    .where('state', '=', 'pending')
    .where('leased_until', '=', input.from)
    .execute();
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
  /** A limit notification (`event_type` limit.crossing) carries its body's event in `payload` and no command. */
  job: Pick<DeliveryJobRow, 'id' | 'organization_id' | 'command_id' | 'endpoint_id' | 'attempts' | 'event_type' | 'payload' | 'created_at'>;
  command: CommandRow | undefined;
  endpoint: WebhookEndpointRow | undefined;
  arming: Pick<ArmingRow, 'expires_at' | 'disarmed_at'> | undefined;
}

/** The whole rows the lease reads, by table (jobs.test.ts compares them with the migrated tables). */
export const LEASE_ROW_COLUMNS = { commands: COMMAND_COLUMNS, webhook_endpoints: ENDPOINT_COLUMNS } as const;

/** One row of the lease statement, as its select list names the columns. */
type LeaseRow = { [K in keyof LoadedJob['job'] as `job_${K}`]: LoadedJob['job'][K] } & {
  a_expires_at: Date | null;
  a_disarmed_at: Date | null;
} & Prefixed<CommandRow, 'c_'> &
  Prefixed<WebhookEndpointRow, 'e_'>;

/**
 * Lease jobs and read each one's command, endpoint and arming: one statement for a whole batch (see
 * micro-batcher.ts). Jobs not leased (finished, or leased by another worker) come back undefined.
 */
export async function leaseAndLoadMany(
  db: Executor | HotTarget,
  input: { now: Date; leaseMs: number; jobIds: readonly string[] },
): Promise<Array<LoadedJob | undefined>> {
  const leaseUntil = new Date(input.now.getTime() + input.leaseMs);
  const rows = await runHot(hot(db), 'sortie_lease_jobs', sql<LeaseRow>`
    with leased as (
      -- Joined to the ids rather than \`id = any(ids)\`: a nested loop of key lookups, where \`any\` made a
      -- bitmap scan that, with statistics from when the table was small, also read the whole pending index.
      update delivery_jobs j set leased_until = ${leaseUntil}, published_at = coalesce(j.published_at, ${input.now})
      from unnest(${[...input.jobIds]}::uuid[]) as i(id)
      where j.id = i.id and j.state = 'pending' and (j.leased_until is null or j.leased_until < ${input.now})
      returning j.id, j.organization_id, j.command_id, j.endpoint_id, j.attempts, j.event_type, j.payload, j.created_at
    ),
    -- Each command and endpoint (and the command's arming) on the first of its jobs' rows only: a batch
    -- holds a few commands fanned out to a few endpoints, and these are most of a row's columns.
    numbered as (
      select l.*,
        row_number() over (partition by l.command_id) as command_n,
        row_number() over (partition by l.endpoint_id) as endpoint_n
      from leased l
    )
    select
      l.id as job_id, l.organization_id as job_organization_id, l.command_id as job_command_id,
      l.endpoint_id as job_endpoint_id, l.attempts as job_attempts, l.event_type as job_event_type,
      l.payload as job_payload, l.created_at as job_created_at,
      ${PREFIXED_COLUMNS},
      a.expires_at as a_expires_at, a.disarmed_at as a_disarmed_at
    from numbered l
    left join commands c on c.id = l.command_id and l.command_n = 1
    left join webhook_endpoints e on e.id = l.endpoint_id and l.endpoint_n = 1
    left join armings a on a.dataset_id = c.dataset_id
  `);
  // A row that carries its command or endpoint stands for every job of the batch that shares it.
  const commands = new Map<string, { command: CommandRow; arming: LoadedJob['arming'] }>();
  const endpoints = new Map<string, WebhookEndpointRow>();
  for (const r of rows) {
    if (r.c_id !== null) {
      commands.set(r.c_id, {
        command: unprefix<CommandRow>(r, 'c_', COMMAND_COLUMNS),
        // expires_at is NOT NULL, so it is null only when the left join found no arming.
        arming: r.a_expires_at === null ? undefined : { expires_at: r.a_expires_at, disarmed_at: r.a_disarmed_at },
      });
    }
    if (r.e_id !== null) endpoints.set(r.e_id, unprefix<WebhookEndpointRow>(r, 'e_', ENDPOINT_COLUMNS));
  }
  const byJob = new Map(rows.map((r) => [r.job_id, toLoadedJob(r, r.job_command_id === null ? undefined : commands.get(r.job_command_id), endpoints.get(r.job_endpoint_id))]));
  // A job twice in one batch (a duplicate message) is leased once: only its first caller gets it.
  const handedOut = new Set<string>();
  return input.jobIds.map((jobId) => {
    if (handedOut.has(jobId)) return undefined;
    handedOut.add(jobId);
    return byJob.get(jobId);
  });
}

function toLoadedJob(
  r: LeaseRow,
  command: { command: CommandRow; arming: LoadedJob['arming'] } | undefined,
  endpoint: WebhookEndpointRow | undefined,
): LoadedJob {
  return {
    job: {
      id: r.job_id,
      organization_id: r.job_organization_id,
      command_id: r.job_command_id,
      endpoint_id: r.job_endpoint_id,
      attempts: r.job_attempts,
      event_type: r.job_event_type,
      payload: r.job_payload,
      created_at: r.job_created_at,
    },
    command: command?.command,
    endpoint,
    arming: command?.arming,
  };
}

export interface AttemptRecord {
  job: Pick<LoadedJob['job'], 'id' | 'organization_id' | 'command_id' | 'endpoint_id' | 'attempts'>;
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
 * Everything a batch of attempts changes, in one statement (so also atomically): the attempt rows, the
 * jobs, the commands' counters (commands/attempt-counters.ts) and the endpoints' failure streaks
 * (webhooks/failure-streak.ts). Several attempts of one batch may
 * share a command (fan-out) or an endpoint, and a row can change only once per statement, so those are
 * folded first: per command the number of attempts and the earliest success; per endpoint whether a
 * success reset the streak and how many failures came after the last success (in attempt order).
 * Returns, per attempt, its endpoint's streak afterwards.
 */
export async function recordAttempts(db: Executor | HotTarget, attempts: readonly AttemptRecord[]): Promise<Array<{ consecutiveFailures: number; disabled: boolean }>> {
  const commands = new Map<string, { n: number; deliveredAt: Date | null }>();
  const endpoints = new Map<string, { reset: boolean; add: number }>();
  for (const a of [...attempts].sort((x, y) => x.attemptedAt.getTime() - y.attemptedAt.getTime())) {
    // A limit notification has no command to count on; its endpoint's streak counts all the same.
    if (a.job.command_id !== null) {
      const c = commands.get(a.job.command_id) ?? { n: 0, deliveredAt: null };
      c.n += 1;
      if (a.success && (c.deliveredAt === null || a.attemptedAt < c.deliveredAt)) c.deliveredAt = a.attemptedAt;
      commands.set(a.job.command_id, c);
    }
    const e = endpoints.get(a.job.endpoint_id) ?? { reset: false, add: 0 };
    if (a.success) {
      e.reset = true;
      e.add = 0;
    } else e.add += 1;
    endpoints.set(a.job.endpoint_id, e);
  }
  const col = <T>(f: (a: AttemptRecord) => T) => attempts.map(f);
  const finished = (a: AttemptRecord) => (a.next.state === 'pending' ? undefined : a.next);
  const rows = await runHot(hot(db), 'sortie_record_attempts', sql<{ id: string; consecutive_failures: number; disabled: boolean }>`
    with inserted as (
      insert into delivery_attempts
        (id, organization_id, job_id, command_id, endpoint_id, endpoint_url, event_type, attempt, status_code,
         response, error, duration_ms, attempted_at, delivery_id)
      -- Committed without waiting for the WAL flush: a PostgreSQL crash may lose the last fraction of a
      -- second of attempt records, and those jobs are attempted again once their leases run out
      -- (at-least-once); no command and no outbox row is ever at stake here.
      select t.* from unnest(
        ${col(() => crypto.randomUUID())}::uuid[], ${col((a) => a.job.organization_id)}::uuid[], ${col((a) => a.job.id)}::uuid[],
        ${col((a) => a.job.command_id)}::uuid[], ${col((a) => a.job.endpoint_id)}::uuid[], ${col((a) => a.endpointUrl)}::text[],
        ${col((a) => a.eventType)}::text[], ${col((a) => a.attempt)}::int[], ${col((a) => a.statusCode)}::int[],
        ${col((a) => a.response)}::text[], ${col((a) => a.error)}::text[], ${col((a) => a.durationMs)}::int[],
        ${col((a) => a.attemptedAt.toISOString())}::timestamptz[], ${col((a) => a.deliveryId)}::text[]) as t
      where set_config('synchronous_commit', 'off', true) is not null
    ),
    jobs as (
      update delivery_jobs d set
        attempts = u.attempts, leased_until = null, state = u.state, finish_reason = u.reason,
        finished_at = u.finished_at, next_attempt_at = u.next_at,
        -- A job attempted at dispatch was never published; finished, it leaves the relay's index. One
        -- still pending is published by the engine next (the relay, should the process die first).
        published_at = case when u.state = 'pending' then d.published_at else coalesce(d.published_at, u.finished_at) end
      from unnest(
        ${col((a) => a.job.id)}::uuid[], ${col((a) => a.attempt)}::int[], ${col((a) => a.next.state)}::text[],
        ${col((a) => finished(a)?.reason ?? null)}::text[], ${col((a) => finished(a)?.at.toISOString() ?? null)}::timestamptz[],
        ${col((a) => (a.next.state === 'pending' ? a.next.nextAttemptAt.toISOString() : null))}::timestamptz[]
      ) as u(id, attempts, state, reason, finished_at, next_at)
      where d.id = u.id
    ),
    cmds as (${recordDeliveryAttempts(commands)}
    )
    ${updateFailureStreaks(endpoints)}
  `);
  const byEndpoint = new Map(rows.map((r) => [r.id, { consecutiveFailures: r.consecutive_failures, disabled: r.disabled }]));
  return attempts.map((a) => byEndpoint.get(a.job.endpoint_id) ?? { consecutiveFailures: 0, disabled: false });
}

/** An executor, or an executor with its pool (prepared statements, db/prepared.ts). */
function hot(target: Executor | HotTarget): HotTarget {
  return 'db' in target && 'executeQuery' in (target as HotTarget).db ? (target as HotTarget) : { db: target as Executor };
}
