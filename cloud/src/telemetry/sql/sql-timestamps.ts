import { sql, type RawBuilder } from 'kysely';
import { binaryTimestamptzArray, numberArrayLiteral } from './sql-arrays.ts';
import { usToTimestamp } from './sql-time.ts';

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

