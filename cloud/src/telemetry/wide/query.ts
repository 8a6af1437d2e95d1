import { sql } from 'kysely';
import type pg from 'pg';
import { copyRowsOut, copyStatementText } from '../../db/copy-out.ts';
import type { Executor } from '../../db/executor.ts';
import { ServiceError, notFound } from '../../platform/errors.ts';
import { samplesFromBuckets } from '../series/downsample.ts';
import { M4Grid } from '../series/m4-grid.ts';
import { bucketsForBudget, MAX_CHANNELS_PER_QUERY, READS_PER_QUERY, type SeriesResult } from '../series/series.ts';
import { packGroup, packSlot, readSlot, SLOT_BYTES } from './rollup-packs.ts';
import { mapLimit } from '../../platform/map-limit.ts';
import { planQuery, rawReadRanges, type QueryPlan } from './query-plan.ts';
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
 * are read together. Raw rows are scanned once for all of them; rollups come as packs, a row per bucket
 * holding up to 16 channels (rollup-packs.ts), read once per channel group. At most READS_PER_QUERY
 * statements run at once, so both cores work without a many-channel Query taking the pool. With `pool`
 * (node-postgres) statements are binary COPYs whose rows are folded into buckets here; without it
 * (PGlite) packs are read as rows and raw samples grouped in SQL (`readsOf`).
 */
export async function queryWide(db: Executor, query: WideQuery, columns: readonly WideColumnInfo[], pool?: pg.Pool): Promise<SeriesResult[]> {
  if (query.from !== undefined && query.to !== undefined && query.from > query.to) {
    throw new ServiceError('invalid_request', '`from` is after `to`');
  }
  const extents = await channelExtents(db, query.datasetId, columns);
  const maxBuckets = bucketsForBudget(query.maxPoints);
  const groups = new Map<string, { plan: QueryPlan; density: number; columns: WideColumnInfo[]; out: Map<number, M4Grid> }>();
  for (const column of new Map(columns.map((c) => [c.index, c])).values()) {
    const extent = extents.get(column.index);
    if (!extent) continue;
    const start = Math.max(query.from ?? -Infinity, extent.first);
    const end = Math.min(query.to ?? Infinity, extent.last + 1);
    if (!(end > start)) continue;
    const density = extent.count / (extent.last - extent.first + 1);
    const plan = planQuery(start, end, maxBuckets, density);
    const key = JSON.stringify(plan);
    const group = groups.get(key);
    if (group) group.columns.push(column);
    else groups.set(key, { plan, density, columns: [column], out: new Map() });
  }
  const reads = [...groups.values()].flatMap(({ plan, density, columns, out }) => {
    for (const column of columns) out.set(column.index, new M4Grid(plan.bucketCount));
    return readsOf(db, pool, query, columns, plan, density, out);
  });
  await mapLimit(reads, READS_PER_QUERY, (read) => read());
  const grids = new Map<number, M4Grid>();
  for (const { out } of groups.values()) for (const [index, grid] of out) grids.set(index, grid);
  return columns.map((column, i) => {
    const grid = grids.get(column.index) ?? new M4Grid(0);
    return { channelId: query.channelIds[i]!, samples: samplesFromBuckets(grid, query.maxPoints), rawPoints: grid.total() };
  });
}

/**
 * Each channel's extent from the coarsest rollups (one pack per day of data and channel group), in one
 * statement: narrows unbounded or oversized ranges to where samples are, so the buckets are spent on
 * data. A channel without samples has no entry.
 */
async function channelExtents(db: Executor, datasetId: string, columns: readonly WideColumnInfo[]): Promise<Map<number, { first: number; last: number; count: number }>> {
  const coarsest = ROLLUP_WIDTHS_MS[ROLLUP_WIDTHS_MS.length - 1]!;
  const groups = [...new Set(columns.map((c) => packGroup(c.index)))];
  const result = await sql<{ g: number; data: Uint8Array }>`
    select channel_group as g, data from telemetry_rollup_packs
    where dataset_id = ${datasetId}::uuid and channel_group = any(${numberArrayLiteral(groups)}::int4[]) and width_ms = ${coarsest}::int4
  `.execute(db);
  const extents = new Map<number, { first: number; last: number; count: number }>();
  for (const row of result.rows) {
    const view = new DataView(row.data.buffer, row.data.byteOffset, row.data.byteLength);
    for (const column of columns) {
      if (packGroup(column.index) !== row.g) continue;
      const m4 = readSlot(view, 0, row.data.byteLength, packSlot(column.index));
      if (!m4) continue;
      const extent = extents.get(column.index);
      if (!extent) extents.set(column.index, { first: m4.firstT, last: m4.lastT, count: m4.count });
      else {
        extent.first = Math.min(extent.first, m4.firstT);
        extent.last = Math.max(extent.last, m4.lastT);
        extent.count += m4.count;
      }
    }
  }
  return extents;
}

