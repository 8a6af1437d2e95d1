import { sql } from 'kysely';
import type pg from 'pg';
import { copyRowsOut, copyStatementText } from '../../db/copy-out.ts';
import type { Executor } from '../../db/executor.ts';
import { ServiceError, notFound } from '../../platform/errors.ts';
import { samplesFromBuckets } from '../series/downsample.ts';
import { addSample, m4Of, m4sFromPacked, m4sInKeyOrder, mergeParts, type M4 } from '../series/m4.ts';
import { bucketsForBudget, MAX_CHANNELS_PER_QUERY, READS_PER_QUERY, type SeriesResult } from '../series/series.ts';
import { mapLimit } from '../../platform/map-limit.ts';
import { planQuery, type QueryPlan } from './query-plan.ts';
import { ROLLUP_WIDTHS_MS } from './rollup-levels.ts';
import { columnValueSql, timestampToUs, usToTimestamp } from '../sql/sql-time.ts';
import { float8ArrayFromBinary, numberArrayLiteral } from '../sql/sql-arrays.ts';
import { packedM4Sql } from '../sql/packed-m4.ts';
import type { WideColumnInfo } from './wide-batch.ts';

export interface WideQuery {
  datasetId: string;
  table: string;
  /** Requested channel ids, in request order. */
  channelIds: readonly string[];
  /** Range in µs: from inclusive, to exclusive; undefined = unbounded. */
  from: number | undefined;
  to: number | undefined;
  maxPoints: number;
}

const CHANNEL_INDEX = /^(0|[1-9][0-9]{0,8})$/;

/** Resolve requested channel ids to numeric columns, failing on the first that cannot be charted. */
export function resolveQueryColumns(channelIds: readonly string[], columns: ReadonlyMap<number, WideColumnInfo>): WideColumnInfo[] {
  if (channelIds.length === 0) throw new ServiceError('invalid_request', 'channel_ids is empty: name at least one channel index');
  if (channelIds.length > MAX_CHANNELS_PER_QUERY) {
    throw new ServiceError('invalid_request', `channel_ids names ${channelIds.length} channels; at most ${MAX_CHANNELS_PER_QUERY} per query`);
  }
  return channelIds.map((id, i) => {
    if (!CHANNEL_INDEX.test(id)) {
      throw new ServiceError('invalid_request', `channel_ids[${i}]: "${id}" is not a channel index; wide channels are addressed by the N of ch_N, not by UUID or name`);
    }
    const column = columns.get(Number(id));
    if (!column) throw notFound(`channel_ids[${i}]: channel ${id} (ch_${id}) has no physical column in this dataset`);
    if (!column.numeric) {
      throw new ServiceError('invalid_request', `channel_ids[${i}]: channel ${id} stores ${column.physicalType}; Query reads numeric and boolean channels only`);
    }
    return column;
  });
}

/**
 * Per channel, at most `maxPoints` samples keeping the chart's shape, and the exact raw count.
 *
 * Channels are read together, not one statement each: one statement finds every channel's extent, and
 * channels whose extents give the same plan (the usual case: a wide dataset's channels share its rows)
 * are read by one statement per plan. Raw rows are scanned once for all of them; rollup rows, which are
 * per channel, are split across at most READS_PER_QUERY statements so that both cores work without a
 * many-channel Query taking the pool. With `pool` (node-postgres) each statement is a binary COPY whose
 * rows are folded into buckets here; without it (PGlite) the buckets are grouped in SQL (`m4Buckets`).
 */
