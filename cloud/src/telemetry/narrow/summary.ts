import { sql } from 'kysely';
import { isAutopilotHeartbeat } from '@sortie/contracts';
import type { Executor } from '../../db/executor.ts';
import { loadMessageTables, signalColumn, type MessageTable, messageRelationSql } from './message-tables.ts';
import { narrowSpan } from './span.ts';

const HEARTBEAT = 0;
/** Summaries kept per process; a flight's is recomputed only when it was written since (its version). */
const MAX_CACHED = 10_000;

/** What a list of flights shows of a MAVLink dataset, beside its name. */
export interface NarrowSummary {
  /** First and last sample on the aligned axis (µs), as the span route answers them. */
  first: number;
  last: number;
  /** Frames stored, one row each, over every message table. */
  frames: number;
  /** MAV_TYPE and MAV_AUTOPILOT of the vehicle's own autopilot HEARTBEAT, when one was stored. */
  vehicle: { type: number; autopilot: number } | undefined;
}

const cache = new Map<string, { version: number; summary: NarrowSummary | undefined }>();

/**
 * A MAVLink dataset's span, frame count and vehicle, for lists. Computed from what is stored (one scan of
 * each message table's time column for the span and the count, and of the HEARTBEAT table's type and
 * autopilot), then kept until the dataset is written again: every write bumps narrow_datasets.version, so
 * a finished flight costs one row read, and a live one is read again only after it grew.
 */
export async function narrowSummary(db: Executor, datasetId: string): Promise<NarrowSummary | undefined> {
  const row = await db.selectFrom('narrow_datasets').select('version').where('dataset_id', '=', datasetId).executeTakeFirst();
  if (!row) return undefined;
  const version = Number(row.version);
  const held = cache.get(datasetId);
  if (held && held.version === version) return held.summary;
  const tables = [...(await loadMessageTables(db, datasetId)).values()];
  const [span, counts, vehicle] = await Promise.all([narrowSpan(db, datasetId), frameCount(db, tables), autopilotOf(db, tables)]);
  const summary = span && { first: span.first, last: span.last, frames: counts, vehicle };
  cache.delete(datasetId);
  cache.set(datasetId, { version, summary });
  if (cache.size > MAX_CACHED) cache.delete(cache.keys().next().value!);
  return summary;
}

async function frameCount(db: Executor, tables: readonly MessageTable[]): Promise<number> {
  if (tables.length === 0) return 0;
  const counts = tables.map((t) => sql`select count(*) as n from ${messageRelationSql(t)} m`);
  const result = await sql<{ n: number }>`select coalesce(sum(n), 0)::float8 as n from (${sql.join(counts, sql` union all `)}) c`.execute(db);
  return result.rows[0]!.n;
}

/**
 * The vehicle's autopilot by its HEARTBEATs: of the (type, autopilot) pairs stored, the most frequent one
 * that names a vehicle's autopilot (contracts' isAutopilotHeartbeat), so a companion computer, a gimbal or
 * a ground station in the same system is never taken for it.
 */
async function autopilotOf(db: Executor, tables: readonly MessageTable[]): Promise<{ type: number; autopilot: number } | undefined> {
  const table = tables.find((t) => t.msgid === HEARTBEAT);
  if (!table) return undefined;
  const type = sql.ref(signalColumn('mavlink.HEARTBEAT.type')!.column.column);
  const autopilot = sql.ref(signalColumn('mavlink.HEARTBEAT.autopilot')!.column.column);
  const result = await sql<{ type: number; autopilot: number; n: number }>`
    select ${type}::int4 as type, ${autopilot}::int4 as autopilot, count(*)::float8 as n
    from ${messageRelationSql(table)} m group by 1, 2 order by 3 desc`.execute(db);
  const found = result.rows.find((r) => r.type !== null && r.autopilot !== null && isAutopilotHeartbeat(r.type, r.autopilot));
  return found && { type: found.type, autopilot: found.autopilot };
}
