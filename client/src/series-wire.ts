import { SERIES_TAGS } from '@sortie/contracts';
import { timeText } from './time-text.ts';

/**
 * `sortie.telemetry.v1.Series` read by hand from its bytes, straight into a SeriesAnswer. Through
 * protobuf-es, a Query answer of eight channels' 16,000 points cost bench:query's client 28–33 ms of CPU:
 * an object per point and per Timestamp, a bigint per second, read by its reflective reader, then the
 * answer made from those. The client's descriptor declares Query's and Follow's series `bytes`
 * (telemetry.ts), and this reads them in one pass, by contracts' SERIES_TAGS.
 *
 * It reads the encoding every protobuf writer produces for these fields (fields by their own wire
 * types, packed doubles, one-byte tags, times after 1970) and answers undefined on anything else:
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

/** The longest varint read here: 7 bytes, 49 bits, exact as a double (seconds to the year 17 million). */
const MAX_VARINT_BYTES = 7;

// Fatal, as protobuf-es refuses a string that is not UTF-8.
const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A Series' answer from its encoded bytes, or undefined when they are not in the form read here. */
export function readSeriesBytes(bytes: Uint8Array): SeriesAnswer | undefined {
  const r = new Reader(bytes);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let channelId = '';
  let rawPoints = 0;
  const points: PointAnswer[] = [];
  const timesUs: number[] = [];
  const values: number[] = [];
  while (r.at < bytes.length) {
    const tag = bytes[r.at++]!;
    if (tag === SERIES_TAGS.points) {
      const end = r.lengthEnd();
      if (end < 0) return undefined;
      const point = readPoint(bytes, view, r, end);
      if (point === undefined) return undefined;
      points.push(point);
    } else if (tag === SERIES_TAGS.timesUs || tag === SERIES_TAGS.values) {
      const end = r.lengthEnd();
      if (end < 0 || (end - r.at) % 8 !== 0) return undefined;
      const into = tag === SERIES_TAGS.timesUs ? timesUs : values;
      for (; r.at < end; r.at += 8) into.push(view.getFloat64(r.at, true));
    } else if (tag === SERIES_TAGS.channelId) {
      const end = r.lengthEnd();
      if (end < 0) return undefined;
      try {
        channelId = utf8.decode(bytes.subarray(r.at, end));
      } catch {
        return undefined;
      }
      r.at = end;
    } else if (tag === SERIES_TAGS.rawPoints) {
      rawPoints = r.varint();
      if (rawPoints < 0) return undefined;
    } else return undefined;
  }
  const answer: SeriesAnswer = { channelId, points, rawPoints };
  if (timesUs.length > 0 || values.length > 0) {
    answer.timesUs = timesUs;
    answer.values = values;
  }
  return answer;
}

/** One SeriesPoint ending at `end`; undefined when it is not in the form read here. */
function readPoint(bytes: Uint8Array, view: DataView, r: Reader, end: number): PointAnswer | undefined {
  let timestamp = '';
  let hasTimestamp = false;
  let value = 0;
  while (r.at < end) {
    const tag = bytes[r.at++]!;
    if (tag === SERIES_TAGS.pointValue) {
      if (r.at + 8 > end) return undefined;
      value = view.getFloat64(r.at, true);
      r.at += 8;
    } else if (tag === SERIES_TAGS.pointTimestamp && !hasTimestamp) {
      const tsEnd = r.lengthEnd();
      if (tsEnd < 0 || tsEnd > end) return undefined;
      let seconds = 0;
      let nanos = 0;
      while (r.at < tsEnd) {
        const field = bytes[r.at++]!;
        if (field === SERIES_TAGS.seconds) seconds = r.varint();
        else if (field === SERIES_TAGS.nanos) nanos = r.varint();
        else return undefined;
        // Negative seconds or nanos are ten-byte varints (two's complement): protobuf-es reads those.
        if (seconds < 0 || nanos < 0 || nanos > 0x7fffffff || r.at > tsEnd) return undefined;
      }
      timestamp = timeText(seconds, nanos);
      hasTimestamp = true;
    } else return undefined;
  }
  return r.at === end ? { timestamp, value } : undefined;
}

class Reader {
  at = 0;
  readonly bytes: Uint8Array;
  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
  }

  /** An unsigned varint of at most MAX_VARINT_BYTES; -1 when longer or cut off. */
  varint(): number {
    let value = 0;
    let scale = 1;
    for (let n = 0; n < MAX_VARINT_BYTES && this.at < this.bytes.length; n++) {
      const b = this.bytes[this.at++]!;
      value += (b & 0x7f) * scale;
      if (b < 0x80) return value;
      scale *= 128;
    }
    return -1;
  }

  /** A length prefix, as where the field it prefixes ends; -1 when it runs past the bytes. */
  lengthEnd(): number {
    const length = this.varint();
    if (length < 0 || this.at + length > this.bytes.length) return -1;
    return this.at + length;
  }
}
