import { sql } from 'kysely';
import type { Executor } from '../../db/executor.ts';
import { ROLLUP_WIDTHS_MS } from './rollup-levels.ts';
import { unpack } from './rollup-packs.ts';
import { wideSpan } from './span.ts';

/**
 * A wide dataset's span and how many numeric samples it holds, for lists: the span by two probes of the
 * table's key, the samples from the coarsest rollups (ingest keeps each bucket's count exact), a pack
 * per 16 channels and day whatever the rate. Text and byte channels have no rollups and are not counted.
 */
export async function wideSummary(db: Executor, datasetId: string, table: string): Promise<{ first: number; last: number; samples: number } | undefined> {
  const coarsest = ROLLUP_WIDTHS_MS[ROLLUP_WIDTHS_MS.length - 1];
  const [span, packs] = await Promise.all([
    wideSpan(db, table),
    sql<{ data: Uint8Array }>`select data from telemetry_rollup_packs where dataset_id = ${datasetId}::uuid and width_ms = ${coarsest}::int4`.execute(db),
  ]);
  const samples = packs.rows.reduce((n, row) => unpack(row.data).reduce((m, slot) => m + (slot?.count ?? 0), n), 0);
  return span && { ...span, samples };
}
