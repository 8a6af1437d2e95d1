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
  /**
   * When telemetry of `datasetId` was last announced by any replica (as this replica heard it), within
   * the last RECENT_MS; undefined otherwise. What marks a flight "live" in lists.
   */
  lastCommitted(datasetId: string): Date | undefined;
  close(): Promise<void>;
}

/** How long a dataset's last telemetry announcement is remembered (lists show it as "data N s ago"). */
export const RECENT_MS = 10 * 60_000;

/**
 * The last telemetry announcement per dataset, forgetting those older than RECENT_MS. Bounded by the
 * datasets that received telemetry in the last ten minutes, swept as it is written.
 */
class RecentCommits {
  readonly #at = new Map<string, number>();
  #swept = 0;

  note(datasetId: string, now = Date.now()): void {
    // Re-inserted so the map stays in announcement order: the sweep stops at the first recent entry.
    this.#at.delete(datasetId);
    this.#at.set(datasetId, now);
    if (now - this.#swept < 60_000) return;
    this.#swept = now;
    for (const [id, at] of this.#at) {
      if (now - at <= RECENT_MS) break;
      this.#at.delete(id);
    }
  }

  get(datasetId: string, now = Date.now()): Date | undefined {
    const at = this.#at.get(datasetId);
    return at !== undefined && now - at <= RECENT_MS ? new Date(at) : undefined;
  }
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
  readonly #recent = new RecentCommits();
  readonly #logger: Logger | undefined;

  constructor(logger?: Logger) {
    this.#logger = logger;
  }

  committed(datasetId: string, change: LiveChange = 'telemetry'): void {
    if (change === 'telemetry') this.#recent.note(datasetId);
    // After the committing code's own continuation, as a NATS round trip would be: a follower never
    // runs inside the ingest call that announced.
    queueMicrotask(() => this.#listeners.notify(datasetId, change, this.#logger));
  }

  follow(datasetId: string, listener: LiveListener): () => void {
    return this.#listeners.add(datasetId, listener).remove;
  }

  lastCommitted(datasetId: string): Date | undefined {
    return this.#recent.get(datasetId);
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
  readonly #recent = new RecentCommits();
  readonly #nc: NatsConnection;
  readonly #namespace: string;
  readonly #logger: Logger;

  private constructor(nc: NatsConnection, namespace: string, logger: Logger) {
    this.#nc = nc;
    this.#namespace = namespace;
    this.#logger = logger;
    // Every replica hears every dataset's telemetry announcements, only to know which flights are
    // live: one small message per committed batch, the cost of a list that is true on any replica.
    nc.subscribe(`${namespace}.live.dataset.*`, {
      callback: (err, msg) => {
        if (!err && msg.string() === 'telemetry') this.#recent.note(msg.subject.slice(msg.subject.lastIndexOf('.') + 1));
      },
    });
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

  lastCommitted(datasetId: string): Date | undefined {
    return this.#recent.get(datasetId);
  }

  async close(): Promise<void> {
    if (!this.#nc.isClosed()) await this.#nc.drain();
  }
}
