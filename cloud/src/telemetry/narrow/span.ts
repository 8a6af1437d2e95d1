import { sql } from 'kysely';
import type { Executor } from '../../db/executor.ts';
import { alignedUs, sessionShift, TIME_SOURCE_OF_CODE } from './alignment.ts';
import { loadMessageTables, messageRelationSql } from './message-tables.ts';
import { loadBootSessions } from './session-store.ts';

const SOURCE = TIME_SOURCE_OF_CODE;

/**
 * A MAVLink dataset's first and last sample on the aligned axis Query answers on (aligned µs): over every
 * message table, not one signal's. One signal says nothing of the others: a HEARTBEAT (stamped on receipt)
 * starts a second after the first ATTITUDE (on the boot clock) in the SITL flight. Each session shifts all
 * rows of one time source alike (alignment.ts), so the extremes of raw time per (session, source), shifted,
 * are the extremes of aligned time: one scan of each table's time column, no per-row arithmetic.
 * Undefined for a dataset that holds no frame.
 */
export async function narrowSpan(db: Executor, datasetId: string): Promise<{ first: number; last: number } | undefined> {
  const [tables, sessions] = await Promise.all([loadMessageTables(db, datasetId), loadBootSessions(db, datasetId)]);
  if (tables.size === 0) return undefined;
  const perTable = [...tables.values()].map((t) => sql`select boot_session, time_source, min(time) as lo, max(time) as hi from ${messageRelationSql(t)} m group by 1, 2`);
  // Raw µs as Query computes them (narrow/query.ts ALIGNED_SQL), so a span's ends are samples' times exactly.
  const result = await sql<{ session: number; source: string; lo: number; hi: number }>`
    select boot_session as session, time_source::text as source,
           round(date_part('epoch', min(lo)) * 1000000)::float8 as lo, round(date_part('epoch', max(hi)) * 1000000)::float8 as hi
    from (${sql.join(perTable, sql` union all `)}) s group by 1, 2`.execute(db);
  const shifts = new Map(sessions.map((s) => [s.session, sessionShift(s)]));
  let first = Infinity;
  let last = -Infinity;
  for (const r of result.rows) {
    const source = SOURCE[r.source] ?? 'gps';
    const shift = shifts.get(r.session);
    first = Math.min(first, alignedUs(source, r.lo, shift));
    last = Math.max(last, alignedUs(source, r.hi, shift));
  }
  return Number.isFinite(first) ? { first, last } : undefined;
}
