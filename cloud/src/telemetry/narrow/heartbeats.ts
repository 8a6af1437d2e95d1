import type { Executor } from '../../db/executor.ts';
import { sessionShift } from './alignment.ts';
import { loadMessageTables, signalColumn } from './message-tables.ts';
import { messageTableTail } from './query.ts';
import { loadBootSessions } from './session-store.ts';

const HEARTBEAT = 0;
const FIELDS = ['type', 'autopilot', 'base_mode', 'custom_mode'] as const;
const PAGE = 10_000;

/** Every HEARTBEAT of a MAVLink dataset, whatever component sent it, as columns on aligned time (µs). */
export interface StoredHeartbeats {
  times: number[];
  type: number[];
  autopilot: number[];
  baseMode: number[];
  customMode: number[];
}

/**
 * Every stored HEARTBEAT of the dataset on the aligned axis Query answers on, in time order (frame order
 * for equal times), all of them: the vehicle's modes are read from each one (contracts' mavlink/modes.ts
 * picks the autopilot's), which a downsampled series cannot give. Read by the table's key, a page at a
 * time; a flight sends one or two a second. Undefined when the dataset holds no HEARTBEAT.
 */
export async function readHeartbeats(db: Executor, datasetId: string): Promise<StoredHeartbeats | undefined> {
  const [tables, sessions] = await Promise.all([loadMessageTables(db, datasetId), loadBootSessions(db, datasetId)]);
  const table = tables.get(HEARTBEAT);
  if (!table) return undefined;
  const columns = FIELDS.map((f) => signalColumn(`mavlink.HEARTBEAT.${f}`)!.column);
  const shifts = sessions.map(sessionShift);
  const rows: Array<{ t: number; v: Array<number | null> }> = [];
  for (let after = '0'; ; ) {
    const page = await messageTableTail(db, table, columns, shifts, after, PAGE);
    rows.push(...page);
    if (page.length < PAGE) break;
    after = page.at(-1)!.seq;
  }
  // Stable: frames at one instant keep their order.
  rows.sort((a, b) => a.t - b.t);
  return {
    times: rows.map((r) => r.t),
    type: rows.map((r) => r.v[0] ?? NaN),
    autopilot: rows.map((r) => r.v[1] ?? NaN),
    baseMode: rows.map((r) => r.v[2] ?? NaN),
    customMode: rows.map((r) => r.v[3] ?? NaN),
  };
}
