import type pg from 'pg';
import { listChannelRows } from '../../datasets/queries.ts';
import type { Executor } from '../../db/executor.ts';
import type { DatasetRow } from '../../db/schema.ts';
import { notFound } from '../../platform/errors.ts';
import { sessionShift } from '../narrow/alignment.ts';
import { findSignal, loadMessageTables, signalColumn, type MessageTable } from '../narrow/message-tables.ts';
import { messageTableTail, queryNarrow, resolveSignals } from '../narrow/query.ts';
import { loadBootSessions } from '../narrow/session-store.ts';
import { sampleColumnsOf, type SeriesResult } from '../series/series.ts';
import { queryWide, resolveQueryColumns, wideTableTail } from '../wide/query.ts';
import { writableColumns } from '../wide/wide-batch.ts';
import type { FeedChannel } from './feed.ts';

/**
 * The channels of a Follow request, checked as Query checks them (the same messages and codes), with one
 * difference for narrow datasets: a signal the dialect knows but no frame has carried yet is accepted,
 * since a follower often opens a flight before its first frame; its series stays empty until one does.
 * No channels at all is accepted too: such a follower reads events and commands only.
 */
export async function resolveFollowChannels(db: Executor, dataset: DatasetRow, channelIds: readonly string[]): Promise<FeedChannel[]> {
  if (channelIds.length === 0) return [];
  if (dataset.storage_shape === 'wide') {
    const columns = resolveQueryColumns(channelIds, writableColumns(await listChannelRows(db, dataset.id)));
    return columns.map((wide, i) => ({ id: channelIds[i]!, wide }));
  }
  const names = resolveSignals(channelIds);
  // A log's signals are known only by its tables (an imported flight has them all from the start).
  const tables = names.some((id) => !signalColumn(id)) ? await loadMessageTables(db, dataset.id) : undefined;
  return names.map((id, i) => {
    const at = signalColumn(id) ?? (tables && findLogSignal(tables, id));
    if (!at) throw notFound(`channel_ids[${i}]: signal ${id} is not in this dataset (no message or field of that name)`);
    return { id, msgid: at.msgid, column: at.column };
  });
}

function findLogSignal(tables: ReadonlyMap<number, MessageTable>, id: string) {
  const found = findSignal(tables, id);
  return found && { msgid: found.table.msgid, column: found.column };
}

export interface WindowSnapshot {
  /** The newest sample of the followed channels, µs; undefined while they hold none. */
  head: number | undefined;
  /** One per channel in request order: the window's downsampled samples. */
  series: SeriesResult[];
}

/**
 * The window a follower opens with: the `windowUs` ending at the followed channels' newest sample,
 * each channel downsampled to `budget` samples exactly as Query would answer the same range (with the
 * same node-postgres `pool` for a wide window's raw rows, when there is one).
 */
export async function readWindow(db: Executor, dataset: DatasetRow, channels: readonly FeedChannel[], windowUs: number, budget: number, pool?: pg.Pool): Promise<WindowSnapshot> {
  const empty = (): SeriesResult[] => channels.map((c) => ({ channelId: c.id, samples: sampleColumnsOf([]), rawPoints: 0 }));
  if (channels.length === 0) return { head: undefined, series: [] };
  if (dataset.storage_shape === 'wide') {
    const [last] = await wideTableTail(db, dataset.table_name!, [], undefined, 1);
    if (!last) return { head: undefined, series: empty() };
    const columns = channels.flatMap((c) => ('wide' in c ? [c.wide] : []));
    const series = await queryWide(
      db,
      { datasetId: dataset.id, table: dataset.table_name!, channelIds: channels.map((c) => c.id), from: last.t - windowUs, to: last.t + 1, maxPoints: budget },
      columns,
      pool,
    );
    return { head: last.t, series };
  }
  const [tables, sessions] = await Promise.all([loadMessageTables(db, dataset.id), loadBootSessions(db, dataset.id)]);
  const shifts = sessions.map(sessionShift);
  // The head: the newest aligned time among the followed messages' last rows.
  let head: number | undefined;
  const stored = new Set<string>();
  const lastRowOf = new Map<number, Promise<number | undefined>>();
  for (const c of channels) {
    if (!('msgid' in c)) continue;
    const table = tables.get(c.msgid);
    if (!table || !table.signals.has(c.id)) continue;
    stored.add(c.id);
    if (!lastRowOf.has(c.msgid)) lastRowOf.set(c.msgid, messageTableTail(db, table, [], shifts, undefined, 1).then(([row]) => row?.t));
  }
  for (const t of await Promise.all(lastRowOf.values())) if (t !== undefined && (head === undefined || t > head)) head = t;
  if (head === undefined) return { head: undefined, series: empty() };
  const ids = channels.map((c) => c.id).filter((id) => stored.has(id));
  const found = ids.length === 0 ? [] : await queryNarrow(db, { datasetId: dataset.id, channelIds: ids, from: head - windowUs, to: head + 1, maxPoints: budget });
  const byId = new Map(found.map((s) => [s.channelId, s]));
  return { head, series: channels.map((c) => byId.get(c.id) ?? { channelId: c.id, samples: sampleColumnsOf([]), rawPoints: 0 }) };
}
