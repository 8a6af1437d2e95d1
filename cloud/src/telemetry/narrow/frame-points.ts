import type { TelemetryPoint } from '@sortie/contracts';
import { ApiError } from '../../http/api-error.ts';
import type { PointSource } from '../sinks.ts';

/**
 * The points of a mavlink-raw-v1 message, checked against the format's rules (proto/…/telemetry.proto):
 * `bytes` (14) holds the frame and is the only member of `type`, `channel_id` (2) is empty, and
 * `frame_seq` (15) is set. Binary requests arrive still encoded; their few fields are read in place
 * (the frame is a view into the request, not a copy).
 */

export type FramePointVisitor = (frame: Uint8Array, receivedUs: number, frameSeq: number, index: number) => void;

/** `receivedUs` is NaN when the point has no timestamp. */
export function forEachFramePoint(source: PointSource, locate: (index: number) => string, visit: FramePointVisitor): number {
  if ('points' in source) {
    source.points.forEach((point, i) => visitDecoded(point, locate, i, visit));
    return source.points.length;
  }
  if ('encodedPoints' in source) {
    source.encodedPoints.forEach((bytes, i) => readPoint(bytes, 0, bytes.length, locate, i, visit));
    return source.encodedPoints.length;
  }
  return readBatch(source.encodedBatch, locate, visit);
}

function invalid(locate: (index: number) => string, index: number, message: string): ApiError {
  return new ApiError('invalid_request', `${locate(index)}: ${message}`);
}

const NOT_BYTES = 'a mavlink-raw-v1 point carries its frame in the `bytes` member and no other value';
const HAS_CHANNEL = 'channel_id must be empty in a mavlink-raw-v1 stream (the server names signals)';
const NO_SEQ = 'frame_seq must be set (1 or more): it is how a redelivered frame is recognised';
const BIG_SEQ = `frame_seq above ${Number.MAX_SAFE_INTEGER} is not supported`;

function checkSeq(seq: number, locate: (index: number) => string, index: number): void {
  if (seq === 0) throw invalid(locate, index, NO_SEQ);
  if (seq > Number.MAX_SAFE_INTEGER) throw invalid(locate, index, BIG_SEQ);
}

function visitDecoded(point: TelemetryPoint, locate: (index: number) => string, i: number, visit: FramePointVisitor): void {
  if (point.type.case !== 'bytes') throw invalid(locate, i, NOT_BYTES);
  if (point.channelId !== '') throw invalid(locate, i, HAS_CHANNEL);
  const seq = Number(point.frameSeq);
  checkSeq(point.frameSeq > BigInt(Number.MAX_SAFE_INTEGER) ? Infinity : seq, locate, i);
  const ts = point.timestamp;
  const receivedUs = ts ? Number(ts.seconds) * 1_000_000 + Math.floor(ts.nanos / 1000) : NaN;
  visit(point.type.value, receivedUs, seq, i);
}

// Protobuf wire reading, just what the format needs.

const TWO_32 = 4294967296;

interface Cursor {
  pos: number;
}

function malformed(locate: (index: number) => string, index: number): ApiError {
  return invalid(locate, index, 'malformed TelemetryPoint encoding');
}

/** A varint as a double (exact up to 2^53; larger values come back larger than MAX_SAFE_INTEGER). */
function varint(buf: Uint8Array, c: Cursor, end: number): number {
  let result = 0;
  let scale = 1;
  for (let i = 0; i < 10; i++) {
    if (c.pos >= end) return -1;
    const b = buf[c.pos++]!;
    result += (b & 0x7f) * scale;
    if (b < 0x80) return result;
    scale *= 128;
  }
  return -1;
}

