import { parseLogSignalName } from '@sortie/contracts';
import { parseSignalName } from '@sortie/contracts/mavlink';
import { sql } from 'kysely';
import type { Executor } from '../../db/executor.ts';
import { ServiceError, notFound } from '../../platform/errors.ts';
import { samplesFromBuckets } from '../series/downsample.ts';
import type { Sample, SampleColumns } from '../series/lttb.ts';
import { M4Grid } from '../series/m4-grid.ts';
import { float8ArrayFromBinary } from '../sql/sql-arrays.ts';
import { packedM4Sql } from '../sql/packed-m4.ts';
import { bucketsForBudget, MAX_CHANNELS_PER_QUERY, READS_PER_QUERY, sampleColumnsOf, type SeriesResult } from '../series/series.ts';
import { mapLimit } from '../../platform/map-limit.ts';
import { sessionShift, type SessionShift } from './alignment.ts';
import { findSignal, holdsNumber, loadMessageTables, numericSql, type MessageTable, type SignalColumn, messageRelationSql } from './message-tables.ts';
import { quoteIdent } from '../../db/sql-text.ts';
import { loadBootSessions } from './session-store.ts';
import { signalInfo } from './signal-info.ts';

export interface NarrowQuery {
  datasetId: string;
  /** Signal names, in request order. */
  channelIds: readonly string[];
  /** Aligned-time range in µs: from inclusive, to exclusive; undefined = unbounded. */
  from: number | undefined;
  to: number | undefined;
  maxPoints: number;
}

/** Check the requested names before touching the database: signal names of numeric signals. */
export function resolveSignals(channelIds: readonly string[]): string[] {
  if (channelIds.length === 0) throw new ServiceError('invalid_request', 'channel_ids is empty: name at least one signal, e.g. mavlink.ATTITUDE.roll');
  if (channelIds.length > MAX_CHANNELS_PER_QUERY) {
    throw new ServiceError('invalid_request', `channel_ids names ${channelIds.length} signals; at most ${MAX_CHANNELS_PER_QUERY} per query`);
  }
  return channelIds.map((id, i) => {
    if (!parseSignalName(id) && !parseLogSignalName(id)) {
      throw new ServiceError(
        'invalid_request',
        `channel_ids[${i}]: "${id}" is not a signal name; narrow datasets are addressed by signal name (mavlink.<MESSAGE>.<field>, or ulog.<topic>.<field> and dataflash.<MESSAGE>.<field> for imported logs), not by index or UUID`,
      );
    }
    const info = signalInfo(id);
    if (info && info.kind !== 'double') {
      throw new ServiceError('invalid_request', `channel_ids[${i}]: ${id} holds ${info.kind === 'text' ? 'text' : 'raw bytes'}; Query reads numeric signals only`);
    }
    return id;
  });
}

/**
 * Per signal, the samples on the aligned time axis and the exact raw count in range. When the budget
 * holds every sample in range, every sample is returned, in aligned time order (two samples at one
 * instant both, in frame_seq order): a chart or an export then sees exactly what is stored. Otherwise
 * at most `maxPoints` samples keeping the chart's shape (the same M4 + LTTB reduction as wide
 * datasets, series/downsample.ts). A name the dataset has never stored is NOT_FOUND, naming it.
 * A signal is read from its message's table only (message-tables.ts), raw rows on aligned time: no
 * rollups, since alignment may change as late frames arrive (decision 0006 says why and what it costs).
 */
export async function queryNarrow(db: Executor, query: NarrowQuery): Promise<SeriesResult[]> {
  const names = resolveSignals(query.channelIds);
  if (query.from !== undefined && query.to !== undefined && query.from > query.to) {
    throw new ServiceError('invalid_request', '`from` is after `to`');
  }
  const [tables, sessions] = await Promise.all([loadMessageTables(db, query.datasetId), loadBootSessions(db, query.datasetId)]);
  const sources = names.map((name, i) => {
    const at = findSignal(tables, name) ?? undefined;
    if (!at || !at.table.signals.has(name)) {
      const why = signalInfo(name) || at ? 'no frame of this dataset carried it' : parseLogSignalName(name) ? 'its log had no such message or field' : 'the server\'s MAVLink dialect has no such message or field';
      throw notFound(`channel_ids[${i}]: signal ${name} is not in this dataset (${why}); GET /api/datasets/channels lists its signals`);
    }
    if (!holdsNumber(at.column)) throw new ServiceError('invalid_request', `channel_ids[${i}]: ${name} holds text; Query reads numeric signals only`);
    return { table: at.table, column: at.column };
  });
  const shifts = sessions.map(sessionShift);
  return mapLimit(names, READS_PER_QUERY, async (name, i) => {
    const source = sources[i]!;
    // One pass over the signal's rows answers the long read (M4 per bucket, counts included); only
    // when everything fits the budget is a second pass made, for every sample.
    const buckets = await m4Buckets(db, query, source, shifts);
    const count = buckets.total();
    if (count <= query.maxPoints) return { channelId: name, samples: await rawSamples(db, query, source, shifts), rawPoints: count };
    return { channelId: name, samples: samplesFromBuckets(buckets, query.maxPoints), rawPoints: count };
  });
}

/** Where one signal's values are: its message's table of the dataset and its column. */
interface SignalSource {
  table: MessageTable;
  column: SignalColumn;
}

