import { sql, type RawBuilder } from 'kysely';

/**
 * A channel's M4 buckets packed into one bytea, in the layout an `M4Grid` (series/m4-grid.ts `mergePacked`) folds:
 * per bucket its key, count, min (value, time), max (value, time), first (time, value) and last (time,
 * value), in key order. Aggregates over rows with the columns `n` (count) and `mn`, `mx`, `fst`, `lst`:
 * the extremes as the arrays min(array[v, t]), max(array[v, -t]), min(array[t, v]), max(array[t, v]).
 */
export function packedM4Sql(key: string): RawBuilder<Uint8Array> {
  return sql<Uint8Array>`array_send(array_agg(array[${sql.ref(key)}, n, mn[1], mn[2], mx[1], -mx[2], fst[1], fst[2], lst[1], lst[2]] order by ${sql.ref(key)}))`;
}