export async function queryWide(db: Executor, query: WideQuery, columns: readonly WideColumnInfo[], pool?: pg.Pool): Promise<SeriesResult[]> {
  if (query.from !== undefined && query.to !== undefined && query.from > query.to) {
    throw new ServiceError('invalid_request', '`from` is after `to`');
  }
  const extents = await channelExtents(db, query.datasetId, columns);
  const maxBuckets = bucketsForBudget(query.maxPoints);
  const groups = new Map<string, { plan: QueryPlan; columns: WideColumnInfo[] }>();
  for (const column of new Map(columns.map((c) => [c.index, c])).values()) {
    const extent = extents.get(column.index);
    if (!extent) continue;
    const start = Math.max(query.from ?? -Infinity, extent.first);
    const end = Math.min(query.to ?? Infinity, extent.last + 1);
    if (!(end > start)) continue;
    const plan = planQuery(start, end, maxBuckets, extent.count / (extent.last - extent.first + 1));
    const key = JSON.stringify(plan);
    const group = groups.get(key);
    if (group) group.columns.push(column);
    else groups.set(key, { plan, columns: [column] });
  }
  const reads = [...groups.values()].flatMap(({ plan, columns }) =>
    splitEvenly(columns, plan.blocks.length > 0 ? READS_PER_QUERY : 1).map((part) => ({ plan, columns: part })),
  );
  const buckets = new Map<number, M4[]>();
  await mapLimit(reads, READS_PER_QUERY, async ({ plan, columns }) => {
    for (const [channel, m4s] of await m4Buckets(db, pool, query, columns, plan)) buckets.set(channel, m4s);
  });
  return columns.map((column, i) => {
    const m4s = buckets.get(column.index) ?? [];
    return { channelId: query.channelIds[i]!, samples: samplesFromBuckets(m4s, query.maxPoints), rawPoints: m4s.reduce((n, b) => n + b.count, 0) };
  });
}

/** `items` in at most `parts` runs of near-equal length, order kept. */
function splitEvenly<T>(items: readonly T[], parts: number): T[][] {
  const n = Math.min(parts, items.length);
  return Array.from({ length: n }, (_, k) => items.slice(Math.floor((k * items.length) / n), Math.floor(((k + 1) * items.length) / n)));
}

/**
 * Each channel's extent from the coarsest rollups (one row per day of data), in one statement: narrows
 * unbounded or oversized ranges to where samples are, so the buckets are spent on data. A channel
 * without samples has no entry.
 */
async function channelExtents(db: Executor, datasetId: string, columns: readonly WideColumnInfo[]): Promise<Map<number, { first: number; last: number; count: number }>> {
  const coarsest = ROLLUP_WIDTHS_MS[ROLLUP_WIDTHS_MS.length - 1]!;
  const result = await sql<{ channel: number; first: number; last: number; count: number }>`
    select channel, min(first_time)::float8 as first, max(last_time)::float8 as last, sum(count)::float8 as count from telemetry_rollups
    where dataset_id = ${datasetId}::uuid and channel = any(${numberArrayLiteral(columns.map((c) => c.index))}::int4[]) and width_ms = ${coarsest}::int4
    group by channel
  `.execute(db);
  return new Map(result.rows.map((r) => [r.channel, r]));
}

/**
 * M4 per query bucket of each channel, in time order. With a node-postgres pool the plan's rows come out
 * by binary COPY and are folded here: a plan of raw rows only one row per instant with every channel in
 * it (`foldRawRows`), a plan with rollups its rollup rows and edge samples as partial aggregates
 * (`foldRollupRows`). PGlite, which has no COPY to a client, groups them in SQL (`groupedInSql`).
 */
async function m4Buckets(db: Executor, pool: pg.Pool | undefined, query: WideQuery, columns: readonly WideColumnInfo[], plan: QueryPlan): Promise<Map<number, M4[]>> {
  if (pool === undefined) return groupedInSql(db, query, columns, plan);
  const byKey = new Map<number, Map<number, M4>>(columns.map((c) => [c.index, new Map()]));
  if (plan.blocks.length === 0) await foldRawRows(db, pool, query, columns, plan, byKey);
  else await foldRollupRows(db, pool, query, columns, plan, byKey);
  return new Map([...byKey].map(([channel, m4s]) => [channel, m4sInKeyOrder(m4s)]));
}

