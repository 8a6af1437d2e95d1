import type { SampleValue } from './decode.ts';
import type { ColumnType } from './message-tables.ts';
import { float8Text, quotedBytea, quotedText } from '../sql/sql-arrays.ts';

/**
 * Message-table rows as array parameters. With node-postgres, one binary array of the table's row type
 * per table (binaryRowArray): the server stores each value without parsing or casting. PGlite takes
 * text parameters only: there one array literal per column (textColumn).
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

/** PostgreSQL epoch (2000-01-01) in µs since the Unix epoch: binary timestamps count from it. */
const PG_EPOCH_US = 946_684_800_000_000;

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
  values: ReadonlyArray<ReadonlyArray<SampleValue | null>>,
): Buffer {
  const n = clock.seq.length;
  const ncols = 6 + types.length;
  // Sizes first: fixed columns are known; text and bytea are measured.
  const encoded: Array<Array<Buffer | undefined>> = types.map((t, c) =>
    t === 'text' || t === 'bytea'
      ? values[c]!.map((v) => (v === null || v === undefined ? undefined : t === 'text' ? Buffer.from(v as string, 'utf8') : Buffer.from((v as Uint8Array).buffer, (v as Uint8Array).byteOffset, (v as Uint8Array).byteLength)))
      : [],
  );
  let size = 20;
  for (let r = 0; r < n; r++) {
    let row = 4 + ncols * 8 + 8 + 8 + 8 + (clock.boot[r] === null ? 0 : 8) + 4 + 1;
    for (let c = 0; c < types.length; c++) {
      const v = values[c]![r];
      if (v === null || v === undefined) continue;
      const fixed = FIXED[types[c]!];
      row += fixed ?? encoded[c]![r]!.length;
    }
    size += 4 + row;
  }
  const buf = Buffer.allocUnsafe(size);
  buf.writeInt32BE(1, 0);
  buf.writeInt32BE(0, 4);
  buf.writeInt32BE(rowTypeOid, 8);
  buf.writeInt32BE(n, 12);
  buf.writeInt32BE(1, 16);
  let pos = 20;
  const int8 = (v: number) => {
    const hi = Math.floor(v / 4294967296);
    buf.writeInt32BE(hi, pos);
    buf.writeUInt32BE(v - hi * 4294967296, pos + 4);
    pos += 8;
  };
  for (let r = 0; r < n; r++) {
    const lengthAt = pos;
    pos += 4;
    buf.writeInt32BE(ncols, pos);
    pos += 4;
    buf.writeInt32BE(20, pos);
    buf.writeInt32BE(8, pos + 4);
    pos += 8;
    int8(clock.seq[r]!);
    buf.writeInt32BE(1184, pos);
    buf.writeInt32BE(8, pos + 4);
    pos += 8;
    int8(clock.time[r]! - PG_EPOCH_US);
    buf.writeInt32BE(1184, pos);
    buf.writeInt32BE(8, pos + 4);
    pos += 8;
    int8(clock.received[r]! - PG_EPOCH_US);
    buf.writeInt32BE(20, pos);
    const boot = clock.boot[r];
    if (boot === null || boot === undefined) {
      buf.writeInt32BE(-1, pos + 4);
      pos += 8;
    } else {
      buf.writeInt32BE(8, pos + 4);
      pos += 8;
      int8(boot);
    }
    buf.writeInt32BE(23, pos);
    buf.writeInt32BE(4, pos + 4);
    buf.writeInt32BE(clock.session[r]!, pos + 8);
    pos += 12;
    buf.writeInt32BE(18, pos);
    buf.writeInt32BE(1, pos + 4);
    buf[pos + 8] = clock.source[r]!.charCodeAt(0);
    pos += 9;
    for (let c = 0; c < types.length; c++) {
      const type = types[c]!;
      const v = values[c]![r];
      buf.writeInt32BE(FIELD_OID[type], pos);
      if (v === null || v === undefined) {
        buf.writeInt32BE(-1, pos + 4);
        pos += 8;
        continue;
      }
      switch (type) {
        case 'int2':
          buf.writeInt32BE(2, pos + 4);
          buf.writeInt16BE(v as number, pos + 8);
          pos += 10;
          break;
        case 'int4':
          buf.writeInt32BE(4, pos + 4);
          buf.writeInt32BE(v as number, pos + 8);
          pos += 12;
          break;
        case 'int8':
        case 'uint64':
          buf.writeInt32BE(8, pos + 4);
          pos += 8;
          if (typeof v === 'number') int8(v);
          else {
            buf.writeBigInt64BE(int8Of(type, v), pos);
            pos += 8;
          }
          break;
        case 'float4':
          buf.writeInt32BE(4, pos + 4);
          buf.writeFloatBE(v as number, pos + 8);
          pos += 12;
          break;
        case 'float8':
          buf.writeInt32BE(8, pos + 4);
          buf.writeDoubleBE(v as number, pos + 8);
          pos += 16;
          break;
        default: {
          const b = encoded[c]![r]!;
          buf.writeInt32BE(b.length, pos + 4);
          b.copy(buf, pos + 8);
          pos += 8 + b.length;
        }
      }
    }
    buf.writeInt32BE(pos - lengthAt - 4, lengthAt);
  }
  return buf;
}
