import type { CommandRecord } from '@sortie/contracts';
import { listCommands } from '../commands/queries.ts';
import { toCommandRecord } from '../commands/records.ts';
import { requireDataset } from '../datasets/queries.ts';
import type { CommandRow, DatasetRow, EventRow } from '../db/schema.ts';
import { eventsChangedSince, latestChangedEvents } from '../events/queries.ts';
import { ServiceError } from '../platform/errors.ts';
import type { AppContext } from '../platform/context.ts';
import type { LiveChange } from '../platform/live-bus.ts';
import { Decimator, liveFeeds, MIN_FOLLOW_BUDGET, readWindow, resolveFollowChannels, type FeedChannel, type FeedRows } from '../telemetry/follow.ts';
import type { Sample } from '../telemetry/follow.ts';
import { eventsOnSeriesTime, sampleColumnsOf, type SeriesResult } from '../telemetry/read.ts';

export const DEFAULT_WINDOW_MS = 60_000;
export const MAX_WINDOW_MS = 86_400_000;
export const DEFAULT_FOLLOW_BUDGET = 1000;
export const MAX_FOLLOW_BUDGET = 10_000;
/** Events and commands an opening follower is sent at most (the latest ones). */
const OPENING_ROWS = 1000;
/** An idle stream still sends an (empty) update this often, so proxies and clients know it is alive. */
export const KEEPALIVE_MS = 15_000;
/**
 * Events are read by `updated_at`, set by each writer's clock when its transaction ran; a transaction
 * that commits late can carry a time just before the newest one read. Reads look back this far and
 * skip what was already sent, so such an event is still sent.
 */
const EVENT_LOOKBACK_MS = 5_000;

export interface FollowInput {
  organizationId: string;
  datasetId: string;
  /** '' when not given. */
  experimentId: string;
  channelIds: readonly string[];
  /** As requested: 0 = default. */
  windowMs: number;
  /** As requested: 0 or less = default. */
  budget: number;
  /** Whether the caller may read commands (scope commands:read): command changes are sent only then. */
  commands: boolean;
}

/** One update of a Follow stream (the proto's FollowUpdate, before encoding). */
export interface FollowMessage {
  reset: boolean;
  /** Per followed channel, in request order: samples since the previous update (the window's, on reset). */
  series: SeriesResult[];
  head: number | undefined;
  events: EventRow[];
  commands: CommandRecord[];
  /** Increments dropped since the stream began because the follower read too slowly. */
  dropped: number;
}

/** The request's window and budget, defaults applied; a window out of range is the caller's error. */
export function followLimits(input: Pick<FollowInput, 'windowMs' | 'budget'>): { windowUs: number; budget: number } {
  const windowMs = input.windowMs === 0 ? DEFAULT_WINDOW_MS : input.windowMs;
  if (!Number.isInteger(windowMs) || windowMs < 1000 || windowMs > MAX_WINDOW_MS) {
    throw new ServiceError('invalid_request', `window_ms must be between 1000 and ${MAX_WINDOW_MS} (one day), or 0 for ${DEFAULT_WINDOW_MS}; got ${input.windowMs}`, {
      details: [{ field: 'window_ms', message: 'out of range' }],
    });
  }
  const budget = input.budget <= 0 ? DEFAULT_FOLLOW_BUDGET : Math.min(MAX_FOLLOW_BUDGET, Math.max(MIN_FOLLOW_BUDGET, input.budget));
  return { windowUs: windowMs * 1000, budget };
}

/**
 * A live follower of one dataset: the window's series from storage first, then what each committed
 * batch adds (held to the budget per window, decimator.ts), the dataset's events as they are stored or
 * change, and its commands as their status changes — one ordered stream of updates until `signal`
 * aborts or the service shuts down (then it throws ServiceError `unavailable`, UNAVAILABLE over gRPC).
 *
 * Nothing is buffered without bound for a slow reader: what the reader has not taken is merged into one
 * pending update, and once a channel's pending samples exceed a window's budget the follower drops them
 * and its next update is a reset, read afresh from storage (`dropped` counts such drops).
 */