/**
 * The plan's rollup rows and raw rows grouped per query bucket in one statement, on PGlite.
 * Arrays compare element by element in float8 order, so min(array[value, time]) is the minimum with the
 * earliest time among ties; max(array[value, -time]) likewise for the maximum.
 *
 * Each part groups the output of a subquery behind `offset 0`. Without that fence the planner estimates
 * one group per row (the bucket expression is built on the unique time column), sorts the rows for a
 * group aggregate, and a 2 s window of 40,000 rows cost 50 ms instead of 25 ms; behind it, it assumes
 * few groups and hashes them, which is right: at most the plan's bucket count.
 *
 * The answer is one row per channel: its buckets as one two-dimensional float8 array in PostgreSQL's
 * binary array format (`array_send`), in bucket order. A row per bucket cost the server more than the statement did:
 * a thousand rows of ten float8 texts per channel to parse, and the garbage of it (8 channels: ~16 ms
 * of parsing and ~36 ms of collection per Query, docs/PERFORMANCE.md).
 */
async function groupedInSql(db: Executor, query: WideQuery, columns: readonly WideColumnInfo[], plan: QueryPlan): Promise<Map<number, M4[]>> {
  const parts = [];
  if (plan.blocks.length > 0) {
    parts.push(sql`
      select r.c, r.qb, sum(r.count)::float8 as n,
             min(array[r.min_value, r.min_time::float8]) as mn, max(array[r.max_value, -r.max_time::float8]) as mx,
             min(array[r.first_time::float8, r.first_value]) as fst, max(array[r.last_time::float8, r.last_value]) as lst
      from (
        select r.channel::float8 as c, ((r.bucket - ${plan.origin}::int8) / ${plan.width}::int8)::float8 as qb, r.*
        from unnest(${`{${plan.blocks.map((b) => b.widthMs).join(',')}}`}::int4[],
                    ${`{${plan.blocks.map((b) => b.from).join(',')}}`}::int8[],
                    ${`{${plan.blocks.map((b) => b.to).join(',')}}`}::int8[]) as b(w, lo, hi)
        join telemetry_rollups as r
          on r.dataset_id = ${query.datasetId}::uuid and r.channel = any(${numberArrayLiteral(columns.map((c) => c.index))}::int4[])
         and r.width_ms = b.w and r.bucket >= b.lo and r.bucket < b.hi
        offset 0
      ) as r
      group by 1, 2`);
  }
  if (plan.raw.length > 0) {
    parts.push(sql`
      select x.c, x.qb, count(*)::float8 as n,
             min(array[x.v, x.t]) as mn, max(array[x.v, -x.t]) as mx, min(array[x.t, x.v]) as fst, max(array[x.t, x.v]) as lst
      from (select s.c, floor((s.t - ${plan.origin}::float8) / ${plan.width}::float8) as qb, s.t, s.v from (${rawSamplesSql(query, columns, plan)}) as s offset 0) as x
      group by 1, 2`);
  }
  const result = await sql<{ c: number; buckets: Uint8Array }>`
    select c, ${packedM4Sql('qb')} as buckets
    from (${sql.join(parts, sql` union all `)}) as m
    group by c`.execute(db);
  return new Map(result.rows.map((row) => [Number(row.c), m4sFromPacked(float8ArrayFromBinary(row.buckets))]));
}

/**
 * The plan's raw rows, streamed out by binary COPY and folded into their buckets here, in one pass over
 * the rows for every channel. PostgreSQL only scans and sends: a row costs it a few field copies
 * instead of four array aggregates per channel, which cost it ~235 ms of CPU for a 2 s window of eight
 * channels (320,000 samples) grouped in SQL (docs/PERFORMANCE.md).
 */
