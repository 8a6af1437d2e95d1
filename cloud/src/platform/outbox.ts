/**
 * The outbox port: how a capability that wrote delivery jobs (`delivery_jobs`) in its transaction hands
 * them on once that transaction committed. Declared here, below every capability, so commands/ can
 * trigger delivery without importing delivery/; the composition root (service.ts) connects it to the
 * delivery engine.
 */

/** A committed outbox row: its id and its organization (the delivery queue routes by organization). */
export interface OutboxJob {
  jobId: string;
  organizationId: string;
}

export interface Outbox {
  /**
   * Called after the transaction that wrote `jobs` committed. Returns at once and never throws: a job
   * that cannot be published now stays unpublished in the outbox, and the delivery relay publishes it
   * later, so the caller's answer never waits on the queue.
   */
  committed(jobs: readonly OutboxJob[]): void;
}
