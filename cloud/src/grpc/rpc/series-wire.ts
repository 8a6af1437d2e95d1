import { SERIES_TAGS, timestampLength, varintLength, writeVarint } from '@sortie/contracts';
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
  } else {
    for (let i = 0; i < n; i++) {
      const t = times[i]!;
      const seconds = secondsOfMicros(t);
      const point = pointLength(timestampLength(seconds, nanosOfMicros(t, seconds)), values[i]!);
      size += 1 + varintLength(point) + point;
    }
  }
  const buf = new Uint8Array(size);
  const view = new DataView(buf.buffer);
  let at = 0;
  if (id.length > 0) {
    buf[at++] = SERIES_TAGS.channelId;
    at = writeVarint(buf, at, id.length);
    buf.set(id, at);
    at += id.length;
  }
  if (!columns) {
    for (let i = 0; i < n; i++) {
      const t = times[i]!;
      const v = values[i]!;
      const seconds = secondsOfMicros(t);
      const nanos = nanosOfMicros(t, seconds);
      const ts = timestampLength(seconds, nanos);
      buf[at++] = SERIES_TAGS.points;
      at = writeVarint(buf, at, pointLength(ts, v));
      buf[at++] = SERIES_TAGS.pointTimestamp;
      at = writeVarint(buf, at, ts);
      if (seconds !== 0) {
        buf[at++] = SERIES_TAGS.seconds;
        at = writeVarint(buf, at, seconds);
      }
      if (nanos !== 0) {
        buf[at++] = SERIES_TAGS.nanos;
        at = writeVarint(buf, at, nanos);
      }
      if (!Object.is(v, 0)) {
        buf[at++] = SERIES_TAGS.pointValue;
        view.setFloat64(at, v, true);
        at += 8;
      }
    }
  }
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
  if (at !== size) throw new Error(`a Series encoded to ${at} bytes where ${size} were counted`);
  return buf;
}

/** A SeriesPoint's length, from its Timestamp's (always present, maybe empty) and its value, written unless +0 (-0 is written, as protobuf-es does). */
function pointLength(timestampBytes: number, v: number): number {
  return 1 + varintLength(timestampBytes) + timestampBytes + (Object.is(v, 0) ? 0 : 9);
}
