import { LIMIT_CROSSING_EVENT } from '@sortie/contracts';
import { sql } from 'kysely';
import type { Executor } from '../db/executor.ts';
import type { CommandRow, WebhookEndpointRow } from '../db/schema.ts';
import type { DispatchJobsPart, InlineJob, Outbox, OutboxJob, PreparedAttempt } from '../platform/outbox.ts';
import { COMMAND_COLUMNS, ENDPOINT_COLUMNS, PREFIXED_COLUMNS, unprefix, type Prefixed } from './attempt-columns.ts';

/**
 * Delivery's side of the outbox port (platform/outbox.ts): the statements and statement parts that write
 * `delivery_jobs` in another capability's transaction. The engine (engine.ts) takes the jobs after commit.
 */

/**
 * How long the dispatch statement leases the jobs this process attempts itself. Short, so that if the
 * process dies before the attempt is recorded, the relay hands the job to the queue seconds later; the
 * delivery engine extends it for an attempt still running after INLINE_LEASE_MS − 2 s.
 */
export const INLINE_LEASE_MS = 5000;

/** A first attempt prepared by the dispatch statement: what its PreparedAttempt holds. */
export interface InlineAttempt {
  ackToken: string;
  leasedUntil: Date;
  command: CommandRow;
  endpoint: WebhookEndpointRow;
  armingExpiresAt: Date;
}

/** What an inline job's attempt holds (only delivery made it, so only delivery opens it). */
export function openAttempt(job: InlineJob): InlineAttempt {
  return job.attempt as unknown as InlineAttempt;
}

/** One row of the dispatch statement: a job, its endpoint, and on the first row (n = 1) the command as moved and its arming's expiry. */
type DispatchRow = { job_id: string; n: number; a_expires_at: Date | null } & Prefixed<CommandRow, 'c_'> & Prefixed<WebhookEndpointRow, 'e_'>;

/**
 * Delivery's part of the dispatch statement: the jobs (the first `inline` leased until INLINE_LEASE_MS
 * from `now`) and the columns each first attempt reads, the command and its arming on the first row only
 * (a fan-out to ten endpoints would otherwise send and parse the same 27 columns ten times).
 */
export function dispatchPart(input: { organizationId: string; now: Date; inline: number }): DispatchJobsPart {
  const leasedUntil = new Date(input.now.getTime() + INLINE_LEASE_MS);
  return {
    insertJobs: sql`
        insert into delivery_jobs (id, organization_id, command_id, endpoint_id, leased_until)
        select gen_random_uuid(), ${input.organizationId}, m.id, e.id, case when e.n <= ${input.inline} then ${leasedUntil}::timestamptz end
        from moved m cross join endpoints e
        returning id, endpoint_id`,
    attemptColumns: sql`j.id as job_id, e.n, ${PREFIXED_COLUMNS}, a.expires_at as a_expires_at`,
    read(statementRows, ackTokens) {
      const rows = statementRows as readonly DispatchRow[];
      const jobs: OutboxJob[] = [];
      const inline: InlineJob[] = [];
      const command = unprefix<CommandRow>(rows[0]!, 'c_', COMMAND_COLUMNS);
      const armingExpiresAt = rows[0]!.a_expires_at!;
      for (const r of rows) {
        if (r.n <= ackTokens.length) {
          const attempt: InlineAttempt = {
            ackToken: ackTokens[r.n - 1]!,
            leasedUntil,
            command,
            endpoint: unprefix<WebhookEndpointRow>(r, 'e_', ENDPOINT_COLUMNS),
            armingExpiresAt,
          };
          inline.push({ jobId: r.job_id, organizationId: input.organizationId, attempt: attempt as unknown as PreparedAttempt });
        } else jobs.push({ jobId: r.job_id, organizationId: input.organizationId });
      }
      return { jobs, inline, endpoints: rows.map((r) => ({ id: r.e_id!, url: r.e_url! })), datasetId: command.dataset_id };
    },
  };
}

/** One job per endpoint for a command, in the caller's transaction. */
export async function enqueueCommand(
  tx: Executor,
  input: { organizationId: string; commandId: string; endpointIds: readonly string[] },
): Promise<OutboxJob[]> {
  const jobs = input.endpointIds.map((endpointId) => ({ id: crypto.randomUUID(), organization_id: input.organizationId, command_id: input.commandId, endpoint_id: endpointId }));
  await tx.insertInto('delivery_jobs').values(jobs).execute();
  return jobs.map((j) => ({ jobId: j.id, organizationId: input.organizationId }));
}

/** One `limit.crossing` job per event phase and endpoint (limits/notify.ts), in the caller's transaction; one already written is skipped. */
export async function enqueueLimitCrossings(
  tx: Executor,
  input: { organizationId: string; endpointIds: readonly string[]; events: ReadonlyArray<{ eventId: string; phase: string; payload: string }> },
): Promise<OutboxJob[]> {
  const { organizationId, events } = input;
  const jobs = await sql<{ id: string }>`
    insert into delivery_jobs (id, organization_id, endpoint_id, event_type, event_id, event_phase, payload)
    select gen_random_uuid(), ${organizationId}::uuid, e.id, ${LIMIT_CROSSING_EVENT}, n.event_id, n.phase, n.payload
    from unnest(${events.map((e) => e.eventId)}::uuid[], ${events.map((e) => e.phase)}::text[], ${events.map((e) => e.payload)}::jsonb[]) as n(event_id, phase, payload)
    cross join unnest(${[...input.endpointIds]}::uuid[]) as e(id)
    on conflict (event_id, event_phase, endpoint_id) where event_id is not null do nothing
    returning id`.execute(tx);
  return jobs.rows.map((j) => ({ jobId: j.id, organizationId }));
}

/** The port's statements; service.ts adds the engine's committed, reserveInline and releaseInline. */
export const outboxStatements: Pick<Outbox, 'dispatchPart' | 'enqueueCommand' | 'enqueueLimitCrossings'> = {
  dispatchPart,
  enqueueCommand,
  enqueueLimitCrossings,
};
