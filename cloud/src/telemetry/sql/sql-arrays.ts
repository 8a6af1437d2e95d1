import { BinaryParam } from '../../db/direct-query.ts';
import { PG_EPOCH_US } from '../../db/sql-text.ts';

/**
 * Array parameters of the bulk statements. The ingest path sends one array per column per batch, so
 * their encoding is on the hot path:
 *  - with node-postgres, numeric arrays go in PostgreSQL's binary array format (node-postgres sends a
 *    Buffer parameter as binary): no double→text formatting here, no text parsing in the server, and
 *    doubles stay bit-exact (-0, NaN, infinities included);
 *  - PGlite takes text parameters only, so there the same arrays are array literals (`{1.5,NULL}`).
 * Text, bytea, boolean and exact-integer columns always use literals built from element texts.
 */

/** A double as float8 input text; keeps -0, NaN and the infinities exact. */
export function float8Text(v: number): string {
  if (Number.isFinite(v)) return v === 0 && 1 / v < 0 ? '-0' : String(v);
  if (Number.isNaN(v)) return 'NaN';
  return v > 0 ? 'Infinity' : '-Infinity';
}

/** A quoted array element for text (backslash and double quote escaped). */
export function quotedText(s: string): string {
  return `"${s.replace(/["\\]/g, '\\$&')}"`;
}

/** A bytea array element in hex format (`\x…`), quoted so its backslash survives array parsing. */
export function quotedBytea(bytes: Uint8Array): string {
  return `"\\\\x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')}"`;
}

/** `{a,b,NULL}` from element texts; `undefined` holes become NULL. */
export function arrayLiteral(elements: ReadonlyArray<string | undefined>, length = elements.length): string {
  let out = '{';
  for (let i = 0; i < length; i++) {
    if (i > 0) out += ',';
    const e = elements[i];
    out += e === undefined ? 'NULL' : e;
  }
  return out + '}';
}

/** `{1,2,3}` from integers (µs timestamps, counts, indexes). */
export function numberArrayLiteral(values: ArrayLike<number>): string {
  return `{${Array.prototype.join.call(values, ',')}}`;
}

const OID = { int4: 23, int8: 20, float8: 701, timestamptz: 1184 } as const;

/**
 * A one-dimensional PostgreSQL binary array: ndim, has-nulls flag, element type, then (size, lower
 * bound), then each element as its length and bytes (-1 for NULL). A BinaryParam: written where it is
 * sent (straight into the Bind message on the ingest path, db/direct-query.ts), not built beforehand.
 */
abstract class BinaryArray extends BinaryParam {
  readonly byteLength: number;
  readonly #oid: number;
  readonly #length: number;
  readonly #nulls: number;

  constructor(oid: number, length: number, nulls: number, elementBytes: number) {
    super();
    this.#oid = oid;
    this.#length = length;
    this.#nulls = nulls;
    this.byteLength = 20 + length * 4 + (length - nulls) * elementBytes;
  }

