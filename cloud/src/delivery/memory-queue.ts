import type { Logger } from '../platform/logger.ts';
import type { DeliveryQueue, JobHandler, QueuedJob } from './queue.ts';

/** A job the outbox says is still pending, and how long until it is due. */
export interface PendingJob extends QueuedJob {
  dueInMs: number;
}

const ERROR_RETRY_MS = 5000;

/**
 * The embedded mode's queue: timers in this process. It holds nothing the outbox does not: at start it
 * loads every pending job (with its next_attempt_at), so a restart picks up where the last run stopped.
 * Only valid with one process per database, which embedded mode (PGlite) guarantees anyway.
 */
export class MemoryDeliveryQueue implements DeliveryQueue {
  readonly kind = 'memory';
  /** No broker: the queue lives in this process and is rebuilt from the outbox at start. */
  readonly broker = undefined;
  readonly #loadPending: () => Promise<PendingJob[]>;
  readonly #logger: Logger;
  /** Every job the queue knows: waiting on a timer, ready, or running. Publishing a known one collapses. */
  readonly #known = new Map<string, { job: QueuedJob; timer?: NodeJS.Timeout; delivered: number }>();
  readonly #ready: QueuedJob[] = [];
  readonly #running = new Set<Promise<void>>();
  #handler: JobHandler | undefined;
  #concurrency = 1;
  #stopped = false;

  constructor(input: { loadPending: () => Promise<PendingJob[]>; logger: Logger }) {
    this.#loadPending = input.loadPending;
    this.#logger = input.logger;
  }

  async publish(jobs: readonly QueuedJob[]): Promise<void> {
    for (const job of jobs) if (!this.#known.has(job.jobId)) this.#schedule(job, (job.notBefore ?? 0) - Date.now());
  }

  async start(handler: JobHandler, options: { concurrency: number }): Promise<void> {
    // Read the outbox before any handler runs: a job handled and forgotten while the read was in flight
    // would otherwise come back from that older snapshot and be handed out twice.
    const pending = await this.#loadPending();
    for (const { dueInMs, ...job } of pending) {
      if (!this.#known.has(job.jobId)) this.#schedule(job, dueInMs);
    }
    this.#handler = handler;
    this.#concurrency = options.concurrency;
    this.#pump();
  }

  #schedule(job: QueuedJob, delayMs: number): void {
    if (this.#stopped) return;
    const entry = this.#known.get(job.jobId) ?? { job, delivered: 0 };
    entry.timer = setTimeout(() => {
      entry.timer = undefined;
      this.#ready.push(job);
      this.#pump();
    }, Math.max(0, delayMs));
    this.#known.set(job.jobId, entry);
  }

  #pump(): void {
    const handler = this.#handler;
    if (!handler) return;
    while (!this.#stopped && this.#running.size < this.#concurrency && this.#ready.length > 0) {
      const job = this.#ready.shift()!;
      const run = this.#run(job, handler).finally(() => {
        this.#running.delete(run);
        this.#pump();
      });
      this.#running.add(run);
    }
  }

  async #run(job: QueuedJob, handler: JobHandler): Promise<void> {
    const entry = this.#known.get(job.jobId)!;
    entry.delivered += 1;
    try {
      const decision = await handler(job, { redelivered: entry.delivered > 1 });
      if (decision.kind === 'nak') this.#schedule(job, decision.delayMs);
      else this.#known.delete(job.jobId);
    } catch (error) {
      this.#logger.error({ err: error, jobId: job.jobId }, 'delivery handler failed; retrying later');
      this.#schedule(job, ERROR_RETRY_MS);
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const entry of this.#known.values()) clearTimeout(entry.timer);
    await Promise.all(this.#running);
    this.#known.clear();
    this.#ready.length = 0;
  }

  async pending(): Promise<number> {
    return this.#known.size;
  }
}
