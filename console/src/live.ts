// What a live flight view holds, without a browser: the followed window's samples as the Follow stream
// delivers them (TelemetryService.Follow: a reset with the window's series, then what each committed
// batch adds), the events and commands it reports, the LIMIT crossings among the events, and whether a
// dataset counts as live. The stream loop and the drawing live in follow.ts and the views; this module is
// what the unit tests pin down.
import type { FollowAnswer, FollowEventAnswer } from '@sortie/client';
import type { CommandRecord, TimelineEvent } from '@sortie/contracts';
import { timestampSeconds } from './format.ts';
import { indexAtOrBefore } from './geo.ts';

/** A flight whose telemetry was committed this recently (by the service's clock) is marked live. */
export const LIVE_RECENT_MS = 10_000;

/** Width of the live window (the plots' time axis while following). */
export const LIVE_WINDOW_SECONDS = 60;

// Samples come in time order, so most share their second with the one before: it is parsed once.
let lastHead = '';
let lastHeadSeconds = NaN;

/**
 * A telemetry answer's time (RFC 3339 UTC as @sortie/client gives it: `…T14:05:45.465009Z`, 0 to 9
 * fractional digits) as Unix seconds (uPlot's unit), keeping the microseconds; NaN when empty. Called
 * for every point of every Query and Follow answer, hence the cache.
 */
export function answerSeconds(text: string | null | undefined): number {
  if (!text) return NaN;
  const head = text.slice(0, 19);
  if (head !== lastHead) {
    lastHead = head;
    lastHeadSeconds = Date.parse(`${head}Z`) / 1000;
  }
  return text.charCodeAt(19) === 46 ? lastHeadSeconds + Number(`0${text.slice(19, -1)}`) : lastHeadSeconds;
}

/** Whether `lastDataAt` (the experiments list's field) is recent at `serverNowMs`, the service's clock as the page estimates it. */
export function isLive(lastDataAt: string | null | undefined, serverNowMs: number): boolean {
  if (!lastDataAt) return false;
  const at = Date.parse(lastDataAt);
  return Number.isFinite(at) && serverNowMs - at <= LIVE_RECENT_MS;
}

export interface LiveSeries {
  times: number[];
  values: number[];
}

/**
 * The samples of one Follow stream. Window channels (the plots) keep the live window, and one sample
 * before it so a line enters from the left edge; keep-all channels (the GPS track and HEARTBEAT band,
 * which show the flight so far) keep everything, and a reset replaces only the part it covers, so a
 * follower that fell behind keeps the track it had. Events and commands are kept by id as last reported;
 * `eventsSeen` and `commandsSeen` count the updates that carried some, so views merge only then.
 */
export class LiveStore {
  readonly series = new Map<string, LiveSeries>();
  readonly events = new Map<string, TimelineEvent>();
  readonly commands = new Map<string, CommandRecord>();
  /** Unix seconds of the newest sample reported (the window's right edge). */
  head: number | undefined;
  eventsSeen = 0;
  commandsSeen = 0;
  /** Increments the server dropped because this page read too slowly (each followed by a reset). */
  dropped = 0;

  readonly datasetId: string;
  /** The request's channels, in its order (the order of each update's series). */
  readonly channelIds: readonly string[];
  readonly windowSeconds: number;
  readonly keepAll: ReadonlySet<string>;

  constructor(datasetId: string, channelIds: readonly string[], windowSeconds: number, keepAll: ReadonlySet<string> = new Set()) {
    this.datasetId = datasetId;
    this.channelIds = channelIds;
    this.windowSeconds = windowSeconds;
    this.keepAll = keepAll;
    for (const id of channelIds) this.series.set(id, { times: [], values: [] });
  }

  apply(update: FollowAnswer): void {
    // Series come in request order, one per requested channel.
    update.series.forEach((s, i) => {
      const id = this.channelIds[i];
      const held = id === undefined ? undefined : this.series.get(id);
      if (!held) return;
      const first = s.points.length > 0 ? answerSeconds(s.points[0]!.timestamp) : NaN;
      if (update.reset) {
        if (!this.keepAll.has(id!)) cut(held, 0);
        else if (Number.isFinite(first)) cut(held, lowerBound(held.times, first));
      }
      for (const p of s.points) {
        const t = answerSeconds(p.timestamp);
        // In time order after what is held; anything else would fold the line back on itself.
        if (!(t >= (held.times[held.times.length - 1] ?? -Infinity))) continue;
        held.times.push(t);
        held.values.push(p.value);
      }
    });
    const head = answerSeconds(update.head);
    if (Number.isFinite(head)) this.head = Math.max(head, this.head ?? head);
    if (this.head !== undefined) {
      const from = this.head - this.windowSeconds;
      for (const [id, held] of this.series) if (!this.keepAll.has(id)) cut(held, 0, lowerBound(held.times, from) - 1);
    }
    this.dropped = update.dropped;
    if (update.events.length > 0) {
      for (const e of update.events) this.events.set(e.id, timelineEvent(e, this.datasetId));
      this.eventsSeen++;
    }
    if (update.commands.length > 0) {
      for (const c of update.commands) {
        if (!isCommandRecord(c)) continue;
        const held = this.commands.get(c.id);
        this.commands.set(c.id, held ? laterRecord(held, c) : c);
      }
      this.commandsSeen++;
    }
  }
}