/**
 * The statements reading a plan's buckets into `out` (channel → its grid of the plan's buckets): one per channel
 * group for the rollup packs, and for the raw rows (edges narrower than the finest rollup width, or the
 * whole range when it is read raw) one, or two when they are many (`rawReadRanges`). They fill one grid
 * per channel and may run at once: each merges row by row.
 */
function readsOf(db: Executor, pool: pg.Pool | undefined, query: WideQuery, columns: readonly WideColumnInfo[], plan: QueryPlan, density: number, out: Map<number, M4Grid>): Array<() => Promise<void>> {
  const reads: Array<() => Promise<void>> = [];
  if (plan.blocks.length > 0) {
    const byGroup = new Map<number, WideColumnInfo[]>();
    for (const column of columns) {
      const group = byGroup.get(packGroup(column.index));
      if (group) group.push(column);
      else byGroup.set(packGroup(column.index), [column]);
    }
    for (const [group, members] of byGroup) reads.push(() => foldPacks(db, pool, query, group, members, plan, out));
  }
  if (plan.raw.length === 0) return reads;
  // PGlite serves one statement at a time: its raw rows are grouped in one.
  if (!pool) reads.push(() => groupRawInSql(db, query, columns, plan, out));
  else for (const ranges of rawReadRanges(plan, density)) reads.push(() => foldRawRows(db, pool, query, columns, plan, ranges, out));
  return reads;
}

/**
 * The plan's rollup packs of one channel group, merged into their query buckets here. Only the span of
 * slots from the lowest to the highest requested channel is sent (`substring`): a one-channel Query of a
 * sixteen-channel group reads 72 bytes per bucket, not 1,152. With a node-postgres pool the rows come out
 * by binary COPY and are read where they lie in the socket's chunks; on PGlite as rows.
 */
async function foldPacks(db: Executor, pool: pg.Pool | undefined, query: WideQuery, group: number, columns: readonly WideColumnInfo[], plan: QueryPlan, out: Map<number, M4Grid>): Promise<void> {
  const slots = columns.map((c) => packSlot(c.index));
  const low = Math.min(...slots);
  const high = Math.max(...slots);
  const blocks = sql.join(
    plan.blocks.map((b) => sql`(p.width_ms = ${sql.lit(b.widthMs)} and p.bucket >= ${sql.lit(b.from)} and p.bucket < ${sql.lit(b.to)})`),
    sql` or `,
  );
  const statement = sql`
    select p.bucket, substring(p.data from ${sql.lit(low * SLOT_BYTES + 1)} for ${sql.lit((high - low + 1) * SLOT_BYTES)}) as data
    from telemetry_rollup_packs as p
    where p.dataset_id = ${sql.lit(query.datasetId)}::uuid and p.channel_group = ${sql.lit(group)} and (${blocks})`;
  const targets = columns.map((c) => out.get(c.index)!);
  const offsets = slots.map((slot) => (slot - low) * SLOT_BYTES);
  const { origin, width } = plan;
  const fold = (bucket: number, view: DataView, offset: number, length: number) => {
    const key = Math.floor((bucket - origin) / width);
    for (let i = 0; i < targets.length; i++) {
      const at = offset + offsets[i]!;
      if (at + SLOT_BYTES > offset + length) continue;
      if (view.getFloat64(at) === 0) continue; // an empty slot
      targets[i]!.mergeSlot(key, view, at);
    }
  };
  if (pool === undefined) {
    const result = await sql<{ bucket: number; data: Uint8Array }>`select b::float8 as bucket, data from (${statement}) as s(b, data)`.execute(db);
    for (const row of result.rows) fold(row.bucket, new DataView(row.data.buffer, row.data.byteOffset, row.data.byteLength), 0, row.data.byteLength);
    return;
  }
  await copyRowsOut(pool, copyStatementText(statement, db), (row) => {
    const bucket = row.int8()!;
    const data = row.bytea()!;
    fold(bucket, data.view, data.offset, data.length);
  });
}

