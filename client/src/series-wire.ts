import { PointWire, SERIES_TAGS, timestampLength } from '@sortie/contracts';
import { timeText } from './time-text.ts';

/**
 * `sortie.telemetry.v1.Series` read by hand from its bytes, straight into a SeriesAnswer. Through
 * protobuf-es, a Query answer of eight channels' 16,000 points cost bench:query's client 28–33 ms of CPU:
 * an object per point and per Timestamp, a bigint per second, read by its reflective reader, then the
 * answer made from those. The client's descriptor declares Query's and Follow's series `bytes`
 * (telemetry.ts), and this reads them in one pass, by contracts' SERIES_TAGS with contracts' PointWire
 * (the reader the cloud's ingest walks points with).
 *
 * It reads the encoding every protobuf writer produces for these fields (fields by their own wire
 * types, packed doubles, one-byte tags, times after 1970) and answers undefined on anything else:
 * a longer tag (protobuf-es refuses tags over five bytes, so a varint reader would take what it refuses),
 * unknown fields, a Timestamp given twice in one point, a negative or huge varint, a truncated message,
 * a channel id that is not UTF-8. The caller then decodes the same bytes with protobuf-es, which says
 * what is wrong or merges what protobuf allows; so the answer is the same either way
 * (series-wire.test.ts holds that, for generated series and for mangled bytes).
 */

/** answers.ts's SeriesAnswer, written out here: answers.ts imports this module. */
interface SeriesAnswer {
  channelId: string;
  points: PointAnswer[];
  rawPoints: number;
  timesUs?: number[];
  values?: number[];
}

interface PointAnswer {
  timestamp: string;
  value: number;
}

/** Seconds are taken below 2^49: exact as doubles (Date fails far below it, on both paths alike). */
const MAX_SECONDS = 2 ** 49;

// Fatal, as protobuf-es refuses a string that is not UTF-8; a leading byte-order mark kept, as it keeps it.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** A Series' answer from its encoded bytes, or undefined when they are not in the form read here. */
export function readSeriesBytes(bytes: Uint8Array): SeriesAnswer | undefined {
  const w = new PointWire(bytes);
  let channelId = '';
  let rawPoints = 0;
  const points: PointAnswer[] = [];
  const timesUs: number[] = [];
  const values: number[] = [];
  while (w.pos < bytes.length) {
    // One byte: every Series tag is below 0x80, and a longer one goes to protobuf-es.
    const tag = bytes[w.pos++]!;
    if (tag === SERIES_TAGS.points) {
      if (!w.lengthDelimited()) return undefined;
      const point = readPoint(w);
      if (point === undefined) return undefined;
      points.push(point);
    } else if (tag === SERIES_TAGS.timesUs || tag === SERIES_TAGS.values) {
      if (!w.lengthDelimited() || (w.stop - w.start) % 8 !== 0) return undefined;
      const into = tag === SERIES_TAGS.timesUs ? timesUs : values;
      for (w.pos = w.start; w.pos < w.stop; ) into.push(w.float64());
    } else if (tag === SERIES_TAGS.channelId) {
      if (!w.lengthDelimited()) return undefined;
      try {
        channelId = utf8.decode(bytes.subarray(w.start, w.stop));
      } catch {
        return undefined;
      }
    } else if (tag === SERIES_TAGS.rawPoints) {
      rawPoints = w.varint();
      // Negative counts are ten-byte varints (two's complement), read here as above 2^53.
      if (rawPoints < 0 || rawPoints > Number.MAX_SAFE_INTEGER) return undefined;
    } else return undefined;
  }
  const answer: SeriesAnswer = { channelId, points, rawPoints };
  if (timesUs.length > 0 || values.length > 0) {
    answer.timesUs = timesUs;
    answer.values = values;
  }
  return answer;
}

/** The SeriesPoint between `w.start` and `w.stop`; undefined when it is not in the form read here. */
function readPoint(w: PointWire): PointAnswer | undefined {
  const stop = w.stop;
  w.pos = w.start;
  w.end = stop;
  let timestamp = '';
  let hasTimestamp = false;
  let value = 0;
  while (w.pos < stop) {
    const tag = w.buf[w.pos++]!;
    if (tag === SERIES_TAGS.pointValue) {
      if (w.pos + 8 > stop) return undefined;
      value = w.float64();
    } else if (tag === SERIES_TAGS.pointTimestamp && !hasTimestamp) {
      // protobuf-es merges a Timestamp given twice field by field; that case is left to it.
      if (!w.timestamp() || !canonicalTimestamp(w)) return undefined;
      timestamp = timeText(w.seconds, w.nanos);
      hasTimestamp = true;
    } else return undefined;
  }
  w.end = w.buf.length;
  return new Point(timestamp, value);
}

/**
 * A point of an answer, made by a constructor rather than as an object literal. An answer's points all
 * live until it is handed over, so V8 found a literal's allocation site alive at every scavenge and
 * pretenured it: the points were allocated straight into the old generation and died there. Objects made
 * by `new` have no allocation site to pretenure. Decoding an eight-channel answer (16,000 points) in a
 * loop, garbage collection took 0.35–2.4 ms an answer with the literal, 0.15–0.20 ms with this
 * (docs/PERFORMANCE.md). Both readers of a Series make their points with it, so answers compare equal
 * whichever read them.
 */
export class Point implements PointAnswer {
  timestamp: string;
  value: number;
  constructor(timestamp: string, value: number) {
    this.timestamp = timestamp;
    this.value = value;
  }
}

/**
 * Whether the Timestamp `w.timestamp()` just read was written as every protobuf writer writes it: its
 * non-zero fields once each as shortest varints, nothing else. PointWire skips fields it does not know
 * and reads a field given twice as the last; only bytes exactly as long as that encoding of what was read
 * can hold nothing more, so protobuf-es reads the same seconds and nanos from them. (A five-byte nanos
 * may carry bits above 32, which both readers drop alike.) Times before 1970 are ten-byte varints and are
 * left to protobuf-es too.
 */
function canonicalTimestamp(w: PointWire): boolean {
  if (w.seconds < 0 || w.seconds >= MAX_SECONDS || w.nanos < 0) return false;
  return w.stop - w.start === timestampLength(w.seconds, w.nanos);
}
