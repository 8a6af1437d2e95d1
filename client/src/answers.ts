/**
 * Telemetry answers as plain data. Over the wire Query, Submit, StreamSubmit and Follow speak protobuf,
 * whose generated messages carry a `$typeName`, times as `{seconds: bigint, nanos}` and uint64 counters
 * as bigints: `JSON.stringify` throws on them ("Do not know how to serialize a BigInt"), and a caller has
 * to know protobuf to read a time. The client hands back what the RPC's JSON form says instead (what curl
 * shows over Connect with JSON), except that counters are numbers:
 *
 * - times are RFC 3339 UTC strings with 0, 3, 6 or 9 fractional digits, as protobuf's JSON writes them, so
 *   the microseconds the service stores are kept (`2018-08-08T14:05:45.465009Z`); `Date.parse` reads them
 *   to the millisecond, and `timestampSeconds`-style parsing keeps the rest;
 * - counters (`rawPoints`, `totalRawPoints`, `accepted`, `written`, …) are numbers: exact below 2^53,
 *   which no count of points reaches;
 * - Struct fields (`data` of an event, a command record) are the JSON objects they already were.
 *
 * Inputs take a time as an RFC 3339 string or a Date as well as a protobuf Timestamp, so an answer's
 * time can be handed back as it came.
 */
import { fromBinary, type JsonObject, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromDate, type TimestampSchema } from '@bufbuild/protobuf/wkt';
import { SeriesSchema, type FollowEvent, type FollowUpdate, type QueryResponse, type Series, type StreamSubmitResponse, type SubmitResponse } from '@sortie/contracts';
import type { QueryRequestSchema } from '@sortie/contracts';
import { Point, readSeriesBytes } from './series-wire.ts';
import { timestampText } from './time-text.ts';

export { timestampText } from './time-text.ts';

/** One sample: its time (RFC 3339 UTC) and value. */
export interface PointAnswer {
  timestamp: string;
  value: number;
}

/** One channel's samples, in time order, and how many raw samples its window held. */
export interface SeriesAnswer {
  channelId: string;
  /** The samples; empty when the query asked for `columns`. */
  points: PointAnswer[];
  rawPoints: number;
  /** With `columns`: each sample's time, µs since the Unix epoch, in time order. */
  timesUs?: number[];
  /** With `columns`: each sample's value, in the order of `timesUs`. */
  values?: number[];
}

/** TelemetryService.Query: one series per requested channel, in request order. */
export interface QueryAnswer {
  series: SeriesAnswer[];
  totalRawPoints: number;
}

/** TelemetryService.Submit. */
export interface SubmitAnswer {
  accepted: number;
  written: number;
  ignored: number;
  ignoredChannelIds: string[];
}

/** TelemetryService.StreamSubmit: Submit's counters, with messages read and values that replaced stored ones. */
export interface StreamSubmitAnswer extends SubmitAnswer {
  messages: number;
  duplicates: number;
}

/** An event of a followed dataset (LINK_LOSS, LIMIT, an annotation), on the series' time. */
export interface FollowEventAnswer {
  id: string;
  time: string;
  kind: string;
  message: string;
  data: JsonObject;
}

/** One update of TelemetryService.Follow (see the proto: a reset holds the window, then increments). */
export interface FollowAnswer {
  reset: boolean;
  series: SeriesAnswer[];
  /** The newest sample's time the update accounts for; null when the dataset has none yet. */
  head: string | null;
  events: FollowEventAnswer[];
  /** Command records (as `commands.get` answers them) whose status changed. */
  commands: JsonObject[];
  dropped: number;
}

/** A time as an input takes it: RFC 3339 text, a Date, or a protobuf Timestamp. */
export type TimeInput = string | Date | MessageInitShape<typeof TimestampSchema>;

