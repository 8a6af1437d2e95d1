import type { DatasetRow } from '../../db/schema.ts';
import type { AppContext } from '../../platform/context.ts';
import type { Sample } from '../series/lttb.ts';
import { sessionShift } from '../narrow/alignment.ts';
import { loadMessageTables, type MessageTable, type SignalColumn } from '../narrow/message-tables.ts';
import { messageTableTail } from '../narrow/query.ts';
import { loadBootSessions } from '../narrow/session-store.ts';
import { wideTableTail } from '../wide/query.ts';
import type { WideColumnInfo } from '../wide/wide-batch.ts';

/** A followed channel, resolved: a wide column, or a narrow signal's message and column. */
export type FeedChannel = { id: string; wide: WideColumnInfo } | { id: string; msgid: number; column: SignalColumn };

/** What one read of the feed found for a subscriber: new samples per channel id, and the head they reach. */
export interface FeedRows {
  series: Map<string, Sample[]>;
  /** The newest sample time the read saw (any followed channel), µs; undefined when it saw none. */
  head: number | undefined;
}

export interface FeedSubscriber {
  readonly channels: readonly FeedChannel[];
  rows(rows: FeedRows): void;
}

/** Rows per statement; a read that fills it reads again at once (a backlog arriving after a link loss). */
const TAIL_LIMIT = 20_000;

/**
 * Reads of one feed start at least this many ms apart; what is announced meanwhile is read by the next.
 * Each read is a statement and an update to every follower, whose cost is mostly per update, not per
 * sample (encoding, the stream's write: bench:live, docs/PERFORMANCE.md "Live"). A dataset committed
 * 50 times a second is read 20 times a second, so a batch waits at most this long; one committed less
 * often is read as soon as it is announced.
 */
export const READ_INTERVAL_MS = 50;

/**
 * One dataset's new rows, read once per replica for every follower of it: on each telemetry
 * announcement (from any replica, live-bus.ts) the feed reads the rows committed since its cursor, for
 * the union of the channels its subscribers follow, and hands each subscriber its channels' samples.
 * Announcements that arrive while a read runs (or waits its turn: reads start READ_INTERVAL_MS apart)
 * make one more read after it, never a queue of them. So the storage cost of following grows with the
 * datasets followed, not with the followers, and a follower gets its telemetry in at most one update per read.
 *
 * Cursors: a wide table is read by time (its key), after the newest time read; narrow message tables
 * by frame_seq (their key, the agent's per-dataset sequence), after the newest sequence read, per
 * table. A table read for the first time starts at its current last row: what came before is the
 * subscriber's snapshot (follow.ts), read after it subscribed, so nothing falls between the two.
 */
export class DatasetFeed {
  readonly dataset: DatasetRow;
  readonly #ctx: AppContext;
  readonly #subscribers = new Set<FeedSubscriber>();
  readonly #stopBus: () => void;
  #wideCursor: number | undefined;
  readonly #seqCursors = new Map<string, string>();
  #tables: Map<number, MessageTable> | undefined;
  /** Followed messages that had no table at the last look: when one appears, all of it is new. */
  readonly #tableless = new Set<number>();
  #reading: Promise<void> | undefined;
  #again = false;
  /** performance.now() when the last read started. */
  #readAt = Number.NEGATIVE_INFINITY;
  #closed = false;

