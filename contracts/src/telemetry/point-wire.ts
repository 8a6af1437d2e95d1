/**
 * The one reader of Sortie's protobuf wire bytes by hand (field numbers follow
 * proto/sortie/telemetry/v1/telemetry.proto). In the cloud, binary gRPC requests reach the sinks with
 * their points still encoded (see grpc/rpc/lazy-schema.ts), and the wide decoder (point-decoder.ts) and
 * the narrow frame reader (narrow/frame-points.ts) walk TelemetryPoint / PointBatch with this, without a
 * message object per point or timestamp. In the client, Query and Follow answers arrive with their
 * Series encoded, and client/src/series-wire.ts reads them with the same reader.
 *
 * Hot path: results land in fields of the reader (`lo`/`hi`, `start`/`stop`, `seconds`/`nanos`) rather
 * than in returned objects, and failures are reported as -1 / false rather than thrown, because the
 * callers word and locate "malformed" differently (MALFORMED_POINT is the cloud's shared wording).
 */

export const WIRE_VARINT = 0;
export const WIRE_I64 = 1;
export const WIRE_LEN = 2;
export const WIRE_I32 = 5;

/** Tag of PointBatch.points (field 1, length-delimited); also of TelemetryPoint.timestamp. */
const TAG_POINTS = 0x0a;
/** Tags of google.protobuf.Timestamp's seconds (1, varint) and nanos (2, varint). */
const TAG_SECONDS = 0x08;
const TAG_NANOS = 0x10;

export const TWO_32 = 4294967296;

export const MALFORMED_POINT = 'malformed TelemetryPoint encoding';

export class PointWire {
  buf: Uint8Array;
  pos = 0;
  /** End of the message being read; nested messages narrow it while they are read. */
  end: number;

  /** Results of varint64, lengthDelimited and timestamp, kept on the reader so a point allocates nothing. */
  lo = 0;
  hi = 0;
  start = 0;
  stop = 0;
  /** Timestamp seconds (int64 as a double, exact to 2^53) and nanos (int32), as `timestamp` read them. */
  seconds = 0;
  nanos = 0;

  // Made on the first float read: the narrow reader never needs one.
  #view: DataView | undefined;
  /** Where in `buf` the last timestamp read lies (length -1: none yet), and what it read as (seconds, nanos above). */
  #lastTimestampAt = 0;
  #lastTimestampLength = -1;

  constructor(buf: Uint8Array) {
    this.buf = buf;
    this.end = buf.length;
  }

  /** Read another buffer from its start (one reader serves a run of encoded points). */
  reset(buf: Uint8Array): void {
    this.buf = buf;
    this.pos = 0;
    this.end = buf.length;
    this.#view = undefined;
    this.#lastTimestampLength = -1;
  }

