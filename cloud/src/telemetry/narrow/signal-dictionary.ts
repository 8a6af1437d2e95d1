import { sql } from 'kysely';
import type { Executor } from '../../db/executor.ts';
import { arrayLiteral, quotedText } from '../sql/sql-arrays.ts';

/**
 * Signal name ↔ id (narrow_signals). Ids never change once given, so each database's mapping is cached
 * for the life of the process; the set is bounded by the dialect, so the cache is too.
 */
const caches = new WeakMap<object, Map<string, number>>();

function cacheOf(db: Executor): Map<string, number> {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new Map()));
  return cache;
}

/** Ids of `names`, creating the missing ones. The returned map holds at least every name asked for. */
export async function ensureSignalIds(db: Executor, names: Iterable<string>): Promise<ReadonlyMap<string, number>> {
  const cache = cacheOf(db);
  const missing = new Set<string>();
  for (const name of names) if (!cache.has(name)) missing.add(name);
  if (missing.size === 0) return cache;
  // Sorted, so concurrent writers take the unique index's locks in one order and cannot deadlock.
  const list = arrayLiteral([...missing].sort().map(quotedText));
  await sql`insert into narrow_signals (name) select unnest(${list}::text[]) order by 1 on conflict (name) do nothing`.execute(db);
  await load(db, list, cache);
  return cache;
}

/** Ids of the names that exist; unknown names are absent from the result. */
export async function findSignalIds(db: Executor, names: readonly string[]): Promise<ReadonlyMap<string, number>> {
  const cache = cacheOf(db);
  const missing = names.filter((n) => !cache.has(n));
  if (missing.length > 0) await load(db, arrayLiteral(missing.map(quotedText)), cache);
  return cache;
}

/** Names of ids (for listing a dataset's signals). */
export async function signalNames(db: Executor, ids: readonly number[]): Promise<Map<number, string>> {
  if (ids.length === 0) return new Map();
  const result = await sql<{ id: number; name: string }>`
    select id, name from narrow_signals where id = any(${`{${ids.join(',')}}`}::int4[])`.execute(db);
  const cache = cacheOf(db);
  for (const row of result.rows) cache.set(row.name, row.id);
  return new Map(result.rows.map((r) => [r.id, r.name]));
}

async function load(db: Executor, list: string, cache: Map<string, number>): Promise<void> {
  const result = await sql<{ id: number; name: string }>`select id, name from narrow_signals where name = any(${list}::text[])`.execute(db);
  for (const row of result.rows) cache.set(row.name, row.id);
}
