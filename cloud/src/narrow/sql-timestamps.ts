import { sql, type RawBuilder } from 'kysely';
import { numberArrayLiteral } from '../telemetry/sql-arrays.ts';
import { usToTimestamp } from '../telemetry/sql-time.ts';

/** µs from the Unix epoch to PostgreSQL's epoch (2000-01-01), the origin of binary timestamps. */
const PG_EPOCH_US = 946_684_800_000_000;
const TIMESTAMPTZ_OID = 1184;

/**
 * A timestamptz[] parameter from µs since the Unix epoch. With node-postgres it travels in binary
 * (int8 µs since 2000-01-01 per element): PostgreSQL stores it as is, without the per-row interval
 * arithmetic of `timestamptz 'epoch' + t * interval '1 microsecond'`, which costs measurably at
 * hundreds of thousands of rows per second. PGlite takes text parameters only: there the times go as
 * int8 and are converted in SQL. Use the result as an unnest argument; `column` is how the caller
 * refers to the unnested element, and `value` the timestamptz expression to select.
 */
export function timestamptzArray(us: ArrayLike<number>, binary: boolean, column: string): { param: RawBuilder<unknown>; value: RawBuilder<Date> } {
  if (!binary) return { param: sql`${numberArrayLiteral(us)}::int8[]`, value: usToTimestamp(sql.ref(column)) };
  return { param: sql`${binaryTimestamptzArray(us)}::timestamptz[]`, value: sql<Date>`${sql.ref(column)}` };
}

/** PostgreSQL's binary timestamptz[] of µs since the Unix epoch (node-postgres sends a Buffer as binary). */
export function binaryTimestamptzArray(us: ArrayLike<number>): Buffer {
  const n = us.length;
  const buf = Buffer.allocUnsafe(20 + n * 12);
  buf.writeInt32BE(1, 0);
  buf.writeInt32BE(0, 4);
  buf.writeInt32BE(TIMESTAMPTZ_OID, 8);
  buf.writeInt32BE(n, 12);
  buf.writeInt32BE(1, 16);
  let pos = 20;
  for (let i = 0; i < n; i++) {
    const v = us[i]! - PG_EPOCH_US;
    // Two 32-bit halves: exact for every safe integer, negative ones (before 2000) included.
    const hi = Math.floor(v / 4294967296);
    buf.writeInt32BE(8, pos);
    buf.writeInt32BE(hi, pos + 4);
    buf.writeUInt32BE(v - hi * 4294967296, pos + 8);
    pos += 12;
  }
  return buf;
}
