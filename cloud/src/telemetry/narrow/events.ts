import type { Executor } from '../../db/executor.ts';
import type { EventRow } from '../../db/schema.ts';
import { alignAgentTime } from './alignment.ts';
import { loadBootSessions } from './session-store.ts';

/**
 * Annotations of a narrow dataset on the charts' time axis. Their timestamps are absolute times on the
 * agent's (or an operator's) wall clock, the clock frames are received by, so they are shifted like
 * agent-stamped rows of the boot session they fall in (alignment.ts). When the vehicle had GPS time the
 * shift is GPS time minus the agent's clock; otherwise it is zero. Stored times are not changed:
 * alignment happens at read time, like every narrow read.
 */
export async function alignNarrowEvents(db: Executor, datasetId: string, rows: EventRow[]): Promise<EventRow[]> {
  if (rows.length === 0) return rows;
  const sessions = await loadBootSessions(db, datasetId);
  if (sessions.length === 0) return rows;
  return rows
    .map((row) => ({ ...row, time: new Date(Math.round(alignAgentTime(row.time.getTime() * 1000, sessions) / 1000)) }))
    .sort((a, b) => a.time.getTime() - b.time.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
