import { SERIES_TAGS, varintLength, writeVarint } from '@sortie/contracts';
import type { SeriesResult } from '../../telemetry/read.ts';
import { nanosOfMicros, secondsOfMicros } from './timestamps.ts';

/**
 * `sortie.telemetry.v1.Series` written by hand for binary Query answers (the lazy descriptor declares
 * QueryResponse.series as bytes, lazy-schema.ts). protobuf-es builds an object and a Timestamp object per
 * sample and writes them through its reflective writer: for eight channels' 16,000 samples that was
 * ~15 ms of the server's CPU per Query (docs/PERFORMANCE.md). The bytes are the ones protobuf-es writes
 * (tests compare them): fields in number order, proto3 defaults (+0, '', empty) left out. The tags are
 * contracts' SERIES_TAGS, which the client reads by.
 */

const utf8 = new TextEncoder();

/** One Series message. `columns`: times and values as packed doubles, else a SeriesPoint per sample. */
export function encodeSeries(series: SeriesResult, columns: boolean): Uint8Array {
  const id = utf8.encode(series.channelId);
  const { t: times, v: values } = series.samples;
  const n = times.length;
  let size = 0;
  if (id.length > 0) size += 1 + varintLength(id.length) + id.length;
  if (series.rawPoints > 0) size += 1 + varintLength(series.rawPoints);
  const packed = n * 8;
  if (columns) {
    if (packed > 0) size += 2 * (1 + varintLength(packed) + packed);
  } else size += n * MAX_POINT_BYTES;
  const buf = new Uint8Array(size);
  const view = new DataView(buf.buffer);
  let at = 0;
  if (id.length > 0) {
    buf[at++] = SERIES_TAGS.channelId;
    at = writeVarint(buf, at, id.length);
    buf.set(id, at);
    at += id.length;
  }
  if (!columns) at = writePoints(buf, view, at, times, values);
  if (series.rawPoints > 0) {
    buf[at++] = SERIES_TAGS.rawPoints;
    at = writeVarint(buf, at, series.rawPoints);
  }
  if (columns && packed > 0) {
    buf[at++] = SERIES_TAGS.timesUs;
    at = writeVarint(buf, at, packed);
    for (let i = 0; i < n; i++) {
      view.setFloat64(at, times[i]!, true);
      at += 8;
    }
    buf[at++] = SERIES_TAGS.values;
    at = writeVarint(buf, at, packed);
    for (let i = 0; i < n; i++) {
      view.setFloat64(at, values[i]!, true);
      at += 8;
    }
  }
  if (columns ? at !== size : at > size) throw new Error(`a Series encoded to ${at} bytes where ${size} were counted`);
  // As points, the buffer was sized for the longest points; the answer is copied into the response.
  return columns ? buf : buf.subarray(0, at);
}

/**
 * A SeriesPoint's most bytes: its tag and length, a Timestamp's tag and length, seconds (tag and up to a
 * ten-byte varint), nanos (tag and up to five), the value (tag and eight). Under 128, so both lengths are
 * one byte each and are written after what they measure.
 */
const MAX_POINT_BYTES = 2 + 2 + 11 + 6 + 9;

/**
 * The samples as SeriesPoints, in one pass: each point's lengths are filled in once its bytes are written.
 * Consecutive samples mostly share their second, whose varint is written once and copied.
 */
function writePoints(buf: Uint8Array, view: DataView, at: number, times: Float64Array, values: Float64Array): number {
  const secondsVarint = new Uint8Array(10);
  let secondsLength = 0;
  let lastSeconds = Number.NaN;
  for (let i = 0; i < times.length; i++) {
    const t = times[i]!;
    const v = values[i]!;
    const seconds = secondsOfMicros(t);
    const nanos = nanosOfMicros(t, seconds);
    if (seconds !== lastSeconds) {
      secondsLength = seconds === 0 ? 0 : writeVarint(secondsVarint, 0, seconds);
      lastSeconds = seconds;
    }
    const point = at;
    buf[at] = SERIES_TAGS.points;
    buf[at + 2] = SERIES_TAGS.pointTimestamp;
    at += 4;
    if (secondsLength > 0) {
      buf[at++] = SERIES_TAGS.seconds;
      for (let b = 0; b < secondsLength; b++) buf[at++] = secondsVarint[b]!;
    }
    if (nanos !== 0) {
      buf[at++] = SERIES_TAGS.nanos;
      at = writeVarint(buf, at, nanos);
    }
    buf[point + 3] = at - point - 4;
    // +0 is proto3's default and left out; -0 is written, as protobuf-es does.
    if (!Object.is(v, 0)) {
      buf[at++] = SERIES_TAGS.pointValue;
      view.setFloat64(at, v, true);
      at += 8;
    }
    buf[point + 1] = at - point - 2;
  }
  return at;
}
