import { sql, type RawBuilder } from 'kysely';

/**
 * Times cross the SQL boundary as integer microseconds since the Unix epoch: exact, cheap to send in
 * arrays, and free of time-zone text. These helpers convert on the SQL side.
 */

/** timestamptz from a µs expression (integer arithmetic on the interval, exact below 2^53 µs). */
export function usToTimestamp(us: RawBuilder<unknown> | number): RawBuilder<Date> {
  const value = typeof us === 'number' ? sql`${us}::int8` : us;
  return sql<Date>`(timestamptz 'epoch' + (${value}) * interval '1 microsecond')`;
}

/**
 * µs since the epoch of a timestamptz column, as float8. date_part (unlike extract) stays in float8,
 * and (µs / 1e6) × 1e6 rounds back to the exact integer for any time below 2^53 µs.
 */
export function timestampToUs(column: string): RawBuilder<number> {
  return sql<number>`round(date_part('epoch', ${sql.ref(column)}) * 1000000)`;
}

/** A wide column's value as float8 for rollups and charts: booleans as 0 and 1. */
export function columnValueSql(column: string, physicalType: string): RawBuilder<number> {
  return physicalType === 'boolean' ? sql<number>`(${sql.ref(column)})::int::float8` : sql<number>`(${sql.ref(column)})::float8`;
}