/**
 * The plan's raw samples grouped per query bucket in SQL, on PGlite (which has no COPY to a client).
 * Arrays compare element by element in float8 order, so min(array[value, time]) is the minimum with the
 * earliest time among ties; max(array[value, -time]) likewise for the maximum.
 *
 * The grouping runs over a subquery behind `offset 0`. Without that fence the planner estimates one
 * group per row (the bucket expression is built on the unique time column), sorts the rows for a group
 * aggregate, and a 2 s window of 40,000 rows cost 50 ms instead of 25 ms; behind it, it assumes few
 * groups and hashes them, which is right: at most the plan's bucket count.
 *
 * The answer is one row per channel: its buckets as one two-dimensional float8 array in PostgreSQL's
 * binary array format (`array_send`), in bucket order. A row per bucket cost the server more than the
 * statement did: a thousand rows of ten float8 texts per channel to parse, and the garbage of it
 * (docs/PERFORMANCE.md).
 */
async function groupRawInSql(db: Executor, query: WideQuery, columns: readonly WideColumnInfo[], plan: QueryPlan, out: Map<number, M4Grid>): Promise<void> {
  const result = await sql<{ c: number; buckets: Uint8Array }>`
    select c, ${packedM4Sql('qb')} as buckets
    from (
      select x.c, x.qb, count(*)::float8 as n,
             min(array[x.v, x.t]) as mn, max(array[x.v, -x.t]) as mx, min(array[x.t, x.v]) as fst, max(array[x.t, x.v]) as lst
      from (select s.c, floor((s.t - ${plan.origin}::float8) / ${plan.width}::float8) as qb, s.t, s.v from (${rawSamplesSql(query, columns, plan)}) as s offset 0) as x
      group by 1, 2
    ) as m
    group by c`.execute(db);
  for (const row of result.rows) out.get(Number(row.c))!.mergePacked(float8ArrayFromBinary(row.buckets));
}

/**
 * The raw rows of `ranges` (the plan's, or half of them), streamed out by binary COPY and folded into
 * their buckets here, in one pass over the rows for every channel. PostgreSQL only scans and sends: a
 * row costs it a few field copies instead of four array aggregates per channel, which cost it ~235 ms
 * of CPU for a 2 s window of eight channels (320,000 samples) grouped in SQL (docs/PERFORMANCE.md).
 */
async function foldRawRows(db: Executor, pool: pg.Pool, query: WideQuery, columns: readonly WideColumnInfo[], plan: QueryPlan, ranges: ReadonlyArray<{ from: number; to: number }>, out: Map<number, M4Grid>): Promise<void> {
  const values = columns.map((c) => columnValueSql(`w.${c.name}`, c.physicalType));
  // One column: its empty rows stay in the server. Several: a row is sent if any of them has a value.
  const present = sql.join(columns.map((c) => sql`${sql.ref(`w.${c.name}`)} is not null`), sql` or `);
  const statement = sql`select w.time, ${sql.join(values)} from ${sql.table(query.table)} as w where (${rawRangesSql(ranges)}) and (${present})`;
  const grids = columns.map((c) => out.get(c.index)!);
  const { origin, width } = plan;
  await copyRowsOut(pool, copyStatementText(statement, db), (row) => {
    const t = row.timestampUs()!;
    const key = Math.floor((t - origin) / width);
    for (let i = 0; i < grids.length; i++) {
      const v = row.float8();
      if (v !== null) grids[i]!.add(key, t, v);
    }
  });
}

// The raw parts' bounds are inlined as literals (`sql.lit`), not bound: COPY takes no parameters, and
// the same text serves PGlite.

/** Raw ranges over `w.time`. */
function rawRangesSql(ranges: ReadonlyArray<{ from: number; to: number }>) {
  return sql.join(
    ranges.map((r) => sql`(w.time >= ${usToTimestamp(sql.lit(r.from))} and w.time < ${usToTimestamp(sql.lit(r.to))})`),
    sql` or `,
  );
}

/** The plan's raw samples as (c, t, v) rows: one scan of the rows for every channel, each row unpivoted into (channel, value) pairs. */
function rawSamplesSql(query: WideQuery, columns: readonly WideColumnInfo[], plan: QueryPlan) {
  const ranges = rawRangesSql(plan.raw);
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