/** The sessions' shifts as a table `o(session, boot, agent)`, joined to a message table's rows `s`. */
function shiftTableSql(shifts: readonly SessionShift[]) {
  const list = (values: number[]) => `{${values.join(',')}}`;
  return sql`unnest(${list(shifts.map((s) => s.session))}::int4[], ${list(shifts.map((s) => s.bootShiftUs))}::float8[],
                    ${list(shifts.map((s) => s.agentShiftUs))}::float8[]) as o(session, boot, agent)`;
}

/** A row's aligned time in µs (alignment.ts): raw µs plus its session's shift for its time source. */
const ALIGNED_SQL = sql`(round(date_part('epoch', s.time) * 1000000)
    + case s.time_source when 'b' then coalesce(o.boot, 0) when 'a' then coalesce(o.agent, 0) else 0 end)`;

/** The rows of one signal in the aligned range, `t` aligned µs (alignment.ts), `v` the value. */
function alignedRows(query: NarrowQuery, source: SignalSource, shifts: readonly SessionShift[]) {
  const shiftTable = shiftTableSql(shifts);
  const aligned = ALIGNED_SQL;
  const bounds = [];
  if (query.from !== undefined) bounds.push(sql`${aligned} >= ${query.from}::float8`);
  if (query.to !== undefined) bounds.push(sql`${aligned} < ${query.to}::float8`);
  return sql`
      select ${aligned} as t, ${sql.raw(numericSql(source.column, 's.'))} as v, s.frame_seq as seq
      from ${messageRelationSql(source.table)} s left join ${shiftTable} on o.session = s.boot_session
      where ${sql.raw(`s.${quoteIdent(source.column.column)}`)} is not null
        ${bounds.length > 0 ? sql`and ${sql.join(bounds, sql` and `)}` : sql``}`;
}

async function rawSamples(db: Executor, query: NarrowQuery, source: SignalSource, shifts: readonly SessionShift[]): Promise<SampleColumns> {
  const result = await sql<Sample>`select r.t, r.v from (${alignedRows(query, source, shifts)}) as r order by r.t, r.seq`.execute(db);
  return sampleColumnsOf(result.rows);
}

/**
 * M4 per bucket in SQL over aligned time: raw µs plus the row's session shift (alignment.ts). The
 * buckets split the series' aligned extent within the range evenly, as planQuery does for raw rows.
 * The rows are the message table's rows that hold the signal; the range is tested on aligned time.
 * Each extreme is a (value, time) pair compared as an array; the buckets come back packed, one binary
 * float8 array in bucket order (series/m4-grid.ts `mergePacked`), not a row of floats per bucket.
 */
async function m4Buckets(db: Executor, query: NarrowQuery, source: SignalSource, shifts: readonly SessionShift[]): Promise<M4Grid> {
  const buckets = bucketsForBudget(query.maxPoints);
  const result = await sql<{ buckets: Uint8Array | null }>`
    with r as materialized (${alignedRows(query, source, shifts)}),
    w as (select min(t) as lo, greatest(1, ceil((max(t) + 1 - min(t)) / ${buckets}::float8)) as width from r),
    b as (select count(*)::float8 as n, min(array[r.v, r.t]) as mn, max(array[r.v, -r.t]) as mx, min(array[r.t, r.v]) as fst, max(array[r.t, r.v]) as lst,
                 floor((r.t - w.lo) / w.width) as k
          from r, w group by k)
    select ${packedM4Sql('k')} as buckets
    from b`.execute(db);
  const grid = new M4Grid(buckets);
  const packed = result.rows[0]?.buckets;
  if (packed) grid.mergePacked(float8ArrayFromBinary(packed));
  return grid;
}

/** Rows of one message table as live followers read them: the frame's sequence, aligned time, and values. */
export interface TailRow {
  /** frame_seq as text (int8). */
  seq: string;
  t: number;
  /** One value per requested column, null where the row holds none. */
  v: Array<number | null>;
}

/**
 * The newest rows of one message table, for live followers (telemetry/live): those stored after frame
 * `afterSeq` in frame order (at most `limit`), or with `afterSeq` undefined the last row alone. Read by
 * the table's key, so the cost is the rows returned, not the table's size. Several signals of the
 * message at once, each as float8 (numericSql), on aligned time as Query reads them.
 */
export async function messageTableTail(
  db: Executor,
  table: MessageTable,
  columns: readonly SignalColumn[],
  shifts: readonly SessionShift[],
  afterSeq: string | undefined,
  limit: number,
): Promise<TailRow[]> {
  const values = columns.length === 0 ? sql`array[]::float8[]` : sql.raw(`array[${columns.map((c) => numericSql(c, 's.')).join(', ')}]`);
  const where = afterSeq === undefined ? sql`` : sql`where s.frame_seq > ${afterSeq}::int8`;
  const order = afterSeq === undefined ? sql`order by s.frame_seq desc limit 1` : sql`order by s.frame_seq limit ${limit}::int4`;
  const result = await sql<TailRow>`
    select s.frame_seq::text as seq, ${ALIGNED_SQL} as t, ${values} as v
    from ${messageRelationSql(table)} s left join ${shiftTableSql(shifts)} on o.session = s.boot_session
    ${where} ${order}`.execute(db);
  return result.rows;
}