/** Drops held samples: from `from` to the end, or (with `to`) those before index `to`. */
function cut(s: LiveSeries, from: number, to?: number): void {
  if (to === undefined) {
    s.times.length = from;
    s.values.length = from;
  } else if (to > 0) {
    s.times.splice(0, to);
    s.values.splice(0, to);
  }
}

/** First index whose time is ≥ t. */
function lowerBound(times: readonly number[], t: number): number {
  let lo = 0;
  let hi = times.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid]! < t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** A Follow event as the events list shows one, so both feed the same marks and banner. */
export function timelineEvent(e: FollowEventAnswer, datasetId: string): TimelineEvent {
  const timestamp = e.time || new Date(0).toISOString();
  return { id: e.id, datasetId, timestamp, kind: e.kind, message: e.message, data: e.data as TimelineEvent['data'], createdAt: timestamp };
}

/** `held` with every event of `incoming` in place of the one with the same id (a LIMIT crossing is reported again when it ends). */
export function mergeEvents(held: readonly TimelineEvent[], incoming: Iterable<TimelineEvent>): TimelineEvent[] {
  const byId = new Map(held.map((e) => [e.id, e]));
  for (const e of incoming) byId.set(e.id, e);
  return [...byId.values()];
}

const STATUS_RANK: Record<CommandRecord['status'], number> = { logged: 0, queued: 1, acked: 2, nacked: 2, timed_out: 2 };

/**
 * A followed command change that is a command record: the service writes them as `commands.get` answers
 * them, so this only keeps out what is not one at all (the console parses no answer with zod: service.ts).
 */
function isCommandRecord(c: object): c is CommandRecord {
  const r = c as Partial<CommandRecord>;
  return typeof r.id === 'string' && typeof r.status === 'string' && Object.hasOwn(STATUS_RANK, r.status) && typeof r.deliveryAttempts === 'number';
}

function progress(c: CommandRecord): number[] {
  return [STATUS_RANK[c.status], c.retractedAt ? 1 : 0, c.deliveryAttempts, c.deliveredAt ? 1 : 0];
}

/**
 * Of two reports of one command, the one further along its life (a command only moves forward: logged,
 * queued, answered; attempts only grow), `incoming` when equal. The log is filled from two sources, the
 * list read when the view opens or after an action and the Follow stream, and either can arrive late.
 */
export function laterRecord(held: CommandRecord, incoming: CommandRecord): CommandRecord {
  const a = progress(held);
  const b = progress(incoming);
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! > b[i]! ? held : incoming;
  return incoming;
}

/** The log with `incoming` merged in by id, in relTime order as the list route gives it. */
export function mergeCommands(held: readonly CommandRecord[], incoming: Iterable<CommandRecord>): CommandRecord[] {
  const byId = new Map(held.map((c) => [c.id, c]));
  for (const c of incoming) {
    const known = byId.get(c.id);
    byId.set(c.id, known ? laterRecord(known, c) : c);
  }
  return [...byId.values()].sort((x, y) => x.relTime - y.relTime || (x.issuedAt < y.issuedAt ? -1 : x.issuedAt > y.issuedAt ? 1 : 0));
}

