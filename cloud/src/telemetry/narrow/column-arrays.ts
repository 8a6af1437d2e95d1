import type { SampleValue } from './decode.ts';
import type { ColumnType } from './message-tables.ts';
import { float8Text, quotedBytea, quotedText } from '../sql/sql-arrays.ts';
import { PG_EPOCH_US } from '../../db/sql-text.ts';

/**
 * Message-table rows as array parameters. With node-postgres, one binary array of the table's row type
 * per table (binaryRowArray): the server stores each value without parsing or casting. PGlite takes
 * text parameters only: there one array literal per column (textColumn).
 */

/**
 * A growable column of plain numbers: the int2, int4, float4 and float8 columns of a batch. A JS array
 * read at one site across columns of every kind boxed each number it handed out (the largest share of
 * what ingest allocated); a Float64Array holds them unboxed from the decoder to the row array.
 */
export class NumberColumn {
  data = new Float64Array(32);
  /** Values held; assigning a smaller length drops the rest (a rolled-back message). */
  length = 0;

  push(value: number): void {
    if (this.length === this.data.length) {
      const grown = new Float64Array(this.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    this.data[this.length++] = value;
  }
}

/** Column types whose batch values are plain numbers (NumberColumn). */
export function holdsNumbers(type: ColumnType): boolean {
  return type === 'int2' || type === 'int4' || type === 'float4' || type === 'float8';
}

/** A batch column: NumberColumn for holdsNumbers types, else an array (bigints, texts, bytes, uint32 as int8). */
export type BatchColumn = NumberColumn | SampleValue[];

/** Row r's value of a batch column. */
export function valueAt(column: BatchColumn, r: number): SampleValue {
  return column instanceof NumberColumn ? column.data[r]! : column[r]!;
}

const OID: Record<ColumnType, number> = { int2: 21, int4: 23, int8: 20, uint64: 20, float4: 700, float8: 701, text: 25, bytea: 17 };
const FIXED: Partial<Record<ColumnType, number>> = { int2: 2, int4: 4, int8: 8, uint64: 8, float4: 4, float8: 8 };

const TWO_64 = 1n << 64n;
const TWO_63 = 1n << 63n;

/** A uint64 as the int8 that holds its bits (two's complement). */
function int8Of(type: ColumnType, v: SampleValue): bigint {
  const b = typeof v === 'bigint' ? v : BigInt(v as number);
  return type === 'uint64' && b >= TWO_63 ? b - TWO_64 : b;
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


const FIELD_OID: Record<ColumnType, number> = OID;

/**
 * One message table's rows as a binary array of its row type (`unnest($1::<table>[])`): per row the
 * clock columns then the fields, each as (type oid, length, bytes). One parameter and one function
 * scan per table instead of one per column: PostgreSQL sets up one unnest, not twenty.
 */
export function binaryRowArray(
  rowTypeOid: number,
  types: readonly ColumnType[],
  clock: { seq: ArrayLike<number>; time: ArrayLike<number>; received: ArrayLike<number>; boot: ReadonlyArray<number | null>; session: ArrayLike<number>; source: readonly string[] },
  values: readonly BatchColumn[],
  /** Per row: its columns at or beyond this are NULL (narrow-batch.ts MessageGroup.carried). */
  carried: ArrayLike<number>,
): Buffer {
  const n = clock.seq.length;
  const ncols = 6 + types.length;
  // Sizes first: fixed columns are known; text and bytea are measured.
  const encoded: Array<Array<Buffer | undefined>> = types.map((t, c) =>
    t === 'text' || t === 'bytea'
      ? (values[c] as SampleValue[]).map((v, r) =>
          c >= carried[r]! ? undefined : t === 'text' ? Buffer.from(v as string, 'utf8') : Buffer.from((v as Uint8Array).buffer, (v as Uint8Array).byteOffset, (v as Uint8Array).byteLength),
        )
      : [],
  );
  let size = 20;
  for (let r = 0; r < n; r++) {
    let row = 4 + ncols * 8 + 8 + 8 + 8 + (clock.boot[r] === null ? 0 : 8) + 4 + 1;
    const carriedColumns = carried[r]!;
    for (let c = 0; c < carriedColumns; c++) {
      const fixed = FIXED[types[c]!];
      row += fixed ?? encoded[c]![r]!.length;
    }
    size += 4 + row;
  }
  const buf = Buffer.allocUnsafe(size);
  // A DataView's setters compile to plain stores; Buffer's write*BE check their arguments on every call,
  // which was half of this function's time at ~15 columns × 500 rows per message.
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  dv.setInt32(0, 1);
  dv.setInt32(4, 0);
  dv.setInt32(8, rowTypeOid);
  dv.setInt32(12, n);
  dv.setInt32(16, 1);
  let pos = 20;
  const oids = types.map((t) => FIELD_OID[t]);
  for (let r = 0; r < n; r++) {
    const lengthAt = pos;
    dv.setInt32(pos + 4, ncols);
    dv.setInt32(pos + 8, 20);
    dv.setInt32(pos + 12, 8);
    setInt8(dv, pos + 16, clock.seq[r]!);
    dv.setInt32(pos + 24, 1184);
    dv.setInt32(pos + 28, 8);
    setInt8(dv, pos + 32, clock.time[r]! - PG_EPOCH_US);
    dv.setInt32(pos + 40, 1184);
    dv.setInt32(pos + 44, 8);
    setInt8(dv, pos + 48, clock.received[r]! - PG_EPOCH_US);
    dv.setInt32(pos + 56, 20);
    pos += 60;
    const boot = clock.boot[r];
    if (boot === null || boot === undefined) {
      dv.setInt32(pos, -1);
      pos += 4;
    } else {
      dv.setInt32(pos, 8);
      setInt8(dv, pos + 4, boot);
      pos += 12;
    }
    dv.setInt32(pos, 23);
    dv.setInt32(pos + 4, 4);
    dv.setInt32(pos + 8, clock.session[r]!);
    dv.setInt32(pos + 12, 18);
    dv.setInt32(pos + 16, 1);
    buf[pos + 20] = clock.source[r]!.charCodeAt(0);
    pos += 21;
    const carriedColumns = carried[r]!;
    for (let c = 0; c < types.length; c++) {
      const type = types[c]!;
      const column = values[c]!;
      dv.setInt32(pos, oids[c]!);
      if (c >= carriedColumns) {
        dv.setInt32(pos + 4, -1);
        pos += 8;
        continue;
      }
      switch (type) {
        case 'int2':
          dv.setInt32(pos + 4, 2);
          dv.setInt16(pos + 8, (column as NumberColumn).data[r]!);
          pos += 10;
          break;
        case 'int4':
          dv.setInt32(pos + 4, 4);
          dv.setInt32(pos + 8, (column as NumberColumn).data[r]!);
          pos += 12;
          break;
        case 'int8':
        case 'uint64': {
          const v = (column as SampleValue[])[r]!;
          dv.setInt32(pos + 4, 8);
          if (typeof v === 'number') setInt8(dv, pos + 8, v);
          else dv.setBigInt64(pos + 8, int8Of(type, v));
          pos += 16;
          break;
        }
        case 'float4':
          dv.setInt32(pos + 4, 4);
          dv.setFloat32(pos + 8, (column as NumberColumn).data[r]!);
          pos += 12;
          break;
        case 'float8':
          dv.setInt32(pos + 4, 8);
          dv.setFloat64(pos + 8, (column as NumberColumn).data[r]!);
          pos += 16;
          break;
        default: {
          const b = encoded[c]![r]!;
          dv.setInt32(pos + 4, b.length);
          b.copy(buf, pos + 8);
          pos += 8 + b.length;
        }
      }
    }
    dv.setInt32(lengthAt, pos - lengthAt - 4);
  }
  return buf;
}

/** An integral number (|v| < 2^53) as a big-endian int8. */
function setInt8(dv: DataView, pos: number, v: number): void {
  const hi = Math.floor(v / 4294967296);
  dv.setInt32(pos, hi);
  dv.setUint32(pos + 4, v - hi * 4294967296);
}
