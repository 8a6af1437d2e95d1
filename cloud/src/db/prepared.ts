import type { CompiledQuery, RawBuilder } from 'kysely';
import type pg from 'pg';
import type { Executor } from './executor.ts';

/**
 * Where a hot statement runs: the Kysely executor, and the pg pool behind it when there is one
 * (PostgreSQL; absent on PGlite and inside a transaction's executor).
 */
export interface HotTarget {
  db: Executor;
  pool?: pg.Pool;
}

/**
 * Run one of the few statements on a hot path (dispatch, the delivery engine's lease and record, a
 * MAVLink stream's rows) as a named prepared statement: PostgreSQL parses and plans it once per
 * connection instead of on every call. They are large CTEs whose parse and plan cost as much as their
 * execution (a MAVLink batch's insert: half of PostgreSQL's CPU per batch, measured by bench:mavlink).
 * Same SQL, same parameters and rows as through Kysely; `name` must belong to this one statement text
 * for the life of the process (node-postgres refuses a name reused with another text). PGlite, or no
 * pool: through Kysely, unnamed.
 */
export async function runHot<R>(target: HotTarget, name: string, query: RawBuilder<R> | CompiledQuery<R>): Promise<R[]> {
  const compiled = 'compile' in query ? query.compile(target.db) : query;
  if (!target.pool) return (await target.db.executeQuery<R>(compiled)).rows;
  const result = await target.pool.query({ name, text: compiled.sql, values: compiled.parameters as unknown[] });
  return result.rows as R[];
}
