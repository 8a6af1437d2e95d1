import type { Executor } from '../../db/executor.ts';
import type { EventRow } from '../../db/schema.ts';
import { alignAgentTime, alignAgentTimeDetail } from './alignment.ts';
import { loadBootSessions } from './session-store.ts';

/** The times in a LIMIT event's data (contracts' LimitEventDataSchema). */
const LIMIT_TIMES = ['start', 'end', 'worstTime'] as const;

/**
 * Annotations of a narrow dataset on the charts' time axis. Their timestamps are absolute times on the
 * agent's (or an operator's) wall clock, the clock frames are received by, so they are shifted like
 * agent-stamped rows of the boot session they fall in (alignment.ts). When the vehicle had GPS time the
 * shift is GPS time minus the agent's clock; otherwise it is zero. Stored times are not changed:
 * alignment happens at read time, like every narrow read. Each listed event's data says so in
 * `timeAlignment`: the clock its timestamp is now on (`gps` or `agent`), the timestamp as recorded,
 * and the shift; the times an agent wrote into data (LINK_LOSS `lastFrameAt`, `detectedAt`) stay on
 * the agent's clock, as its own `clock: "agent"` says. A LIMIT event's are the server's own (the
 * crossing's start, end and worst time, evaluated on the frames' receive times) and are aligned too.
 */
export async function alignNarrowEvents(db: Executor, datasetId: string, rows: EventRow[]): Promise<EventRow[]> {
  if (rows.length === 0) return rows;
  const sessions = await loadBootSessions(db, datasetId);
  if (sessions.length === 0) return rows;
  return rows
    .map((row) => {
      const a = alignAgentTimeDetail(row.time.getTime() * 1000, sessions);
      const timeAlignment = { clock: a.clock, recordedTimestamp: row.time.toISOString(), shiftMicroseconds: a.shiftUs, bootSession: a.session };
      const data: Record<string, unknown> = { ...row.data, timeAlignment };
      // A LIMIT crossing's start, end and worst time are on the agent's clock like its timestamp (the
      // frames' receive times): they move with it, so a band drawn from start to end sits on the charts' axis.
      if (row.kind === 'LIMIT') {
        for (const key of LIMIT_TIMES) {
          const ms = typeof data[key] === 'string' ? Date.parse(data[key]) : NaN;
          if (!Number.isNaN(ms)) data[key] = new Date(Math.round(alignAgentTime(ms * 1000, sessions) / 1000)).toISOString();
        }
      }
      return { ...row, time: new Date(Math.round(a.us / 1000)), data };
    })
    .sort((a, b) => a.time.getTime() - b.time.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
