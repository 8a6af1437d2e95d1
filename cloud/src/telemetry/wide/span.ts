import { sql } from 'kysely';
import type { Executor } from '../../db/executor.ts';

/**
 * A wide dataset's first and last row time in µs (its table's key: two index probes), or undefined for a
 * table with no row. Every row holds at least one channel's value, so these are its first and last samples.
 */
export async function wideSpan(db: Executor, table: string): Promise<{ first: number; last: number } | undefined> {
  const result = await sql<{ first: number | null; last: number | null }>`
    select round(date_part('epoch', min(time)) * 1000000)::float8 as first, round(date_part('epoch', max(time)) * 1000000)::float8 as last
    from ${sql.table(table)}`.execute(db);
  const row = result.rows[0];
  return row && row.first !== null && row.last !== null ? { first: row.first, last: row.last } : undefined;
}