async function foldRawRows(db: Executor, pool: pg.Pool, query: WideQuery, columns: readonly WideColumnInfo[], plan: QueryPlan, out: Map<number, Map<number, M4>>): Promise<void> {
  const values = columns.map((c) => columnValueSql(`w.${c.name}`, c.physicalType));
  // One column: its empty rows stay in the server. Several: a row is sent if any of them has a value.
  const present = sql.join(columns.map((c) => sql`${sql.ref(`w.${c.name}`)} is not null`), sql` or `);
  const statement = sql`select w.time, ${sql.join(values)} from ${sql.table(query.table)} as w where (${rawRangesSql(plan)}) and (${present})`;
  const buckets = columns.map((c) => out.get(c.index)!);
  // Rows mostly arrive in time order, so a channel's next sample is nearly always in the bucket its last
  // one went to: that bucket is held at hand, and the map is asked only when the key changes.
  const lastKey = columns.map(() => Number.NaN);
  const lastM4 = columns.map((): M4 | undefined => undefined);
  const { origin, width } = plan;
  await copyRowsOut(pool, copyStatementText(statement, db), (row) => {
    const t = row.timestampUs()!;
    const key = Math.floor((t - origin) / width);
    for (let i = 0; i < buckets.length; i++) {
      const v = row.float8();
      if (v === null) continue;
      if (key === lastKey[i]) {
        addSample(lastM4[i]!, t, v);
        continue;
      }
      let m4 = buckets[i]!.get(key);
      if (m4) addSample(m4, t, v);
      else buckets[i]!.set(key, (m4 = m4Of(t, v)));
      lastKey[i] = key;
      lastM4[i] = m4;
    }
  });
}

/**
 * A plan with rollups: its rollup rows, and its raw edge samples as one-sample aggregates, streamed out by
 * binary COPY in one statement and merged into their query buckets here. Grouping them in SQL took
 * PostgreSQL ~100 ms of CPU for eight channels' whole range (50,000 rollup rows): four array aggregates
 * per row, whose hash table grows with the channels. Sent as rows, they cost it a scan and field copies.
 * Each row: channel (int4), bucket start (µs) or sample time, count, min value and time, max value and
 * time, first time and value, last time and value; times and counts as the int8 they are stored as, values
 * float8 (cast to float8, eight channels' rollup rows took psql 38 ms to receive, as stored 33 ms).
 */
async function foldRollupRows(db: Executor, pool: pg.Pool, query: WideQuery, columns: readonly WideColumnInfo[], plan: QueryPlan, out: Map<number, Map<number, M4>>): Promise<void> {
  const blocks = sql.join(
    plan.blocks.map((b) => sql`(r.width_ms = ${sql.lit(b.widthMs)} and r.bucket >= ${sql.lit(b.from)} and r.bucket < ${sql.lit(b.to)})`),
    sql` or `,
  );
  const parts = [
    sql`select r.channel, r.bucket, r.count, r.min_value, r.min_time, r.max_value, r.max_time, r.first_time, r.first_value, r.last_time, r.last_value
        from telemetry_rollups as r
        where r.dataset_id = ${sql.lit(query.datasetId)}::uuid and r.channel in (${sql.join(columns.map((c) => sql.lit(c.index)))}) and (${blocks})`,
  ];
  if (plan.raw.length > 0) {
    parts.push(sql`select s.c, s.t, 1::int8, s.v, s.t, s.v, s.t, s.t, s.v, s.t, s.v
                   from (select x.c::int4 as c, x.t::int8 as t, x.v from (${rawSamplesSql(query, columns, plan)}) as x) as s`);
  }
  const { origin, width } = plan;
  // Consecutive rows are mostly of one channel and query bucket (an index scan returns them in key order,
  // a sequential scan as ingest wrote them, a batch's buckets channel by channel): the bucket being filled
  // is held at hand, and the map is asked only when the channel or key changes.
  let lastChannel = Number.NaN;
  let lastKey = Number.NaN;
  let held: M4 | undefined;
  await copyRowsOut(pool, copyStatementText(sql.join(parts, sql` union all `), db), (row) => {
    const channel = row.int4()!;
    const key = Math.floor((row.int8()! - origin) / width);
    const count = row.int8()!;
    const minV = row.float8()!;
    const minT = row.int8()!;
    const maxV = row.float8()!;
    const maxT = row.int8()!;
    const firstT = row.int8()!;
    const firstV = row.float8()!;
    const lastT = row.int8()!;
    const lastV = row.float8()!;
    if (channel !== lastChannel || key !== lastKey) {
      const byKey = out.get(channel)!;
      held = byKey.get(key);
      lastChannel = channel;
      lastKey = key;
      if (held === undefined) {
        byKey.set(key, (held = { count, minV, minT, maxV, maxT, firstT, firstV, lastT, lastV }));
        return;
      }
    }
    mergeParts(held!, count, minV, minT, maxV, maxT, firstT, firstV, lastT, lastV);
  });
}

