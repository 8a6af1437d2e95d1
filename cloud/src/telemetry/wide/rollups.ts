import { sql, type RawBuilder } from 'kysely';
import type { Executor } from '../../db/executor.ts';
import { addSample, m4Of, mergeM4, type M4 } from '../series/m4.ts';
import { ROLLUP_WIDTHS_MS, FINEST_WIDTH_US, bucketStart } from './rollup-levels.ts';
import { numberArrayLiteral, type ArrayEncoder } from '../sql/sql-arrays.ts';
import { columnValueSql, timestampToUs, usToTimestamp } from '../sql/sql-time.ts';

/**
 * Rollups: for every numeric channel of a wide dataset, one row per bucket of each width in
 * ROLLUP_WIDTHS_MS with the bucket's M4 aggregate (count, first, last, min, max with their times).
 * Ingest keeps them in the same transaction as the raw write, so they are exactly the aggregate of the
 * raw rows at every commit; Query reads them instead of the raw rows for all but the range's edges.
 */
export interface RollupRow extends M4 {
  channel: number;
  widthMs: number;
  bucket: number;
}

/**
 * Aggregates of the given samples at every width. `times` ascending; sample i exists where
 * `mask[i]` is set. Finer buckets are folded into coarser ones, so the work is one pass over the
 * samples plus one over the (few) finest aggregates per width.
 */
export function rollupDeltas(channel: number, times: ArrayLike<number>, values: ArrayLike<number>, mask: ArrayLike<number>): RollupRow[] {
  const out: RollupRow[] = [];
  let level: RollupRow[] = [];
  let current: RollupRow | undefined;
  for (let i = 0; i < times.length; i++) {
    if (!mask[i]) continue;
    const t = times[i]!;
    const v = values[i]!;
    const bucket = bucketStart(t, FINEST_WIDTH_US);
    if (current && current.bucket === bucket) addSample(current, t, v);
    else {
      current = { channel, widthMs: ROLLUP_WIDTHS_MS[0], bucket, ...m4Of(t, v) };
      level.push(current);
    }
  }
  out.push(...level);
  for (let w = 1; w < ROLLUP_WIDTHS_MS.length; w++) {
    const widthMs = ROLLUP_WIDTHS_MS[w]!;
    const coarser: RollupRow[] = [];
    let into: RollupRow | undefined;
    for (const fine of level) {
      const bucket = bucketStart(fine.bucket, widthMs * 1000);
      if (into && into.bucket === bucket) mergeM4(into, fine);
      else {
        into = { ...fine, widthMs, bucket };
        coarser.push(into);
      }
    }
    out.push(...coarser);
    level = coarser;
  }
  return out;
}

/**
 * The statement folding aggregates of new samples into the stored rollups (insert, or merge into the
 * existing row). `guard`, when given, is a condition every row must meet (the single-statement ingest
 * path skips the rollups when its batch turned out to overlap stored rows). Rows arrive ordered by
 * (channel, width, bucket), so concurrent writers lock rollup rows in the same order.
 */
export function rollupUpsert(target: { datasetId: string; arrays: ArrayEncoder }, rows: readonly RollupRow[], guard?: RawBuilder<unknown>) {
  const { int4, int8, float8 } = target.arrays;
  const col = <K extends keyof RollupRow>(k: K) => rows.map((r) => r[k] as number);
  return sql`
    insert into telemetry_rollups as r
      (dataset_id, channel, width_ms, bucket, count, min_value, min_time, max_value, max_time, first_time, first_value, last_time, last_value)
    select ${target.datasetId}::uuid, u.*
    from unnest(${int4(col('channel'))}::int4[], ${int4(col('widthMs'))}::int4[],
                ${int8(col('bucket'))}::int8[], ${int8(col('count'))}::int8[],
                ${float8(col('minV'))}::float8[], ${int8(col('minT'))}::int8[],
                ${float8(col('maxV'))}::float8[], ${int8(col('maxT'))}::int8[],
                ${int8(col('firstT'))}::int8[], ${float8(col('firstV'))}::float8[],
                ${int8(col('lastT'))}::int8[], ${float8(col('lastV'))}::float8[]) as u
    ${guard ? sql`where ${guard}` : sql``}
    on conflict (dataset_id, channel, width_ms, bucket) do update set
      count = r.count + excluded.count,
      min_value = case when (excluded.min_value, excluded.min_time) < (r.min_value, r.min_time) then excluded.min_value else r.min_value end,
      min_time = case when (excluded.min_value, excluded.min_time) < (r.min_value, r.min_time) then excluded.min_time else r.min_time end,
      max_value = case when (excluded.max_value, r.max_time) > (r.max_value, excluded.max_time) then excluded.max_value else r.max_value end,
      max_time = case when (excluded.max_value, r.max_time) > (r.max_value, excluded.max_time) then excluded.max_time else r.max_time end,
      first_value = case when excluded.first_time < r.first_time then excluded.first_value else r.first_value end,
      first_time = least(excluded.first_time, r.first_time),
      last_value = case when excluded.last_time > r.last_time then excluded.last_value else r.last_value end,
      last_time = greatest(excluded.last_time, r.last_time)`;
}

