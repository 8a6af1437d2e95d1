import { sql } from 'kysely';
import type { Executor } from '../../db/executor.ts';

/** One stored sample of a narrow dataset, as a client-visible rule sees it (spec: "Narrow storage"). */
export interface StoredSample {
  frameSeq: number;
  signal: string;
  /** Raw time on the clock `timeSource` names, µs since the epoch. */
  timeUs: number;
  timeSource: string;
  bootUs: number | null;
  bootSession: number;
  receivedUs: number;
  /** A number, text, or raw bytes as hex (`\x…`), as stored. */
  value: number | string | null;
}

/**
 * Every sample of a narrow dataset in (frame_seq, signal) order: what the property test compares
 * upload against upload, and the migration test before against after.
 */
export async function readStoredSamples(db: Executor, datasetId: string): Promise<StoredSample[]> {
  const result = await sql<StoredSample>`
    select s.frame_seq::float8 as "frameSeq", n.name as signal,
           round(date_part('epoch', s.time) * 1000000)::float8 as "timeUs", s.time_source as "timeSource",
           s.boot_us::float8 as "bootUs", s.boot_session as "bootSession",
           round(date_part('epoch', s.received_at) * 1000000)::float8 as "receivedUs",
           coalesce(to_jsonb(s.value_double), to_jsonb(s.value_text), to_jsonb('\\x' || encode(s.value_bytes, 'hex'))) as value
    from narrow_samples s join narrow_signals n on n.id = s.signal_id
    where s.dataset_id = ${datasetId}::uuid
    order by s.frame_seq, n.name`.execute(db);
  return result.rows;
}
