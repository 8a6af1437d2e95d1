import { sql } from 'kysely';
import type { Executor } from '../../db/executor.ts';
import type { DatasetRow } from '../../db/schema.ts';
import { signalNames } from './signal-dictionary.ts';
import { signalInfo } from './signal-info.ts';

/**
 * Distinct signals stored for a narrow dataset. A loose index scan over the key (dataset_id, signal_id, frame_seq):
 * one index descent per signal, so a flight of millions of rows and ~200 signals answers in
 * milliseconds (PostgreSQL 15 has no skip scan of its own).
 */
export async function storedSignalIds(db: Executor, datasetId: string): Promise<number[]> {
  const result = await sql<{ id: number }>`
    with recursive s(id) as (
      (select signal_id from narrow_samples where dataset_id = ${datasetId}::uuid order by signal_id limit 1)
      union all
      select (select n.signal_id from narrow_samples n where n.dataset_id = ${datasetId}::uuid and n.signal_id > s.id order by n.signal_id limit 1)
      from s where s.id is not null
    )
    select id from s where id is not null`.execute(db);
  return result.rows.map((r) => r.id);
}

/**
 * GET /api/datasets/channels with experimentId on a narrow dataset: give every signal in the data a
 * channel row (hypertableColName = name = the signal; unit and dataType from the pinned dialect, or
 * `bytes` for raw payloads), so the list is complete for a flight never opened in a console. Channels
 * already there (perhaps renamed) are left alone; concurrent calls are harmless (on conflict do nothing).
 */
export async function materialiseNarrowChannels(db: Executor, dataset: DatasetRow, now: Date): Promise<number> {
  const ids = await storedSignalIds(db, dataset.id);
  if (ids.length === 0) return 0;
  const names = await signalNames(db, ids);
  const known = new Set(
    (await db.selectFrom('channels').select('col_name').where('dataset_id', '=', dataset.id).execute()).map((r) => r.col_name),
  );
  const rows = [...names.values()]
    .filter((name) => !known.has(name))
    .sort()
    .map((name) => {
      const info = signalInfo(name);
      return {
        id: crypto.randomUUID(),
        organization_id: dataset.organization_id,
        dataset_id: dataset.id,
        col_index: null,
        col_name: name,
        name,
        unit: info?.unit ?? '',
        data_type: info?.dataType ?? 'double',
        physical_type: info?.kind === 'text' ? 'text' : info?.kind === 'bytes' ? 'bytea' : 'double precision',
        created_at: now,
        updated_at: now,
      };
    });
  if (rows.length === 0) return 0;
  const inserted = await db.insertInto('channels').values(rows).onConflict((oc) => oc.doNothing()).returning('id').execute();
  return inserted.length;
}