// The raw parts are shared by the SQL grouping and the COPY reads. Their bounds are inlined as literals
// (`sql.lit`), not bound: COPY takes no parameters, and the same text must serve both.

/** The plan's raw ranges over `w.time`. */
function rawRangesSql(plan: QueryPlan) {
  return sql.join(
    plan.raw.map((r) => sql`(w.time >= ${usToTimestamp(sql.lit(r.from))} and w.time < ${usToTimestamp(sql.lit(r.to))})`),
    sql` or `,
  );
}

/** The plan's raw samples as (c, t, v) rows: one scan of the rows for every channel, each row unpivoted into (channel, value) pairs. */
function rawSamplesSql(query: WideQuery, columns: readonly WideColumnInfo[], plan: QueryPlan) {
  const ranges = rawRangesSql(plan);
  if (columns.length === 1) {
    const [c] = columns as [WideColumnInfo];
    return sql`select ${sql.lit(c.index)}::float8 as c, ${timestampToUs('w.time')} as t, ${columnValueSql(`w.${c.name}`, c.physicalType)} as v
               from ${sql.table(query.table)} as w where (${ranges}) and ${sql.ref(`w.${c.name}`)} is not null`;
  }
  return sql`select p.c, ${timestampToUs('w.time')} as t, p.v
             from ${sql.table(query.table)} as w
             cross join lateral (values ${sql.join(columns.map((c) => sql`(${sql.lit(c.index)}::float8, ${columnValueSql(`w.${c.name}`, c.physicalType)})`))}) as p(c, v)
             where (${ranges}) and p.v is not null`;
}

/** Rows of a wide table as live followers read them: time in µs and one value per requested column. */
export interface WideTailRow {
  t: number;
  v: Array<number | null>;
}

/**
 * The newest rows of a wide dataset's table, for live followers (telemetry/live): rows after `afterUs`
 * in time order (at most `limit`), or with `afterUs` undefined the last row alone. Read by the table's
 * key (time), so the cost is the rows returned. A row the batch overwrote at an older time is not
 * read again: live followers see what arrives at the head, a reset or a Query the rest.
 */
export async function wideTableTail(db: Executor, table: string, columns: readonly WideColumnInfo[], afterUs: number | undefined, limit: number): Promise<WideTailRow[]> {
  const values = columns.length === 0 ? sql`array[]::float8[]` : sql`array[${sql.join(columns.map((c) => columnValueSql(`w.${c.name}`, c.physicalType)))}]`;
  const where = afterUs === undefined ? sql`` : sql`where w.time > ${usToTimestamp(afterUs)}`;
  const order = afterUs === undefined ? sql`order by w.time desc limit 1` : sql`order by w.time limit ${limit}::int4`;
  const result = await sql<WideTailRow>`select ${timestampToUs('w.time')} as t, ${values} as v from ${sql.table(table)} as w ${where} ${order}`.execute(db);
  return result.rows;
}