/** Merge aggregates of new samples into the stored rollups. */
export async function applyRollupDeltas(db: Executor, target: { datasetId: string; arrays: ArrayEncoder }, rows: readonly RollupRow[]): Promise<void> {
  if (rows.length > 0) await rollupUpsert(target, rows).execute(db);
}

/**
 * Rebuild the rollups of the given finest buckets of one channel from the raw rows, then every coarser
 * bucket containing them from the width below. Used when a stored value was overwritten by a different
 * one: a minimum or maximum cannot be "un-merged", so the bucket is recomputed.
 */
export async function recomputeRollups(
  db: Executor,
  target: { datasetId: string; table: string },
  channel: { index: number; name: string; physicalType: string },
  finestBuckets: readonly number[],
): Promise<void> {
  if (finestBuckets.length === 0) return;
  const widthUs = FINEST_WIDTH_US;
  const value = columnValueSql(channel.name, channel.physicalType);
  await sql`
    insert into telemetry_rollups as r
      (dataset_id, channel, width_ms, bucket, count, min_value, min_time, max_value, max_time, first_time, first_value, last_time, last_value)
    select ${target.datasetId}::uuid, ${channel.index}::int4, ${ROLLUP_WIDTHS_MS[0]}::int4, b.bucket, a.n,
           a.mn[1], a.mn[2]::int8, a.mx[1], (-a.mx[2])::int8, a.fst[1]::int8, a.fst[2], a.lst[1]::int8, a.lst[2]
    from unnest(${numberArrayLiteral(finestBuckets)}::int8[]) as b(bucket)
    cross join lateral (
      select count(*) as n, min(array[v, t]) as mn, max(array[v, -t]) as mx, min(array[t, v]) as fst, max(array[t, v]) as lst
      from (
        select ${timestampToUs('w.time')} as t, ${value} as v
        from ${sql.table(target.table)} as w
        where w.time >= ${usToTimestamp(sql`b.bucket`)} and w.time < ${usToTimestamp(sql`b.bucket + ${widthUs}::int8`)}
          and ${sql.ref(`w.${channel.name}`)} is not null
      ) as raw
    ) as a
    where a.n > 0
    on conflict (dataset_id, channel, width_ms, bucket) do update set
      count = excluded.count, min_value = excluded.min_value, min_time = excluded.min_time,
      max_value = excluded.max_value, max_time = excluded.max_time, first_time = excluded.first_time,
      first_value = excluded.first_value, last_time = excluded.last_time, last_value = excluded.last_value
  `.execute(db);

  let finer = ROLLUP_WIDTHS_MS[0] as number;
  for (const widthMs of ROLLUP_WIDTHS_MS.slice(1)) {
    const buckets = [...new Set(finestBuckets.map((b) => bucketStart(b, widthMs * 1000)))];
    await sql`
      insert into telemetry_rollups as r
        (dataset_id, channel, width_ms, bucket, count, min_value, min_time, max_value, max_time, first_time, first_value, last_time, last_value)
      select ${target.datasetId}::uuid, ${channel.index}::int4, ${widthMs}::int4, b.bucket, sum(f.count)::int8,
             (min(array[f.min_value, f.min_time::float8]))[1], (min(array[f.min_value, f.min_time::float8]))[2]::int8,
             (max(array[f.max_value, -f.max_time::float8]))[1], (-(max(array[f.max_value, -f.max_time::float8]))[2])::int8,
             min(f.first_time), (min(array[f.first_time::float8, f.first_value]))[2],
             max(f.last_time), (max(array[f.last_time::float8, f.last_value]))[2]
      from unnest(${numberArrayLiteral(buckets)}::int8[]) as b(bucket)
      join telemetry_rollups as f
        on f.dataset_id = ${target.datasetId}::uuid and f.channel = ${channel.index}::int4 and f.width_ms = ${finer}::int4
       and f.bucket >= b.bucket and f.bucket < b.bucket + ${widthMs * 1000}::int8
      group by b.bucket
      on conflict (dataset_id, channel, width_ms, bucket) do update set
        count = excluded.count, min_value = excluded.min_value, min_time = excluded.min_time,
        max_value = excluded.max_value, max_time = excluded.max_time, first_time = excluded.first_time,
        first_value = excluded.first_value, last_time = excluded.last_time, last_value = excluded.last_value
    `.execute(db);
    finer = widthMs;
  }
}