  constructor(ctx: AppContext, dataset: DatasetRow) {
    this.#ctx = ctx;
    this.dataset = dataset;
    this.#stopBus = ctx.live.follow(dataset.id, (change) => {
      if (change === 'telemetry') this.poke();
    });
  }

  get size(): number {
    return this.#subscribers.size;
  }

  /** Add a subscriber; resolves once the feed's cursors for its channels are set (its snapshot may be read then). */
  async subscribe(subscriber: FeedSubscriber): Promise<void> {
    // Cursors are placed inside the read loop, so a placement never races a read moving them.
    this.#subscribers.add(subscriber);
    await this.#run();
  }

  unsubscribe(subscriber: FeedSubscriber): void {
    this.#subscribers.delete(subscriber);
  }

  /** Read what is new (an announcement came). */
  poke(): void {
    void this.#run().catch((err) => this.#ctx.logger.warn({ err, datasetId: this.dataset.id }, 'live feed read failed; the next announcement reads again'));
  }

  close(): void {
    this.#closed = true;
    this.#stopBus();
    this.#subscribers.clear();
  }

  /** One read at a time, READ_INTERVAL_MS apart; a request during a read (or the wait before it) makes one more read after it. */
  #run(): Promise<void> {
    if (this.#reading) {
      this.#again = true;
      return this.#reading;
    }
    this.#reading = (async () => {
      try {
        do {
          const early = this.#readAt + READ_INTERVAL_MS - performance.now();
          if (early > 0) await new Promise((resolve) => setTimeout(resolve, early));
          // What was announced until now is read by this read.
          this.#again = false;
          if (this.#closed || this.#subscribers.size === 0) break;
          this.#readAt = performance.now();
          await this.#readOnce();
        } while (this.#again);
      } finally {
        this.#reading = undefined;
      }
    })();
    return this.#reading;
  }

  async #readOnce(): Promise<void> {
    const subscribers = [...this.#subscribers];
    const channels = new Map<string, FeedChannel>();
    for (const s of subscribers) for (const c of s.channels) channels.set(c.id, c);
    const found = new Map<string, Sample[]>();
    let head: number | undefined;
    if (this.dataset.storage_shape === 'wide') head = await this.#readWide([...channels.values()], found);
    else head = await this.#readNarrow([...channels.values()], found);
    for (const s of subscribers) {
      if (!this.#subscribers.has(s)) continue;
      const series = new Map<string, Sample[]>();
      for (const c of s.channels) {
        const samples = found.get(c.id);
        if (samples && samples.length > 0) series.set(c.id, samples);
      }
      s.rows({ series, head });
    }
  }

  async #readWide(channels: FeedChannel[], found: Map<string, Sample[]>): Promise<number | undefined> {
    const columns = channels.flatMap((c) => ('wide' in c ? [c.wide] : []));
    const table = this.dataset.table_name!;
    if (this.#wideCursor === undefined) {
      const [last] = await wideTableTail(this.#ctx.db, table, [], undefined, 1);
      this.#wideCursor = last?.t ?? Number.MIN_SAFE_INTEGER;
      return undefined;
    }
    const rows = await wideTableTail(this.#ctx.db, table, columns, this.#wideCursor, TAIL_LIMIT);
    if (rows.length === TAIL_LIMIT) this.#again = true;
    if (rows.length === 0) return undefined;
    const lists = columns.map(() => [] as Sample[]);
    for (const row of rows) {
      for (let i = 0; i < columns.length; i++) {
        const v = row.v[i];
        if (v !== null && v !== undefined) lists[i]!.push({ t: row.t, v });
      }
    }
    columns.forEach((c, i) => found.set(String(c.index), lists[i]!));
    this.#wideCursor = rows[rows.length - 1]!.t;
    return this.#wideCursor;
  }

  async #readNarrow(channels: FeedChannel[], found: Map<string, Sample[]>): Promise<number | undefined> {
    const byMsgid = new Map<number, Array<{ id: string; column: SignalColumn }>>();
    for (const c of channels) {
      if ('msgid' in c) {
        const list = byMsgid.get(c.msgid) ?? [];
        list.push({ id: c.id, column: c.column });
        byMsgid.set(c.msgid, list);
      }
    }
    if (byMsgid.size === 0) return undefined;
    // A followed signal whose message has no table yet gets one when its first frame arrives.
    if (!this.#tables || [...byMsgid.keys()].some((m) => !this.#tables!.has(m))) this.#tables = await loadMessageTables(this.#ctx.db, this.dataset.id);
    for (const msgid of byMsgid.keys()) {
      const table = this.#tables.get(msgid);
      if (!table) this.#tableless.add(msgid);
      else if (this.#tableless.delete(msgid) && !this.#seqCursors.has(table.table)) this.#seqCursors.set(table.table, '0');
    }
    const shifts = (await loadBootSessions(this.#ctx.db, this.dataset.id)).map(sessionShift);
    let head: number | undefined;
    for (const [msgid, signals] of byMsgid) {
      const table = this.#tables.get(msgid);
      if (!table) continue;
      const cursor = this.#seqCursors.get(table.table);
      if (cursor === undefined) {
        // First read of a table that existed when it was first followed: start after its last row
        // (subscribers read what came before in their window).
        const [last] = await messageTableTail(this.#ctx.db, table, [], shifts, undefined, 1);
        this.#seqCursors.set(table.table, last?.seq ?? '0');
        continue;
      }
      const rows = await messageTableTail(this.#ctx.db, table, signals.map((s) => s.column), shifts, cursor, TAIL_LIMIT);
      if (rows.length === TAIL_LIMIT) this.#again = true;
      if (rows.length === 0) continue;
      this.#seqCursors.set(table.table, rows[rows.length - 1]!.seq);
      const lists = signals.map(() => [] as Sample[]);
      for (const row of rows) {
        for (let i = 0; i < signals.length; i++) {
          const v = row.v[i];
          if (v !== null && v !== undefined) lists[i]!.push({ t: row.t, v });
        }
        if (head === undefined || row.t > head) head = row.t;
      }
      // Frame order is near time order; a follower draws in time order.
      signals.forEach((s, i) => found.set(s.id, lists[i]!.sort((a, b) => a.t - b.t)));
    }
    return head;
  }
}

/** Every followed dataset's feed on this replica, by dataset; a feed closes with its last subscriber. */
export class LiveFeeds {
  readonly #ctx: AppContext;
  readonly #feeds = new Map<string, DatasetFeed>();
  readonly #closing = new AbortController();

  constructor(ctx: AppContext) {
    this.#ctx = ctx;
  }

  /** Aborted when the service shuts down: every follower ends (UNAVAILABLE) so that listeners can close. */
  get closing(): AbortSignal {
    return this.#closing.signal;
  }

  async subscribe(dataset: DatasetRow, subscriber: FeedSubscriber): Promise<() => void> {
    let feed = this.#feeds.get(dataset.id);
    if (!feed) this.#feeds.set(dataset.id, (feed = new DatasetFeed(this.#ctx, dataset)));
    await feed.subscribe(subscriber);
    const own = feed;
    return () => {
      own.unsubscribe(subscriber);
      if (own.size === 0 && this.#feeds.get(dataset.id) === own) {
        own.close();
        this.#feeds.delete(dataset.id);
      }
    };
  }

  /** Feeds open (datasets followed on this replica), for metrics and tests. */
  get size(): number {
    return this.#feeds.size;
  }

  close(): void {
    this.#closing.abort();
    for (const feed of this.#feeds.values()) feed.close();
    this.#feeds.clear();
  }
}

const registry = new WeakMap<AppContext, LiveFeeds>();

/** The service's feeds (one registry per context, shared by the HTTP port's Connect routes and the gRPC port). */
export function liveFeeds(ctx: AppContext): LiveFeeds {
  let feeds = registry.get(ctx);
  if (!feeds) registry.set(ctx, (feeds = new LiveFeeds(ctx)));
  return feeds;
}
