import type { OutboxJob } from '../platform/outbox.ts';

/**
 * The delivery queue: carries "attempt this job now" messages between dispatch and the workers.
 * Postgres (`delivery_jobs`) is the truth; a queue only says *when* to look at a job, so losing or
 * repeating a message costs at most a late or a redundant look, never a command.
 *
 * Two implementations behind one interface, checked by one contract suite (queue-contract.test.ts):
 * - JetStream (nats-queue.ts) when SORTIE_NATS_URL is set: shared by every cloud process.
 * - In-process (memory-queue.ts) for the embedded single-process mode: rebuilt from the outbox at start.
 */

/**
 * A job to look at: the outbox row id and its organization (the NATS subject carries it). The very
 * shape dispatch hands the outbox port (platform/outbox.ts), so what commits is what gets queued.
 */
export type QueuedJob = OutboxJob & {
  /**
   * Not to be attempted before this time (epoch ms, wall clock): the retry of an attempt made at
   * dispatch, which was never a queue message and so has no message to `nak(delay)`.
   */
  notBefore?: number;
};

/**
 * What the handler decided, in JetStream's vocabulary (jsmsg.ts):
 * - `ack`: done with this job (delivered, final failure, or nothing left to do). Never seen again.
 * - `nak`: look again after `delayMs` (a retry, or the job is busy elsewhere).
 * - `term`: never redeliver; for a message that cannot be understood.
 */
export type JobDecision = { kind: 'ack' } | { kind: 'nak'; delayMs: number } | { kind: 'term'; reason: string };

export const ack = (): JobDecision => ({ kind: 'ack' });
export const nak = (delayMs: number): JobDecision => ({ kind: 'nak', delayMs: Math.max(0, Math.round(delayMs)) });
export const term = (reason: string): JobDecision => ({ kind: 'term', reason });

export type JobHandler = (job: QueuedJob, delivery: { redelivered: boolean }) => Promise<JobDecision>;

export interface DeliveryQueue {
  readonly kind: 'jetstream' | 'memory';
  /**
   * The broker behind a queue shared by every cloud process (JetStream), for the engine's start-up and
   * for metrics and /readyz; undefined for the in-process queue, which has nothing outside the process.
   */
  readonly broker: QueueBroker | undefined;
  /**
   * Hand jobs to the queue. Idempotent per jobId: publishing a job again while the first message is
   * still queued collapses onto it. Resolves once the queue holds them durably (JetStream: PubAck).
   */
  publish(jobs: readonly QueuedJob[]): Promise<void>;
  /** Start calling `handler`, at most `concurrency` at a time. */
  start(handler: JobHandler, options: { concurrency: number }): Promise<void>;
  /** Stop taking new work and wait for handlers in flight. */
  stop(): Promise<void>;
  /** Jobs queued and not yet finished (for metrics and tests); -1 when unknown. */
  pending(): Promise<number>;
}

/** What the engine and the metrics need to know of the broker behind a shared queue. */
export interface QueueBroker {
  /** The names an operator looks for with the `nats` CLI (also logged at start-up). */
  readonly names: { stream: string; subjectRoot: string; consumer: string };
  /**
   * True when this start found no stream and made it: a first start, or the broker lost its storage.
   * Either way no message of any job published before exists any more (the engine hands those jobs
   * back to the relay).
   */
  readonly streamCreated: boolean;
  /** The consumer's backlog as the broker counts it: waiting to be handed out, and handed out but unacked. */
  consumerBacklog(): Promise<{ numPending: number; numAckPending: number }>;
  /** One round trip to the broker; while disconnected it waits for the reconnect (callers bound it). */
  ping(): Promise<void>;
}
