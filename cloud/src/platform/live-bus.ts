import { connect, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { Logger } from './logger.ts';

/**
 * Announcements that a dataset changed: a batch of telemetry committed (any ingest path), so whoever
 * follows the dataset live reads what it added. An announcement carries the dataset and what changed, never data:
 * a follower reads what is new from storage, so a follower on any replica sees exactly what Query would,
 * and a lost or coalesced announcement delays a follower without losing anything (the next read still
 * covers everything since the last one). Two implementations:
 *  - LocalLiveBus: in-process, for the embedded default and a single replica without NATS;
 *  - NatsLiveBus: NATS core subjects `<namespace>.live.dataset.<id>`, so the replica that commits a batch
 *    reaches followers on every replica. Core NATS (no JetStream): an announcement is worth nothing
 *    once it is late, so nothing stores it.
 */
export interface LiveBus {
  /** A change of `datasetId` committed; called after the commit, never before. Never throws, never waits. */
  committed(datasetId: string, change?: LiveChange): void;
  /** Calls `listener` after each announcement of `datasetId` (from any replica) until the returned function is called. */
  follow(datasetId: string, listener: LiveListener): () => void;
  close(): Promise<void>;
}

/**
 * What changed, so a follower reads only that part: telemetry rows, the dataset's events (stored or
 * updated, LIMIT crossings included), or its commands (logged, dispatched, delivered, acknowledged,
 * timed out, retracted).
 */
export type LiveChange = 'telemetry' | 'events' | 'commands';
export type LiveListener = (change: LiveChange) => void;
const CHANGES: ReadonlySet<string> = new Set<LiveChange>(['telemetry', 'events', 'commands']);

/** Listeners by dataset, the part both buses share: one entry per followed dataset, dropped with its last listener. */
class Listeners {
  readonly #byDataset = new Map<string, Set<LiveListener>>();

  add(datasetId: string, listener: LiveListener): { first: boolean; remove: () => { last: boolean } } {
    let set = this.#byDataset.get(datasetId);
    const first = set === undefined;
    if (!set) this.#byDataset.set(datasetId, (set = new Set()));
    const entry: LiveListener = (change) => listener(change);
    set.add(entry);
    return {
      first,
      remove: () => {
        set.delete(entry);
        const last = set.size === 0 && this.#byDataset.get(datasetId) === set;
        if (last) this.#byDataset.delete(datasetId);
        return { last };
      },
    };
  }

  notify(datasetId: string, change: LiveChange, logger?: Logger): void {
    for (const listener of this.#byDataset.get(datasetId) ?? []) {
      try {
        listener(change);
      } catch (err) {
        logger?.warn({ err, datasetId }, 'live follower failed on an announcement');
      }
    }
  }
}

export class LocalLiveBus implements LiveBus {
  readonly #listeners = new Listeners();
  readonly #logger: Logger | undefined;

  constructor(logger?: Logger) {
    this.#logger = logger;
  }

  committed(datasetId: string, change: LiveChange = 'telemetry'): void {
    // After the committing code's own continuation, as a NATS round trip would be: a follower never
    // runs inside the ingest call that announced.
    queueMicrotask(() => this.#listeners.notify(datasetId, change, this.#logger));
  }

  follow(datasetId: string, listener: LiveListener): () => void {
    return this.#listeners.add(datasetId, listener).remove;
  }

  async close(): Promise<void> {}
}

/** The subject of a dataset's announcements; dataset ids are UUIDs, safe as one subject token. */
export function liveSubject(namespace: string, datasetId: string): string {
  return `${namespace}.live.dataset.${datasetId}`;
}

export class NatsLiveBus implements LiveBus {
  readonly #listeners = new Listeners();
  readonly #subscriptions = new Map<string, Subscription>();
  readonly #nc: NatsConnection;
  readonly #namespace: string;
  readonly #logger: Logger;

  private constructor(nc: NatsConnection, namespace: string, logger: Logger) {
    this.#nc = nc;
    this.#namespace = namespace;
    this.#logger = logger;
  }

  static async connect(input: { url: string; namespace: string; logger: Logger }): Promise<NatsLiveBus> {
    // Servers as the delivery queue reads them (comma-separated); reconnects for ever, like it.
    const nc = await connect({ servers: input.url.split(',').map((s) => s.trim()), name: 'sortie-live', maxReconnectAttempts: -1, reconnectTimeWait: 500 });
    return new NatsLiveBus(nc, input.namespace, input.logger);
  }

  committed(datasetId: string, change: LiveChange = 'telemetry'): void {
    try {
      // The subject says which dataset, the payload what changed. A publish while NATS is away is buffered by
      // the client up to its reconnect buffer and dropped after, which costs followers latency only.
      this.#nc.publish(liveSubject(this.#namespace, datasetId), change);
    } catch (err) {
      this.#logger.warn({ err, datasetId }, 'live announcement not published');
    }
  }

  follow(datasetId: string, listener: LiveListener): () => void {
    const added = this.#listeners.add(datasetId, listener);
    if (added.first) {
      const subscription = this.#nc.subscribe(liveSubject(this.#namespace, datasetId), {
        callback: (err, msg) => {
          if (err) this.#logger.warn({ err, datasetId }, 'live subscription error');
          else {
            // An unknown payload (a newer replica's kind) reads as "anything may have changed".
            const sent = msg.string();
            this.#listeners.notify(datasetId, (CHANGES.has(sent) ? sent : 'telemetry') as LiveChange, this.#logger);
          }
        },
      });
      this.#subscriptions.set(datasetId, subscription);
    }
    return () => {
      if (!added.remove().last) return;
      this.#subscriptions.get(datasetId)?.unsubscribe();
      this.#subscriptions.delete(datasetId);
    };
  }

  async close(): Promise<void> {
    if (!this.#nc.isClosed()) await this.#nc.drain();
  }
}
