import type { RawBuilder } from 'kysely';
import type pg from 'pg';
import type { Executor } from '../db/executor.ts';

/**
 * Where a hot statement runs: the Kysely executor, and the pg pool behind it when there is one
 * (PostgreSQL; absent on PGlite and inside a transaction's executor).
 */
export interface HotTarget {
  db: Executor;
  pool?: pg.Pool;
}

/**
 * Run one of the delivery path's few statements as a named prepared statement: PostgreSQL parses and
 * plans it once per connection instead of on every call. The dispatch and record statements are large
 * CTEs whose planning cost as much as their execution on every dispatch. Same SQL, same parameters and
 * rows as through Kysely; `name` must belong to this one statement text. PGlite: through Kysely.
 */
export async function runHot<R>(target: HotTarget, name: string, query: RawBuilder<R>): Promise<R[]> {
  const compiled = query.compile(target.db);
  if (!target.pool) return (await target.db.executeQuery<R>(compiled)).rows;
  const result = await target.pool.query({ name, text: compiled.sql, values: compiled.parameters as unknown[] });
  return result.rows as R[];
}
