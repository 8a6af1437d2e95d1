import type { SampleValue } from './decode.ts';
import type { ColumnType } from './message-tables.ts';
import { float8Text, quotedBytea, quotedText } from '../sql/sql-arrays.ts';

/**
 * One message-table column's values as an array parameter. With node-postgres (`binary`) a
 * PostgreSQL binary array in the column's own element type, so the server stores each value without
 * parsing or casting; PGlite takes text parameters only, so there it is an array literal.
 */

const OID: Record<ColumnType, number> = { int2: 21, int4: 23, int8: 20, uint64: 20, float4: 700, float8: 701, text: 25, bytea: 17 };
const FIXED: Partial<Record<ColumnType, number>> = { int2: 2, int4: 4, int8: 8, uint64: 8, float4: 4, float8: 8 };

const TWO_64 = 1n << 64n;
const TWO_63 = 1n << 63n;

/** A uint64 as the int8 that holds its bits (two's complement). */
function int8Of(type: ColumnType, v: SampleValue): bigint {
  const b = typeof v === 'bigint' ? v : BigInt(v as number);
  return type === 'uint64' && b >= TWO_63 ? b - TWO_64 : b;
}

export function binaryColumn(type: ColumnType, values: ReadonlyArray<SampleValue | null>): Buffer {
  const n = values.length;
  let nulls = 0;
  let variable = 0;
  const fixed = FIXED[type];
  const encoded: Array<Buffer | undefined> = fixed === undefined ? new Array(n) : [];
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (v === null || v === undefined) nulls++;
    else if (fixed === undefined) {
      const b = type === 'text' ? Buffer.from(v as string, 'utf8') : Buffer.from((v as Uint8Array).buffer, (v as Uint8Array).byteOffset, (v as Uint8Array).byteLength);
      encoded[i] = b;
      variable += b.length;
    }
  }
  const buf = Buffer.allocUnsafe(20 + n * 4 + (fixed === undefined ? variable : (n - nulls) * fixed));
  buf.writeInt32BE(1, 0);
  buf.writeInt32BE(nulls > 0 ? 1 : 0, 4);
  buf.writeInt32BE(OID[type], 8);
  buf.writeInt32BE(n, 12);
  buf.writeInt32BE(1, 16);
  let pos = 20;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (v === null || v === undefined) {
      buf.writeInt32BE(-1, pos);
      pos += 4;
      continue;
    }
    switch (type) {
      case 'int2':
        buf.writeInt32BE(2, pos);
        buf.writeInt16BE(v as number, pos + 4);
        pos += 6;
        break;
      case 'int4':
        buf.writeInt32BE(4, pos);
        buf.writeInt32BE(v as number, pos + 4);
        pos += 8;
        break;
      case 'int8':
      case 'uint64':
        buf.writeInt32BE(8, pos);
        if (typeof v === 'number') {
          // uint32 fields arrive as numbers: two 32-bit halves, no BigInt.
          const hi = Math.floor(v / 4294967296);
          buf.writeInt32BE(hi, pos + 4);
          buf.writeUInt32BE(v - hi * 4294967296, pos + 8);
        } else buf.writeBigInt64BE(int8Of(type, v), pos + 4);
        pos += 12;
        break;
      case 'float4':
        buf.writeInt32BE(4, pos);
        buf.writeFloatBE(v as number, pos + 4);
        pos += 8;
        break;
      case 'float8':
        buf.writeInt32BE(8, pos);
        buf.writeDoubleBE(v as number, pos + 4);
        pos += 12;
        break;
      default: {
        const b = encoded[i]!;
        buf.writeInt32BE(b.length, pos);
        b.copy(buf, pos + 4);
        pos += 4 + b.length;
      }
    }
  }
  return buf;
}

export function textColumn(type: ColumnType, values: ReadonlyArray<SampleValue | null>): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ',';
    const v = values[i];
    if (v === null || v === undefined) out += 'NULL';
    else if (type === 'text') out += quotedText(v as string);
    else if (type === 'bytea') out += quotedBytea(v as Uint8Array);
    else if (type === 'int8' || type === 'uint64') out += int8Of(type, v).toString();
    // A float4 value decoded into a double is exactly representable: its shortest double text parses back to it.
    else out += typeof v === 'number' ? float8Text(v) : String(v);
  }
  return out + '}';
}
