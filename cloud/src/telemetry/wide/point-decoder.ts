import { ServiceError } from '../../platform/errors.ts';
import type { PointValueCase } from './point-values.ts';
import { MALFORMED_POINT, PointWire, TWO_32, WIRE_I32, WIRE_I64, WIRE_LEN, WIRE_VARINT } from '@sortie/contracts';
import { timestampMicros, type Locate, type ValueExtra, type WideBatchBuilder } from './wide-batch.ts';

/**
 * TelemetryPoint wire decoding straight into a WideBatchBuilder. Binary gRPC requests reach the
 * handlers with `batch` and `point` still encoded (see grpc/lazy-schema.ts); walking the bytes here
 * (contracts' PointWire), without a message object per point and per timestamp, is what keeps a 1,000-row ×
 * 8-channel batch at a fraction of a millisecond.
 */

const VALUE_CASE: Record<number, PointValueCase> = {
  3: 'string',
  4: 'double',
  5: 'float',
  6: 'bool',
  7: 'int32',
  8: 'uint32',
  9: 'int64',
  10: 'uint64',
  11: 'bitField',
  12: 'enum',
  13: 'empty',
  14: 'bytes',
};

const utf8 = new TextDecoder('utf-8', { fatal: true });

// Unlocated: the wide path has always answered a malformed point without naming it.
function malformed(): ServiceError {
  return new ServiceError('invalid_request', MALFORMED_POINT);
}

function signed64(lo: number, hi: number): { num: number; big: bigint | undefined } {
  const num = (hi | 0) * TWO_32 + lo;
  return Number.isSafeInteger(num) ? { num, big: undefined } : { num, big: BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo)) };
}

function unsigned64(lo: number, hi: number): { num: number; big: bigint | undefined } {
  const num = hi * TWO_32 + lo;
  return Number.isSafeInteger(num) ? { num, big: undefined } : { num, big: (BigInt(hi) << 32n) | BigInt(lo) };
}

/** Decode one TelemetryPoint (the bytes of the message, without tag and length) into the builder. */
function decodePointInto(builder: WideBatchBuilder, r: PointWire, end: number, locate: Locate, at: number): void {
  let seconds: number | undefined;
  let nanos = 0;
  let channelStart = 0;
  let channelEnd = 0;
  let kind: PointValueCase | undefined;
  let num = NaN;
  let extra: ValueExtra;
  let frameSeq = false;
  while (r.pos < end) {
    const tag = r.varint();
    if (tag < 0) throw malformed();
    const field = tag >>> 3;
    const wire = tag & 7;
    if (field === 1 && wire === WIRE_LEN) {
      if (!r.timestamp()) throw malformed();
      seconds = r.seconds;
      nanos = r.nanos;
    } else if (field === 2 && wire === WIRE_LEN) {
      if (!r.lengthDelimited()) throw malformed();
      channelStart = r.start;
      channelEnd = r.stop;
    } else if (field >= 3 && field <= 14) {
      kind = VALUE_CASE[field]!;
      extra = undefined;
      switch (field) {
        case 4:
          if (wire !== WIRE_I64) throw malformed();
          num = r.float64();
          break;
        case 5:
          if (wire !== WIRE_I32) throw malformed();
          num = r.float32();
          break;
        case 6:
        case 7:
        case 8:
        case 9:
        case 10:
        case 12: {
          if (wire !== WIRE_VARINT || !r.varint64()) throw malformed();
          const { lo, hi } = r;
          if (field === 6) num = lo !== 0 || hi !== 0 ? 1 : 0;
          else if (field === 7) num = lo | 0;
          else if (field === 8 || field === 12) num = lo;
          else {
            const v = field === 9 ? signed64(lo, hi) : unsigned64(lo, hi);
            num = v.num;
            extra = v.big;
          }
          break;
        }
        case 3:
        case 11:
        case 13:
        case 14: {
          if (wire !== WIRE_LEN || !r.lengthDelimited()) throw malformed();
          const { start, stop } = r;
          num = field === 13 ? 1 : NaN;
          if (field === 3) {
            try {
              extra = utf8.decode(r.buf.subarray(start, stop));
            } catch {
              throw new ServiceError('invalid_request', `${locate(at)}: the string value is not valid UTF-8`);
            }
          } else if (field !== 13) extra = r.buf.subarray(start, stop);
          break;
        }
      }
    } else if (field === 15 && wire === WIRE_VARINT) {
      if (!r.varint64()) throw malformed();
      frameSeq = r.lo !== 0 || r.hi !== 0;
    } else if (!r.skip(wire)) {
      throw malformed();
    }
  }
  if (r.pos !== end) throw malformed();

  const channel = channelIndexBytes(r.buf, channelStart, channelEnd);
  if (channel < 0) {
    let id: string;
    try {
      id = utf8.decode(r.buf.subarray(channelStart, channelEnd));
    } catch {
      throw new ServiceError('invalid_request', `${locate(at)}: channel_id is not valid UTF-8`);
    }
    return builder.ignore(id);
  }
  if (frameSeq) throw new ServiceError('invalid_request', `${locate(at)}: frame_seq must be 0 outside mavlink-raw-v1 streams`);
  const us = timestampMicros(seconds, seconds === undefined ? undefined : nanos, locate, at);
  if (kind === undefined) throw new ServiceError('invalid_request', `${locate(at)}: the point carries no value (the \`type\` oneof is unset)`);
  builder.put(us, channel, kind, num, extra, locate, at);
}

/** channelIndexOf on the UTF-8 bytes, without making a string. */
function channelIndexBytes(buf: Uint8Array, start: number, end: number): number {
  const n = end - start;
  if (n === 0 || n > 9 || (n > 1 && buf[start] === 48)) return -1;
  let index = 0;
  for (let i = start; i < end; i++) {
    const d = buf[i]! - 48;
    if (d < 0 || d > 9) return -1;
    index = index * 10 + d;
  }
  return index;
}

/** Stage every point of an encoded PointBatch (field 1: repeated TelemetryPoint). */
export function stageEncodedBatch(builder: WideBatchBuilder, bytes: Uint8Array, locate: Locate): void {
  const r = new PointWire(bytes);
  let i = 0;
  for (;;) {
    const found = r.nextBatchPoint();
    if (found === 0) return;
    if (found < 0) throw malformed();
    decodePointInto(builder, r, r.end, locate, i++);
    r.leavePoint();
  }
}

/** Stage one encoded TelemetryPoint. */
export function stageEncodedPoint(builder: WideBatchBuilder, bytes: Uint8Array, locate: Locate, at: number): void {
  const r = new PointWire(bytes);
  decodePointInto(builder, r, r.end, locate, at);
}

