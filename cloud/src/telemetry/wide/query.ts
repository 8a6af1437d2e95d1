import { sql } from 'kysely';
import type { Executor } from '../../db/executor.ts';
import { ServiceError, notFound } from '../../platform/errors.ts';
import { samplesFromBuckets } from '../series/downsample.ts';
import type { Sample } from '../series/lttb.ts';
import { m4FromColumns, mergeM4, type M4, type M4Columns } from '../series/m4.ts';
import { bucketsForBudget, MAX_CHANNELS_PER_QUERY, READS_PER_QUERY, type SeriesResult } from '../series/series.ts';
import { mapLimit } from '../../platform/map-limit.ts';
import { planQuery, type QueryPlan } from './query-plan.ts';
import { ROLLUP_WIDTHS_MS } from './rollup-levels.ts';
import { columnValueSql, timestampToUs, usToTimestamp } from '../sql/sql-time.ts';
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

/** Per channel, at most `maxPoints` samples keeping the chart's shape, and the exact raw count. */
export async function queryWide(db: Executor, query: WideQuery, columns: readonly WideColumnInfo[]): Promise<SeriesResult[]> {
  if (query.from !== undefined && query.to !== undefined && query.from > query.to) {
    throw new ServiceError('invalid_request', '`from` is after `to`');
  }
  return mapLimit(columns, READS_PER_QUERY, async (column, i) => {
    const { samples, rawPoints } = await querySeries(db, query, column);
    return { channelId: query.channelIds[i]!, samples, rawPoints };
  });
}

async function querySeries(db: Executor, query: WideQuery, column: WideColumnInfo): Promise<{ samples: Sample[]; rawPoints: number }> {
  const coarsest = ROLLUP_WIDTHS_MS[ROLLUP_WIDTHS_MS.length - 1]!;
  // The channel's extent from the coarsest rollups (one row per day of data): narrows unbounded or
  // oversized ranges to where samples are, so the buckets are spent on data.
  const extent = await sql<{ first: number | null; last: number | null; count: number }>`
    select min(first_time)::float8 as first, max(last_time)::float8 as last, coalesce(sum(count), 0)::float8 as count from telemetry_rollups
    where dataset_id = ${query.datasetId}::uuid and channel = ${column.index}::int4 and width_ms = ${coarsest}::int4
  `.execute(db);
  const { first, last, count } = extent.rows[0] ?? { first: null, last: null, count: 0 };
  if (first === null || last === null) return { samples: [], rawPoints: 0 };
  const start = Math.max(query.from ?? -Infinity, first);
  const end = Math.min(query.to ?? Infinity, last + 1);
  if (!(end > start)) return { samples: [], rawPoints: 0 };

  const maxBuckets = bucketsForBudget(query.maxPoints);
  const plan = planQuery(start, end, maxBuckets, count / (last - first + 1));
  const buckets = await m4Buckets(db, query, column, plan);
  const rawPoints = buckets.reduce((n, b) => n + b.count, 0);
  return { samples: samplesFromBuckets(buckets, query.maxPoints), rawPoints };
}

interface M4Row extends M4Columns {
  qb: number;
}

/**
 * M4 per query bucket in SQL, from rollup rows and raw rows (one statement), merged per bucket here.
 * Arrays compare element by element in float8 order, so min(array[value, time]) is the minimum with
 * the earliest time among ties; max(array[value, -time]) likewise for the maximum.
 */
async function m4Buckets(db: Executor, query: WideQuery, column: WideColumnInfo, plan: QueryPlan): Promise<M4[]> {
  const parts = [];
  if (plan.blocks.length > 0) {
    parts.push(sql`
      select ((r.bucket - ${plan.origin}::int8) / ${plan.width}::int8)::float8 as qb, sum(r.count)::float8 as n,
             min(array[r.min_value, r.min_time::float8]) as mn, max(array[r.max_value, -r.max_time::float8]) as mx,
             min(array[r.first_time::float8, r.first_value]) as fst, max(array[r.last_time::float8, r.last_value]) as lst
      from unnest(${`{${plan.blocks.map((b) => b.widthMs).join(',')}}`}::int4[],
                  ${`{${plan.blocks.map((b) => b.from).join(',')}}`}::int8[],
                  ${`{${plan.blocks.map((b) => b.to).join(',')}}`}::int8[]) as b(w, lo, hi)
      join telemetry_rollups as r
        on r.dataset_id = ${query.datasetId}::uuid and r.channel = ${column.index}::int4
       and r.width_ms = b.w and r.bucket >= b.lo and r.bucket < b.hi
      group by 1`);
  }
  if (plan.raw.length > 0) {
    const ranges = plan.raw.map((r) => sql`(w.time >= ${usToTimestamp(r.from)} and w.time < ${usToTimestamp(r.to)})`);
    parts.push(sql`
      select floor((x.t - ${plan.origin}::float8) / ${plan.width}::float8) as qb, count(*)::float8 as n,
             min(array[x.v, x.t]) as mn, max(array[x.v, -x.t]) as mx, min(array[x.t, x.v]) as fst, max(array[x.t, x.v]) as lst
      from (
        select ${timestampToUs('w.time')} as t, ${columnValueSql(`w.${column.name}`, column.physicalType)} as v
        from ${sql.table(query.table)} as w
        where (${sql.join(ranges, sql` or `)}) and ${sql.ref(`w.${column.name}`)} is not null
      ) as x
      group by 1`);
  }
  // Scalars, not arrays, cross the wire: cheaper to send and to parse.
  const result = await sql<M4Row>`
    select qb, n, mn[1] as min_v, mn[2] as min_t, mx[1] as max_v, -mx[2] as max_t,
           fst[1] as first_t, fst[2] as first_v, lst[1] as last_t, lst[2] as last_v
    from (${sql.join(parts, sql` union all `)}) as m`.execute(db);
  const byBucket = new Map<number, M4>();
  for (const row of result.rows) {
    const m4 = m4FromColumns(row);
    const known = byBucket.get(row.qb);
    if (known) mergeM4(known, m4);
    else byBucket.set(row.qb, m4);
  }
  return [...byBucket.entries()].sort((a, b) => a[0] - b[0]).map(([, m4]) => m4);
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