export async function* follow(ctx: AppContext, input: FollowInput, signal: AbortSignal): AsyncGenerator<FollowMessage> {
  const { windowUs, budget } = followLimits(input);
  const dataset = await requireDataset(ctx.db, input.organizationId, input.datasetId, input.experimentId || undefined);
  const channels = await resolveFollowChannels(ctx.db, dataset, input.channelIds);
  const feeds = liveFeeds(ctx);
  const stopped = AbortSignal.any([signal, feeds.closing]);
  const follower = new Follower(ctx, dataset, channels, windowUs, budget, input.commands);
  const unsubscribe = await feeds.subscribe(dataset, follower);
  const stopBus = ctx.live.follow(dataset.id, (change) => follower.announced(change));
  try {
    yield await follower.opening();
    while (!stopped.aborted) {
      await follower.wake.wait(stopped, KEEPALIVE_MS);
      if (stopped.aborted) break;
      const update = await follower.next();
      if (update) yield update;
    }
    if (feeds.closing.aborted && !signal.aborted) throw new ServiceError('unavailable', 'the server is shutting down; follow again (another replica answers)');
  } finally {
    unsubscribe();
    stopBus();
  }
}

/** A one-shot signal that coalesces: fired any number of times between two waits, one wait returns. */
class Wake {
  #fired = false;
  #resolve: (() => void) | undefined;

  fire(): void {
    this.#fired = true;
    this.#resolve?.();
  }

  /** Until fired, `signal` aborts, or `ms` pass. */
  async wait(signal: AbortSignal, ms: number): Promise<void> {
    if (!this.#fired && !signal.aborted) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, ms);
        signal.addEventListener('abort', done, { once: true });
        this.#resolve = done;
      });
    }
    this.#resolve = undefined;
    this.#fired = false;
  }
}

/** One follower's state between updates: pending samples, what of events and commands it has sent. */
class Follower {
  readonly wake = new Wake();
  readonly channels: readonly FeedChannel[];
  readonly #ctx: AppContext;
  readonly #dataset: DatasetRow;
  readonly #windowUs: number;
  readonly #budget: number;
  readonly #commands: boolean;
  readonly #decimators: Decimator[];
  /** Per channel: samples decimated but not sent, and the raw samples they stand for. */
  #pending: Array<{ samples: Sample[]; raw: number }>;
  /** Per channel: samples at or before this time were in the opening window (or a reset's). */
  #sentUpTo: Array<number>;
  #head: number | undefined;
  #behind = false;
  #dropped = 0;
  #eventsDirty = false;
  #commandsDirty = false;
  #eventsCursor = 0;
  readonly #eventsSent = new Map<string, number>();
  readonly #commandsSent = new Map<string, string>();

  constructor(ctx: AppContext, dataset: DatasetRow, channels: readonly FeedChannel[], windowUs: number, budget: number, commands: boolean) {
    this.#ctx = ctx;
    this.#dataset = dataset;
    this.channels = channels;
    this.#windowUs = windowUs;
    this.#budget = budget;
    this.#commands = commands;
    this.#decimators = channels.map(() => new Decimator(windowUs, budget));
    this.#pending = channels.map(() => ({ samples: [], raw: 0 }));
    this.#sentUpTo = channels.map(() => Number.POSITIVE_INFINITY);
  }

