import { sql } from 'kysely';
import type { Executor } from '../../db/executor.ts';
import { alignedUs, sessionShift, TIME_SOURCE_OF_CODE } from './alignment.ts';
import { findSignal, loadMessageTables, messageRelationSql } from './message-tables.ts';
import { quoteIdent } from '../../db/sql-text.ts';
import { loadBootSessions } from './session-store.ts';

export interface ParameterValue {
  name: string;
  value: number;
  /** Aligned time in µs (alignment.ts). */
  timeUs: number;
}

const SOURCE = TIME_SOURCE_OF_CODE;

/**
 * The PARAM_VALUE messages of a MAVLink flight in frame order: the parameters a ground station read or
 * set during it (the vehicle answers every read and every change with one). Empty when the flight has
 * none. PARAM_VALUE carries the value as a float whatever the parameter's type, as the protocol says.
 */
export async function readParameterValues(db: Executor, datasetId: string): Promise<ParameterValue[]> {
  const tables = await loadMessageTables(db, datasetId);
  const id = findSignal(tables, 'mavlink.PARAM_VALUE.param_id');
  const value = findSignal(tables, 'mavlink.PARAM_VALUE.param_value');
  if (!id || !value) return [];
  const [rows, sessions] = await Promise.all([
    sql<{ name: string; value: number; t: number; src: string; session: number }>`
      select ${sql.raw(quoteIdent(id.column.column))} as name, ${sql.raw(quoteIdent(value.column.column))}::float8 as value,
             round(date_part('epoch', time) * 1000000)::float8 as t, time_source as src, boot_session as session
      from ${messageRelationSql(id.table)} m order by frame_seq`.execute(db),
    loadBootSessions(db, datasetId),
  ]);
  const shifts = new Map(sessions.map((s) => [s.session, sessionShift(s)]));
  return rows.rows.map((r) => ({ name: r.name, value: r.value, timeUs: alignedUs(SOURCE[r.src] ?? 'agent', r.t, shifts.get(r.session)) }));
}
