import type { TelemetryPoint } from '@sortie/contracts';
import { ServiceError } from '../../platform/errors.ts';
import type { PointSource } from '../ingest/sink.ts';
import { MALFORMED_POINT, PointWire, WIRE_LEN, WIRE_VARINT } from '@sortie/contracts';

/**
 * The points of a mavlink-raw-v1 message, checked against the format's rules (proto/…/telemetry.proto):
 * `bytes` (14) holds the frame and is the only member of `type`, `channel_id` (2) is empty, and
 * `frame_seq` (15) is set. Binary requests arrive still encoded; their few fields are read in place
 * (the frame is a view into the request, not a copy).
 */

/** The point's frame is `buf[start, end)`: a range of the request rather than a view of it (one allocation fewer per frame). */
export type FramePointVisitor = (buf: Uint8Array, start: number, end: number, receivedUs: number, frameSeq: number, index: number) => void;

/** `receivedUs` is NaN when the point has no timestamp. */
export function forEachFramePoint(source: PointSource, locate: (index: number) => string, visit: FramePointVisitor): number {
  if ('points' in source) {
    source.points.forEach((point, i) => visitDecoded(point, locate, i, visit));
    return source.points.length;
  }
  if ('encodedPoints' in source) return readPoints(source.encodedPoints, locate, visit);
  return readBatch(source.encodedBatch, locate, visit);
}

function invalid(locate: (index: number) => string, index: number, message: string): ServiceError {
  return new ServiceError('invalid_request', `${locate(index)}: ${message}`);
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
  visit(point.type.value, 0, point.type.value.length, receivedUs, seq, i);
}

// Protobuf wire reading (contracts' PointWire), just the fields the format needs.

function malformed(locate: (index: number) => string, index: number): ServiceError {
  return invalid(locate, index, MALFORMED_POINT);
}

const NO_BYTES = new Uint8Array(0);
// One reader for every run of encoded points (StreamSubmit sends most frames as single-point messages).
const reader = new PointWire(NO_BYTES);

function readPoints(points: readonly Uint8Array[], locate: (index: number) => string, visit: FramePointVisitor): number {
  try {
    for (let i = 0; i < points.length; i++) {
      reader.reset(points[i]!);
      readPoint(reader, locate, i, visit);
    }
  } finally {
    // Points are views into the request: holding one would keep the request's buffer alive.
    reader.reset(NO_BYTES);
  }
  return points.length;
}

function readBatch(buf: Uint8Array, locate: (index: number) => string, visit: FramePointVisitor): number {
  const r = new PointWire(buf);
  let index = 0;
  for (;;) {
    const found = r.nextBatchPoint();
    if (found === 0) return index;
    if (found < 0) throw malformed(locate, index);
    readPoint(r, locate, index++, visit);
    r.leavePoint();
  }
}

/** The point from the reader's position to its end. */
function readPoint(r: PointWire, locate: (index: number) => string, index: number, visit: FramePointVisitor): void {
  const end = r.end;
  let receivedUs = NaN;
  let frameStart = -1;
  let frameEnd = -1;
  let seq = 0;
  while (r.pos < end) {
    const tag = r.varint();
    if (tag < 0) throw malformed(locate, index);
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (field === 1 && wire === WIRE_LEN) {
      if (!r.timestamp()) throw malformed(locate, index);
      receivedUs = r.seconds * 1_000_000 + Math.floor(r.nanos / 1000);
    } else if ((field === 2 || field === 14) && wire === WIRE_LEN) {
      if (!r.lengthDelimited()) throw malformed(locate, index);
      if (field === 14) {
        frameStart = r.start;
        frameEnd = r.stop;
      }
      else if (r.stop > r.start) throw invalid(locate, index, HAS_CHANNEL);
    } else if (field === 15 && wire === WIRE_VARINT) {
      seq = r.varint();
      if (seq < 0) throw malformed(locate, index);
    } else if (field >= 3 && field <= 13) {
      throw invalid(locate, index, NOT_BYTES);
    } else if (!r.skip(wire)) {
      throw malformed(locate, index);
    }
  }
  if (frameStart < 0) throw invalid(locate, index, NOT_BYTES);
  checkSeq(seq, locate, index);
  visit(r.buf, frameStart, frameEnd, receivedUs, seq, index);
}
