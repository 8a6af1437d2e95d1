import { sql } from 'kysely';
import type { Executor } from '../../db/executor.ts';
import type { BootSession } from './boot-sessions.ts';

/** Every boot session of a narrow dataset, as stored (µs values read as doubles: exact below 2^53). */
export async function loadBootSessions(db: Executor, datasetId: string): Promise<BootSession[]> {
  const result = await sql<BootSession>`
    select boot_session as session, compid, first_frame_seq::float8 as "firstFrameSeq", last_frame_seq::float8 as "lastFrameSeq",
           last_boot_us::float8 as "lastBootUs", gps_offset_us::float8 as "gpsOffsetUs", gps_offset_frame_seq::float8 as "gpsOffsetFrameSeq",
           agent_offset_us::float8 as "agentOffsetUs", first_received_us::float8 as "firstReceivedUs", last_received_us::float8 as "lastReceivedUs",
           clock_state as clock
    from narrow_boot_sessions where dataset_id = ${datasetId}::uuid order by boot_session`.execute(db);
  return result.rows;
}