/** A varint holding an int64 (negative values are 10-byte two's complement); NaN when malformed. */
function int64(buf: Uint8Array, c: Cursor, end: number): number {
  let lo = 0;
  let hi = 0;
  for (let shift = 0; shift < 70; shift += 7) {
    if (c.pos >= end) return NaN;
    const b = buf[c.pos++]!;
    const bits = b & 0x7f;
    if (shift < 28) lo |= bits << shift;
    else if (shift === 28) {
      lo |= bits << 28;
      hi |= bits >>> 4;
    } else hi |= bits << (shift - 32);
    if (b < 0x80) return (hi | 0) * TWO_32 + (lo >>> 0);
  }
  return NaN;
}

function skip(buf: Uint8Array, c: Cursor, end: number, wire: number): boolean {
  switch (wire) {
    case 0:
      return varint(buf, c, end) >= 0;
    case 1:
      c.pos += 8;
      break;
    case 2: {
      const len = varint(buf, c, end);
      if (len < 0) return false;
      c.pos += len;
      break;
    }
    case 5:
      c.pos += 4;
      break;
    default:
      return false;
  }
  return c.pos <= end;
}

const cursor: Cursor = { pos: 0 };

function readBatch(buf: Uint8Array, locate: (index: number) => string, visit: FramePointVisitor): number {
  const c: Cursor = { pos: 0 };
  let index = 0;
  while (c.pos < buf.length) {
    const tag = varint(buf, c, buf.length);
    if (tag < 0) throw malformed(locate, index);
    if (tag === 0x0a) {
      const len = varint(buf, c, buf.length);
      if (len < 0 || c.pos + len > buf.length) throw malformed(locate, index);
      readPoint(buf, c.pos, c.pos + len, locate, index++, visit);
      c.pos += len;
    } else if (!skip(buf, c, buf.length, tag & 7)) {
      throw malformed(locate, index);
    }
  }
  return index;
}

function readPoint(buf: Uint8Array, start: number, end: number, locate: (index: number) => string, index: number, visit: FramePointVisitor): void {
  const c = cursor;
  c.pos = start;
  let receivedUs = NaN;
  let frame: Uint8Array | undefined;
  let seq = 0;
  while (c.pos < end) {
    const tag = varint(buf, c, end);
    if (tag < 0) throw malformed(locate, index);
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (field === 1 && wire === 2) {
      const len = varint(buf, c, end);
      const stop = c.pos + len;
      if (len < 0 || stop > end) throw malformed(locate, index);
      let seconds = 0;
      let nanos = 0;
      while (c.pos < stop) {
        const t = varint(buf, c, stop);
        if (t === 0x08) {
          seconds = int64(buf, c, stop);
          if (Number.isNaN(seconds)) throw malformed(locate, index);
        } else if (t === 0x10) {
          nanos = varint(buf, c, stop);
          if (nanos < 0) throw malformed(locate, index);
          if (nanos >= TWO_32) nanos -= TWO_32;
        } else if (t < 0 || !skip(buf, c, stop, t & 7)) {
          throw malformed(locate, index);
        }
      }
      receivedUs = seconds * 1_000_000 + Math.floor(nanos / 1000);
    } else if (field === 2 && wire === 2) {
      const len = varint(buf, c, end);
      if (len < 0 || c.pos + len > end) throw malformed(locate, index);
      if (len > 0) throw invalid(locate, index, HAS_CHANNEL);
    } else if (field === 14 && wire === 2) {
      const len = varint(buf, c, end);
      if (len < 0 || c.pos + len > end) throw malformed(locate, index);
      frame = buf.subarray(c.pos, c.pos + len);
      c.pos += len;
    } else if (field === 15 && wire === 0) {
      seq = varint(buf, c, end);
      if (seq < 0) throw malformed(locate, index);
    } else if (field >= 3 && field <= 13) {
      throw invalid(locate, index, NOT_BYTES);
    } else if (!skip(buf, c, end, wire)) {
      throw malformed(locate, index);
    }
  }
  if (!frame) throw invalid(locate, index, NOT_BYTES);
  checkSeq(seq, locate, index);
  visit(frame, receivedUs, seq, index);
}