/** A LIMIT event's crossing: what the banner says and the plots shade. */
export interface LimitCrossing {
  id: string;
  ruleName: string;
  signal: string;
  severity: 'warning' | 'critical';
  condition: string;
  low: number | null;
  high: number | null;
  /** Unix seconds. */
  start: number;
  /** Unix seconds; undefined while the crossing lasts. */
  end: number | undefined;
  worstValue: number;
  worstTime: number;
  active: boolean;
  /** The channel's name and unit when the view knows them (a wide channel's signal is its index, "0"). */
  label?: string;
  unit?: string;
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const seconds = (v: unknown): number | undefined => (typeof v === 'string' && v ? timestampSeconds(v) : undefined);

/** The crossing a LIMIT event records, or undefined for any other event (or one whose data is not a crossing). */
export function limitOf(e: TimelineEvent): LimitCrossing | undefined {
  if (e.kind !== 'LIMIT') return undefined;
  const d = e.data as Record<string, unknown>;
  const start = seconds(d.start) ?? timestampSeconds(e.timestamp);
  if (typeof d.signal !== 'string' || !Number.isFinite(start)) return undefined;
  const end = seconds(d.end);
  return {
    id: e.id,
    ruleName: typeof d.ruleName === 'string' ? d.ruleName : '',
    signal: d.signal,
    severity: d.severity === 'critical' ? 'critical' : 'warning',
    condition: typeof d.condition === 'string' ? d.condition : '',
    low: num(d.low),
    high: num(d.high),
    start,
    end,
    worstValue: num(d.worstValue) ?? NaN,
    worstTime: seconds(d.worstTime) ?? start,
    // A crossing with an end is over, whatever else it says.
    active: d.active === true && end === undefined,
  };
}

/** Every crossing among the events, in start order. */
export function limitsOf(events: readonly TimelineEvent[]): LimitCrossing[] {
  return events.map(limitOf).filter((l): l is LimitCrossing => l !== undefined).sort((a, b) => a.start - b.start);
}

/** How far `v` is beyond the crossing's bound (negative: within it). */
function excess(l: LimitCrossing, v: number): number {
  const over = v - (l.high ?? Infinity);
  const under = (l.low ?? -Infinity) - v;
  return l.condition === 'above' ? over : l.condition === 'below' ? under : Math.max(over, under);
}

/**
 * A crossing under way with its worst value taken over `s` as well, the followed samples of its signal
 * since it began: the service records the worst value when a crossing starts and when it ends, and the
 * page sees it worsen in between. The live window keeps each slice's minimum and maximum, so the
 * extreme survives downsampling.
 */
export function worsened(l: LimitCrossing, s: LiveSeries | undefined): LimitCrossing {
  if (!s || !l.active) return l;
  let worst = l.worstValue;
  let at = l.worstTime;
  let most = Number.isFinite(worst) ? excess(l, worst) : -Infinity;
  for (let i = lowerBound(s.times, l.start); i < s.times.length; i++) {
    const e = excess(l, s.values[i]!);
    if (e > most) {
      most = e;
      worst = s.values[i]!;
      at = s.times[i]!;
    }
  }
  return worst === l.worstValue ? l : { ...l, worstValue: worst, worstTime: at };
}

/** The bound a crossing broke, as a test conductor reads it: `above 120 m`, `below 5`, `outside 10 … 20`. */
export function boundText(l: LimitCrossing): string {
  const n = (v: number | null) => (v === null ? '?' : `${v}${l.unit ? ` ${l.unit}` : ''}`);
  if (l.condition === 'above') return `above ${n(l.high ?? l.low)}`;
  if (l.condition === 'below') return `below ${n(l.low ?? l.high)}`;
  return `outside ${n(l.low)} … ${n(l.high)}`;
}

/**
 * `base` (read once with Query, the flight up to then) continued by `live` (the stream's keep-all
 * samples): base up to where live begins, then live. Each is in time order.
 */
export function joinTail(base: { times: ArrayLike<number>; values: ArrayLike<number> }, live: LiveSeries | undefined): { times: number[]; values: number[] } {
  const from = live && live.times.length > 0 ? live.times[0]! : Infinity;
  const times: number[] = [];
  const values: number[] = [];
  for (let i = 0; i < base.times.length && base.times[i]! < from; i++) {
    times.push(base.times[i]!);
    values.push(base.values[i]!);
  }
  if (live) {
    times.push(...live.times);
    values.push(...live.values);
  }
  return { times, values };
}

/**
 * `values` (sampled at `times`) read at each of `at`: the sample at or before it. Fields of one MAVLink
 * message share timestamps, but a downsampled window may keep different samples of each; reading them
 * on one field's times keeps latitude with its longitude and a mode with its armed bit.
 */
export function valuesAt(at: ArrayLike<number>, times: ArrayLike<number>, values: ArrayLike<number>): Float64Array {
  const out = new Float64Array(at.length);
  for (let i = 0; i < at.length; i++) {
    const j = times.length === at.length && times[i] === at[i] ? i : indexAtOrBefore(times, at[i]!);
    out[i] = j < 0 ? NaN : values[j]!;
  }
  return out;
}