  /**
   * A varint as a double (exact up to 2^53; larger values come back larger than MAX_SAFE_INTEGER), for
   * tags, lengths and counters; -1 when truncated or longer than 10 bytes.
   */
  varint(): number {
    // Locals, not fields, in the byte loops: a hot loop over `this.pos` measurably slows both callers.
    const buf = this.buf;
    const end = this.end;
    let pos = this.pos;
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 10; i++) {
      if (pos >= end) return -1;
      const b = buf[pos++]!;
      result += (b & 0x7f) * scale;
      if (b < 0x80) {
        this.pos = pos;
        return result;
      }
      scale *= 128;
    }
    return -1;
  }

  /** A 64-bit varint into `lo` and `hi` (both unsigned 32-bit halves); false when malformed. */
  varint64(): boolean {
    const buf = this.buf;
    const end = this.end;
    let pos = this.pos;
    let lo = 0;
    let hi = 0;
    for (let shift = 0; shift < 70; shift += 7) {
      if (pos >= end) return false;
      const b = buf[pos++]!;
      const bits = b & 0x7f;
      if (shift < 28) lo |= bits << shift;
      else if (shift === 28) {
        lo |= bits << 28;
        hi |= bits >>> 4;
      } else hi |= bits << (shift - 32);
      if (b < 0x80) {
        this.pos = pos;
        this.lo = lo >>> 0;
        this.hi = hi >>> 0;
        return true;
      }
    }
    return false;
  }

  /** Move past a field's payload; false when malformed. */
  skip(wire: number): boolean {
    if (wire === WIRE_VARINT || wire === WIRE_LEN) {
      const n = this.varint();
      if (n < 0) return false;
      if (wire === WIRE_LEN) this.pos += n;
    } else if (wire === WIRE_I64) this.pos += 8;
    else if (wire === WIRE_I32) this.pos += 4;
    else return false;
    return this.pos <= this.end;
  }

  /** A length-delimited field's payload into `start` and `stop`; the reader moves past it. False when malformed. */
  lengthDelimited(): boolean {
    const len = this.varint();
    if (len < 0) return false;
    this.start = this.pos;
    this.pos += len;
    this.stop = this.pos;
    return this.pos <= this.end;
  }

  /** Little-endian fixed64 double / fixed32 float at the position (bounds as DataView checks them). */
  float64(): number {
    const value = this.#dataView().getFloat64(this.pos, true);
    this.pos += 8;
    return value;
  }

  float32(): number {
    const value = this.#dataView().getFloat32(this.pos, true);
    this.pos += 4;
    return value;
  }

  #dataView(): DataView {
    return (this.#view ??= new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength));
  }

  /**
   * The payload of a google.protobuf.Timestamp field (its tag read), read in place into `seconds` and
   * `nanos`; fields it does not know are skipped, absent ones are 0. False when malformed.
   */
  timestamp(): boolean {
    if (!this.lengthDelimited()) return false;
    const stop = this.stop;
    // The points of one row share their instant, and their encoders write it the same way: when these
    // bytes are the last timestamp's, so is its value (a third of a batch's decoding, measured).
    const length = stop - this.start;
    if (length === this.#lastTimestampLength && this.#sameBytes(this.#lastTimestampAt, this.start, length)) return true;
    const outer = this.end;
    this.pos = this.start;
    this.end = stop;
    let seconds = 0;
    let nanos = 0;
    while (this.pos < stop) {
      const tag = this.varint();
      // One call site per reader method here and in `skip`: callers inline all of this, within V8's budget.
      if (tag === TAG_SECONDS || tag === TAG_NANOS) {
        if (!this.varint64()) return false;
        if (tag === TAG_SECONDS) seconds = (this.hi | 0) * TWO_32 + this.lo;
        else nanos = this.lo | 0;
      } else if (tag < 0 || !this.skip(tag & 7)) {
        return false;
      }
    }
    // Only on success: a malformed point is abandoned (thrown), so `end` need not be restored then.
    this.end = outer;
    this.seconds = seconds;
    this.nanos = nanos;
    this.#lastTimestampAt = this.start;
    this.#lastTimestampLength = length;
    return true;
  }

  #sameBytes(a: number, b: number, length: number): boolean {
    const buf = this.buf;
    for (let i = 0; i < length; i++) if (buf[a + i] !== buf[b + i]) return false;
    return true;
  }

  /**
   * Within a PointBatch: move to its next `points` entry, skipping other fields, and narrow `pos`/`end`
   * to that TelemetryPoint. 1 when there is one, 0 at the end of the batch, -1 when malformed. The caller
   * reads the point, then calls `leavePoint` before asking for the next.
   */
  nextBatchPoint(): number {
    while (this.pos < this.end) {
      const tag = this.varint();
      if (tag < 0) return -1;
      if (tag === TAG_POINTS) {
        if (!this.lengthDelimited()) return -1;
        this.pos = this.start;
        this.end = this.stop;
        return 1;
      }
      if (!this.skip(tag & 7)) return -1;
    }
    return 0;
  }

  /** Back to the batch after the point `nextBatchPoint` moved to, whatever of it was read. */
  leavePoint(): void {
    this.pos = this.end;
    this.end = this.buf.length;
  }
}