  writeTo(buf: Buffer, at: number): void {
    buf.writeInt32BE(1, at);
    buf.writeInt32BE(this.#nulls > 0 ? 1 : 0, at + 4);
    buf.writeInt32BE(this.#oid, at + 8);
    buf.writeInt32BE(this.#length, at + 12);
    buf.writeInt32BE(1, at + 16);
    this.writeElements(buf, at + 20);
  }

  protected abstract writeElements(buf: Buffer, at: number): void;
}

/**
 * A binary array of 8-byte integers (int8, or timestamptz whose binary form is int8 µs), each element
 * `values[i] - offset`. Two 32-bit halves: exact for every safe integer, negative ones included, without
 * BigInt.
 */
class BinaryInt8Array extends BinaryArray {
  readonly #values: ArrayLike<number>;
  readonly #offset: number;

  constructor(oid: number, values: ArrayLike<number>, offset: number) {
    super(oid, values.length, 0, 8);
    this.#values = values;
    this.#offset = offset;
  }

  protected writeElements(buf: Buffer, pos: number): void {
    const values = this.#values;
    for (let i = 0; i < values.length; i++) {
      const v = values[i]! - this.#offset;
      const hi = Math.floor(v / 4294967296);
      buf.writeInt32BE(8, pos);
      buf.writeInt32BE(hi, pos + 4);
      buf.writeUInt32BE(v - hi * 4294967296, pos + 8);
      pos += 12;
    }
  }
}

class BinaryInt4Array extends BinaryArray {
  readonly #values: ArrayLike<number>;

  constructor(values: ArrayLike<number>) {
    super(OID.int4, values.length, 0, 4);
    this.#values = values;
  }

  protected writeElements(buf: Buffer, pos: number): void {
    const values = this.#values;
    for (let i = 0; i < values.length; i++) {
      buf.writeInt32BE(4, pos);
      buf.writeInt32BE(values[i]!, pos + 4);
      pos += 8;
    }
  }
}

/** A float8 array of `values[0, length)`; element i is NULL where `present[i] === 0`. Doubles stay bit-exact. */
class BinaryFloat8Array extends BinaryArray {
  readonly #values: ArrayLike<number>;
  readonly #present: ArrayLike<number> | undefined;
  readonly #count: number;

  constructor(values: ArrayLike<number>, present: ArrayLike<number> | undefined, length: number) {
    super(OID.float8, length, countHoles(present, length), 8);
    this.#values = values;
    this.#present = present;
    this.#count = length;
  }

  protected writeElements(buf: Buffer, pos: number): void {
    const values = this.#values;
    const present = this.#present;
    for (let i = 0; i < this.#count; i++) {
      if (present && !present[i]) {
        buf.writeInt32BE(-1, pos);
        pos += 4;
      } else {
        buf.writeInt32BE(8, pos);
        buf.writeDoubleBE(values[i]!, pos + 4);
        pos += 12;
      }
    }
  }
}

/** PostgreSQL's binary timestamptz[] of µs since the Unix epoch. */
export function binaryTimestamptzArray(us: ArrayLike<number>): BinaryParam {
  return new BinaryInt8Array(OID.timestamptz, us, PG_EPOCH_US);
}

function countHoles(present: ArrayLike<number> | undefined, length: number): number {
  if (!present) return 0;
  let n = 0;
  for (let i = 0; i < length; i++) if (!present[i]) n++;
  return n;
}

/**
 * Encodes the numeric arrays of a statement for one driver; the SQL casts the parameter
 * (`$1::float8[]`). For float8, `present[i] === 0` makes element i NULL.
 */
export interface ArrayEncoder {
  /** Whether arrays travel in binary (node-postgres) or as literals (PGlite). */
  readonly binary: boolean;
  float8(values: ArrayLike<number>, present?: ArrayLike<number>, length?: number): string | BinaryParam;
  int8(values: ArrayLike<number>): string | BinaryParam;
  int4(values: ArrayLike<number>): string | BinaryParam;
  /** Bytes for a `$1::bytea` parameter (both drivers take bytes as they are: PGlite refuses a hex text). */
  bytea(bytes: Uint8Array): Uint8Array;
}

export const textArrays: ArrayEncoder = {
  binary: false,
  float8: (values, present, length = values.length) => {
    let out = '{';
    for (let i = 0; i < length; i++) {
      if (i > 0) out += ',';
      out += present && !present[i] ? 'NULL' : float8Text(values[i]!);
    }
    return out + '}';
  },
  int8: numberArrayLiteral,
  int4: numberArrayLiteral,
  bytea: (bytes) => bytes,
};

export const binaryArrays: ArrayEncoder = {
  binary: true,
  float8: (values, present, length = values.length) => new BinaryFloat8Array(values, present, length),
  int8: (values) => new BinaryInt8Array(OID.int8, values, 0),
  int4: (values) => new BinaryInt4Array(values),
  bytea: (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
};

/**
 * The elements of a float8 array in PostgreSQL's binary format (what `array_send` returns), of any
 * number of dimensions, in row-major order; a NULL element reads as NaN. Reading a packed answer this
 * way costs a pass over its bytes instead of parsing one text per value.
 */
export function float8ArrayFromBinary(bytes: Uint8Array): Float64Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytes.byteLength < 12) throw new RangeError(`a binary array is at least 12 bytes, got ${bytes.byteLength}`);
  const ndim = view.getInt32(0);
  const oid = view.getInt32(8);
  if (oid !== OID.float8) throw new RangeError(`expected a float8 array (oid ${OID.float8}), got oid ${oid}`);
  let length = ndim === 0 ? 0 : 1;
  for (let d = 0; d < ndim; d++) length *= view.getInt32(12 + d * 8);
  const out = new Float64Array(length);
  let pos = 12 + ndim * 8;
  for (let i = 0; i < length; i++) {
    const size = view.getInt32(pos);
    if (size === -1) {
      out[i] = NaN;
      pos += 4;
    } else {
      out[i] = view.getFloat64(pos + 4);
      pos += 4 + size;
    }
  }
  return out;
}
