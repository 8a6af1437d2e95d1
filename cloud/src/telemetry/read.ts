import type pg from 'pg';
import type { Executor } from '../db/executor.ts';
import { listChannelRows, requireDataset } from '../datasets/queries.ts';
import type { DatasetRow, EventRow } from '../db/schema.ts';
import { materialiseNarrowChannels } from './narrow/channels.ts';
import { alignNarrowEvents } from './narrow/events.ts';
import { readHeartbeats, type StoredHeartbeats } from './narrow/heartbeats.ts';
import { queryNarrow } from './narrow/query.ts';
import { narrowSpan } from './narrow/span.ts';
import { DEFAULT_MAX_POINTS, MAX_POINTS_PER_CHANNEL, type SeriesResult } from './series/series.ts';
import { queryWide, resolveQueryColumns } from './wide/query.ts';
import { wideSpan } from './wide/span.ts';
import { epochMicrosToIso } from './wide/timestamps.ts';
import { writableColumns } from './wide/wide-batch.ts';

export { sampleColumnsOf, type SeriesResult } from './series/series.ts';

/** A Query, its fields checked for form (UUIDs, timestamps) by the transport. */
export interface SeriesRequest {
  datasetId: string;
  /** '' when not given. */
  experimentId: string;
  channelIds: readonly string[];
  /** Range in µs: from inclusive, to exclusive; undefined = unbounded. */
  from: number | undefined;
  to: number | undefined;
  /** As requested: 0 or less is the server default, larger than the maximum is clamped. */
  maxPointsPerChannel: number;
}

/**
 * The one read entry, for either storage shape: per channel a downsampled series of at most
 * max_points_per_channel samples, and the exact raw count. The dataset's shape decides how channel ids
 * are read: wide datasets by ch_N index (query.ts), narrow ones by signal name on the aligned time axis
 * (narrow/query.ts). `pool` is the node-postgres pool when there is one (not on PGlite): a wide read takes
 * its raw rows through it by binary COPY.
 */
export async function readSeries(db: Executor, organizationId: string, request: SeriesRequest, pool?: pg.Pool): Promise<SeriesResult[]> {
  const maxPoints = request.maxPointsPerChannel <= 0 ? DEFAULT_MAX_POINTS : Math.min(request.maxPointsPerChannel, MAX_POINTS_PER_CHANNEL);
  const { channelIds, from, to } = request;
  const dataset = await requireDataset(db, organizationId, request.datasetId, request.experimentId || undefined);
  if (dataset.storage_shape === 'narrow') return queryNarrow(db, { datasetId: dataset.id, channelIds, from, to, maxPoints });
  const columns = resolveQueryColumns(channelIds, writableColumns(await listChannelRows(db, dataset.id)));
  return queryWide(db, { datasetId: dataset.id, table: dataset.table_name!, channelIds, from, to, maxPoints }, columns, pool);
}

/**
 * A dataset's events on the time axis Query answers on, so markers line up with the series: a narrow
 * (MAVLink) dataset's events move onto its aligned time (narrow/events.ts); a wide one's are as stored.
 */
export function eventsOnSeriesTime(db: Executor, dataset: DatasetRow, rows: EventRow[]): Promise<EventRow[]> {
  return dataset.storage_shape === 'narrow' ? alignNarrowEvents(db, dataset.id, rows) : Promise.resolve(rows);
}

/**
 * A dataset's span: its first and last sample as stored, over every channel or signal it holds, on the axis
 * Query answers on (aligned for a narrow dataset), RFC 3339 with microseconds; undefined when it holds none.
 */
export async function datasetSpan(db: Executor, dataset: DatasetRow): Promise<{ first: string; last: string } | undefined> {
  const span = dataset.storage_shape === 'narrow' ? await narrowSpan(db, dataset.id) : dataset.table_name ? await wideSpan(db, dataset.table_name) : undefined;
  const iso = (us: number) => epochMicrosToIso(BigInt(Math.round(us)));
  return span && { first: iso(span.first), last: iso(span.last) };
}

/**
 * Every HEARTBEAT of a MAVLink dataset as columns on the axis Query answers on (µs), for naming the
 * vehicle's modes (contracts' mavlink/modes.ts); undefined for a wide dataset or one without HEARTBEAT.
 */
export function datasetHeartbeats(db: Executor, dataset: DatasetRow): Promise<StoredHeartbeats | undefined> {
  return dataset.storage_shape === 'narrow' ? readHeartbeats(db, dataset.id) : Promise.resolve(undefined);
}
export type { StoredHeartbeats };

/**
 * Bring a dataset's channel list up to its stored data before it is listed: a narrow dataset's decoded
 * signals become channels; a wide dataset declares its channels when it is registered, so has nothing to add.
 */
export async function materialiseChannels(db: Executor, dataset: DatasetRow, now: Date): Promise<void> {
  if (dataset.storage_shape === 'narrow') await materialiseNarrowChannels(db, dataset, now);
}

/** Every stored sample of a narrow dataset, whatever its physical shape (tests across the wing compare them). */
export { readStoredSamples, type StoredSample } from './narrow/stored-samples.ts';
