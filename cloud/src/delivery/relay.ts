import type { Db } from '../db/connect.ts';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import { listUnpublished, markPublished } from './jobs.ts';
import type { DeliveryQueue } from './queue.ts';

export interface RelayOptions {
  /** How often it looks while it finds work (or cannot publish). */
  intervalMs: number;
  /** How often at most it looks while every look finds nothing: the wait doubles up to this. */
  idleIntervalMs?: number;
  /** Leave jobs younger than this to the dispatch that is publishing them right now. */
  graceMs: number;
  batch: number;
}

/**
 * Idle, a process looks every 5 s (one probe of an almost empty partial index); a job left behind by a
 * process that died is published within its lease (5 s) plus that.
 */
export const DEFAULT_RELAY: RelayOptions = { intervalMs: 1000, idleIntervalMs: 5000, graceMs: 2000, batch: 500 };

/**
 * Publishes outbox rows that were committed but never confirmed published: the process died between
 * commit and publish, or NATS was down at that moment. Every cloud process runs one; two relays
 * publishing the same job collapse on its Nats-Msg-Id, and a worker finding a job already finished
 * just acks it, so racing is harmless.
 */
export async function relayOnce(input: { db: Db; queue: DeliveryQueue; clock: Clock; options: RelayOptions }): Promise<number> {
  let total = 0;
  for (;;) {
    const jobs = await listUnpublished(input.db, { graceMs: input.options.graceMs, limit: input.options.batch, now: input.clock.now() });
    if (jobs.length === 0) return total;
    await input.queue.publish(jobs);
    await markPublished(
      input.db,
      jobs.map((j) => j.jobId),
      input.clock.now(),
    );
    total += jobs.length;
    if (jobs.length < input.options.batch) return total;
  }
}

export function startRelay(input: { db: Db; queue: DeliveryQueue; clock: Clock; logger: Logger; options?: RelayOptions }): {
  stop(): Promise<void>;
  /** Look again soon: this process could not publish something (the relay's to publish now). */
  nudge(): void;
} {
  const options = input.options ?? DEFAULT_RELAY;
  const idleMax = Math.max(options.intervalMs, options.idleIntervalMs ?? options.intervalMs);
  let running: Promise<void> | undefined;
  let failing = false;
  let stopped = false;
  let wait = options.intervalMs;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const schedule = (ms: number) => {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(tick, ms);
    timer.unref();
  };
  const tick = () => {
    if (running) return; // the previous round is still going (slow database, NATS down)
    running = relayOnce({ ...input, options })
      .then((count) => {
        if (count > 0) input.logger.info({ count }, 'relay published jobs missed at dispatch');
        if (failing) input.logger.info('relay publishing again');
        failing = false;
        // Nothing found: look less often, up to idleMax; something found: keep looking each interval.
        wait = count > 0 ? options.intervalMs : Math.min(idleMax, wait * 2);
      })
      .catch((err) => {
        // Logged once per outage, not once a second.
        if (!failing) input.logger.warn({ err }, 'relay cannot publish yet; will keep trying');
        failing = true;
        wait = options.intervalMs;
      })
      .finally(() => {
        running = undefined;
        schedule(wait);
      });
  };
  tick();
  return {
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
    nudge: () => {
      wait = options.intervalMs;
      if (!running) schedule(options.intervalMs);
    },
  };
}