const RFC3339 = /^(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?([Zz]|[+-]\d{2}:\d{2})$/;

/** A time input as a Timestamp, to the nanosecond (Date.parse alone stops at the millisecond). */
export function timestampOf(input: TimeInput): MessageInitShape<typeof TimestampSchema> {
  if (input instanceof Date) return timestampFromDate(input);
  if (typeof input !== 'string') return input;
  const match = RFC3339.exec(input.trim());
  const ms = match ? Date.parse(`${match[1]}T${match[2]}${match[4]!.toUpperCase()}`) : Number.NaN;
  if (!match || Number.isNaN(ms)) throw new RangeError(`not an RFC 3339 time: ${JSON.stringify(input)}`);
  return { seconds: BigInt(ms / 1000), nanos: Number((match[3] ?? '').padEnd(9, '0')) };
}

/**
 * A Series as the generated descriptor decodes it, or its bytes as the client's own descriptor leaves
 * them (telemetry.ts): those are read by hand (series-wire.ts), or by protobuf-es when they are in a
 * form the hand reader does not take.
 */
export type WireSeries = Series | Uint8Array;

function seriesAnswer(s: WireSeries): SeriesAnswer {
  if (s instanceof Uint8Array) return readSeriesBytes(s) ?? seriesAnswer(fromBinary(SeriesSchema, s));
  const points = new Array<PointAnswer>(s.points.length);
  for (let i = 0; i < s.points.length; i++) {
    const p = s.points[i]!;
    points[i] = new Point(p.timestamp ? timestampText(p.timestamp) : '', p.value);
  }
  const answer: SeriesAnswer = { channelId: s.channelId, points, rawPoints: Number(s.rawPoints) };
  // Columns come back as sent (a server that predates them answers points, and these stay absent).
  if (s.timesUs.length > 0 || s.values.length > 0) {
    answer.timesUs = s.timesUs;
    answer.values = s.values;
  }
  return answer;
}

/** An answer whose series may still be encoded (WireSeries). */
export type WireAnswer<T extends { series: Series[] }> = Omit<T, 'series' | '$typeName'> & { series: readonly WireSeries[] };

export function queryAnswer(r: WireAnswer<QueryResponse>): QueryAnswer {
  return { series: r.series.map(seriesAnswer), totalRawPoints: Number(r.totalRawPoints) };
}

export function submitAnswer(r: Pick<SubmitResponse, 'accepted' | 'written' | 'ignored' | 'ignoredChannelIds'>): SubmitAnswer {
  return { accepted: Number(r.accepted), written: Number(r.written), ignored: Number(r.ignored), ignoredChannelIds: [...r.ignoredChannelIds] };
}

export function streamSubmitAnswer(r: StreamSubmitResponse): StreamSubmitAnswer {
  return { ...submitAnswer(r), messages: Number(r.messages), duplicates: Number(r.duplicates) };
}

function followEventAnswer(e: FollowEvent): FollowEventAnswer {
  return { id: e.id, time: e.time ? timestampText(e.time) : '', kind: e.kind, message: e.message, data: e.data ?? {} };
}

export function followAnswer(u: WireAnswer<FollowUpdate>): FollowAnswer {
  return {
    reset: u.reset,
    series: u.series.map(seriesAnswer),
    head: u.head ? timestampText(u.head) : null,
    events: u.events.map(followEventAnswer),
    commands: u.commands,
    dropped: Number(u.dropped),
  };
}

/** Query's request as the client takes it (the proto's fields): `from` and `to` may be RFC 3339 text or Dates. */
export interface QueryInput {
  experimentId?: string;
  datasetId: string;
  channelIds: string[];
  /** Inclusive. */
  from?: TimeInput;
  /** Exclusive. */
  to?: TimeInput;
  maxPointsPerChannel?: number;
  /**
   * Answer each series as two columns (`timesUs`, `values`) instead of `points`: the same samples,
   * several times cheaper for the server to write and for this client to read. What a chart wants.
   */
  columns?: boolean;
}

export function queryRequest(input: QueryInput): MessageInitShape<typeof QueryRequestSchema> {
  return {
    ...(input.experimentId !== undefined && { experimentId: input.experimentId }),
    datasetId: input.datasetId,
    channelIds: input.channelIds,
    ...(input.from !== undefined && { from: timestampOf(input.from) }),
    ...(input.to !== undefined && { to: timestampOf(input.to) }),
    ...(input.maxPointsPerChannel !== undefined && { maxPointsPerChannel: input.maxPointsPerChannel }),
    ...(input.columns && { columns: true }),
  };
}
