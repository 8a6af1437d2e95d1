/**
 * The outbox port: how a capability below delivery writes delivery jobs (`delivery_jobs`, delivery's
 * table) in its own transaction and hands them on once that transaction committed. Declared here, below
 * every capability, so commands/ and limits/ can enqueue without importing delivery/; delivery implements
 * it (delivery/outbox-port.ts) and the composition root (service.ts) puts it on the context. What crosses
 * it are job ids and what delivery's own statements read, never another folder's rows.
 */
import type { RawBuilder } from 'kysely';
import type { Executor } from '../db/executor.ts';

/** A committed outbox row: its id and its organization (the delivery queue routes by organization). */
export interface OutboxJob {
  jobId: string;
  organizationId: string;
}

declare const preparedAttempt: unique symbol;
/**
 * What delivery's part of the statement that wrote a job read for its first attempt (its lease, its ack
 * token, what the attempt sends). Opaque outside delivery: only delivery makes and opens it.
 */
export type PreparedAttempt = { readonly [preparedAttempt]: true };

/**
 * A job whose first attempt the committing process makes itself, at once: the statement that wrote the
 * job also leased it and read what the attempt needs. No queue message is needed for it; if the process
 * dies first, the lease runs out and the delivery relay hands the job to the queue.
 */
export interface InlineJob extends OutboxJob {
  attempt: PreparedAttempt;
}

/**
 * Delivery's part of the dispatch statement (commands/dispatch.ts composes the statement; delivery owns
 * these parts of it). It sees the statement's CTEs `moved` (the command as queued) and `endpoints` (the
 * enabled endpoints, each numbered `n` from 1).
 */
export interface DispatchJobsPart {
  /** The CTE body `jobs`: one job per endpoint for the moved command, the first `inline` leased for an attempt at once. */
  readonly insertJobs: RawBuilder<unknown>;
  /**
   * The select list of each row of the statement, over `jobs j`, `endpoints e`, `moved c` (joined on the
   * first row only) and `armings a`: what the first attempts read.
   */
  readonly attemptColumns: RawBuilder<unknown>;
  /**
   * The statement's rows, in the order of `n`, as jobs to queue and jobs to attempt at once (the first
   * ones, as many as `ackTokens`, each carrying its token), the endpoints (for the answer) and the
   * command's dataset.
   */
  read(
    rows: readonly object[],
    ackTokens: readonly string[],
  ): { jobs: OutboxJob[]; inline: InlineJob[]; endpoints: Array<{ id: string; url: string }>; datasetId: string };
}

export interface Outbox {
  /** Delivery's part of the dispatch statement, for one dispatch at `now` with `inline` reserved slots. */
  dispatchPart(input: { organizationId: string; now: Date; inline: number }): DispatchJobsPart;
  /** One `command.dispatched` job per endpoint for a command, in the caller's transaction (dispatch's step-by-step path). */
  enqueueCommand(tx: Executor, input: { organizationId: string; commandId: string; endpointIds: readonly string[] }): Promise<OutboxJob[]>;
  /**
   * One `limit.crossing` job per event phase and endpoint, in the caller's transaction, carrying each
   * event's payload; a job already written for an event, phase and endpoint is not written again.
   */
  enqueueLimitCrossings(
    tx: Executor,
    input: { organizationId: string; endpointIds: readonly string[]; events: ReadonlyArray<{ eventId: string; phase: string; payload: string }> },
  ): Promise<OutboxJob[]>;
  /**
   * Called after the transaction that wrote `jobs` committed. Returns at once and never throws: a job
   * that cannot be published now stays unpublished in the outbox, and the delivery relay publishes it
   * later, so the caller's answer never waits on the queue. Each `inline` job takes one slot reserved
   * with reserveInline.
   */
  committed(jobs: readonly OutboxJob[], inline?: readonly InlineJob[]): void;
  /**
   * Reserve up to `wanted` slots for first attempts made inline (bounded by the delivery concurrency, so
   * a burst of dispatches falls back to the queue instead of piling up attempts); how many were granted.
   */
  reserveInline(wanted: number): number;
  /** Give back reserved slots no inline job took. */
  releaseInline(count: number): void;
}
