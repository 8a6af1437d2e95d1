/**
 * The outbox port: how a capability that wrote delivery jobs (`delivery_jobs`) in its transaction hands
 * them on once that transaction committed. Declared here, below every capability, so commands/ can
 * trigger delivery without importing delivery/; the composition root (service.ts) connects it to the
 * delivery engine.
 */
import type { CommandRow, WebhookEndpointRow } from '../db/schema.ts';

/** A committed outbox row: its id and its organization (the delivery queue routes by organization). */
export interface OutboxJob {
  jobId: string;
  organizationId: string;
}

/**
 * A job whose first attempt the committing process makes itself, at once: the statement that wrote the
 * job also leased it (until `leasedUntil`), stored the hash of `ackToken` and read what the attempt
 * needs. No queue message is needed for it; if the process dies first, the lease runs out and the
 * delivery relay hands the job to the queue.
 */
export interface InlineJob extends OutboxJob {
  ackToken: string;
  leasedUntil: Date;
  command: CommandRow;
  endpoint: WebhookEndpointRow;
  armingExpiresAt: Date;
}

export interface Outbox {
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