  /** From the feed: new rows of the followed channels. */
  rows(rows: FeedRows): void {
    if (this.#behind) return;
    this.channels.forEach((c, i) => {
      const fresh = rows.series.get(c.id);
      const pending = this.#pending[i]!;
      const decimator = this.#decimators[i]!;
      if (fresh) {
        const after = this.#sentUpTo[i]!;
        const newer = fresh.filter((s) => s.t > after);
        pending.raw += newer.length;
        decimator.push(newer, pending.samples);
      }
      if (rows.head !== undefined) decimator.advance(rows.head, pending.samples);
      if (pending.samples.length > this.#budget) this.#behind = true;
    });
    if (rows.head !== undefined && (this.#head === undefined || rows.head > this.#head)) this.#head = rows.head;
    if (this.#behind) {
      // Too much unread: drop it, and read the window afresh when the reader is back.
      this.#pending = this.channels.map(() => ({ samples: [], raw: 0 }));
      this.#dropped++;
    }
    this.wake.fire();
  }

  announced(change: LiveChange): void {
    if (change === 'events') this.#eventsDirty = true;
    else if (change === 'commands' && this.#commands) this.#commandsDirty = true;
    else return;
    this.wake.fire();
  }

  /** The first update: the window, the latest events and every command (if the caller reads commands). */
  async opening(): Promise<FollowMessage> {
    const [window, events, commands] = await Promise.all([this.#window(), this.#openingEvents(), this.#changedCommands()]);
    return { reset: true, series: window.series, head: window.head, events, commands, dropped: 0 };
  }

  /** The next update, or undefined when nothing changed (a keepalive then goes out as an empty update). */
  async next(): Promise<FollowMessage | undefined> {
    if (this.#behind) {
      this.#behind = false;
      const window = await this.#window();
      return { reset: true, series: window.series, head: window.head, events: await this.#changedEvents(), commands: await this.#changedCommands(), dropped: this.#dropped };
    }
    const series = this.channels.map((c, i) => {
      const pending = this.#pending[i]!;
      this.#pending[i] = { samples: [], raw: 0 };
      return { channelId: c.id, samples: sampleColumnsOf(pending.samples), rawPoints: pending.raw };
    });
    const events = this.#eventsDirty ? await this.#changedEvents() : [];
    const commands = this.#commandsDirty ? await this.#changedCommands() : [];
    return { reset: false, series, head: this.#head, events, commands, dropped: this.#dropped };
  }

  async #window() {
    for (const d of this.#decimators) d.clear();
    const window = await readWindow(this.#ctx.db, this.#dataset, this.channels, this.#windowUs, this.#budget, this.#ctx.database.pool);
    // Rows the feed hands over that the window already holds are skipped (subscribe came first).
    this.#sentUpTo = this.channels.map(() => window.head ?? Number.NEGATIVE_INFINITY);
    this.#pending = this.channels.map(() => ({ samples: [], raw: 0 }));
    if (window.head !== undefined) this.#head = window.head;
    return window;
  }

  async #openingEvents(): Promise<EventRow[]> {
    const rows = await latestChangedEvents(this.#ctx.db, this.#dataset.id, OPENING_ROWS);
    return this.#noteEvents(rows);
  }

  async #changedEvents(): Promise<EventRow[]> {
    this.#eventsDirty = false;
    const rows = await eventsChangedSince(this.#ctx.db, this.#dataset.id, new Date(this.#eventsCursor - EVENT_LOOKBACK_MS), OPENING_ROWS);
    // More changed than one read returns: read on at the next wake.
    if (rows.length === OPENING_ROWS) {
      this.#eventsDirty = true;
      this.wake.fire();
    }
    return this.#noteEvents(rows.filter((r) => this.#eventsSent.get(r.id) !== r.updated_at.getTime()));
  }

  /** Remember what was sent, forget what the look-back can no longer reach; align for the series' axis. */
  async #noteEvents(rows: EventRow[]): Promise<EventRow[]> {
    for (const r of rows) {
      const at = r.updated_at.getTime();
      this.#eventsSent.set(r.id, at);
      if (at > this.#eventsCursor) this.#eventsCursor = at;
    }
    for (const [id, at] of this.#eventsSent) if (at < this.#eventsCursor - 2 * EVENT_LOOKBACK_MS) this.#eventsSent.delete(id);
    return rows.length === 0 ? rows : eventsOnSeriesTime(this.#ctx.db, this.#dataset, rows);
  }

  /** Commands whose status (or delivery or acknowledgement) changed since last sent. */
  async #changedCommands(): Promise<CommandRecord[]> {
    this.#commandsDirty = false;
    if (!this.#commands) return [];
    const rows = await listCommands(this.#ctx.db, this.#dataset.id);
    const changed: CommandRecord[] = [];
    for (const row of rows.slice(-OPENING_ROWS)) {
      const version = commandVersion(row);
      if (this.#commandsSent.get(row.id) === version) continue;
      this.#commandsSent.set(row.id, version);
      changed.push(toCommandRecord(row));
    }
    return changed;
  }
}

/** What of a command a follower shows changing: its status, delivery, acknowledgement and retraction. */
function commandVersion(row: CommandRow): string {
  return [row.status, row.status_detail, row.delivery_attempts, row.delivered_at?.getTime(), row.acked_at?.getTime(), row.retracted_at?.getTime()].join('|');
}
