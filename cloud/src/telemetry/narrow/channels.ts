import type { Executor } from '../../db/executor.ts';
import type { DatasetRow } from '../../db/schema.ts';
import { insertFoundChannels } from '../../datasets/queries.ts';
import { isLogSignalName } from '@sortie/contracts';
import { findSignal, loadMessageTables } from './message-tables.ts';
import { logSignalInfo, signalInfo } from './signal-info.ts';

/**
 * Signals stored for a narrow dataset: what narrow_message_tables lists (the writer adds a signal the
 * first time a frame carries a value of it), one small row per message id, never the data.
 */
export async function storedSignals(db: Executor, datasetId: string): Promise<string[]> {
  const tables = await loadMessageTables(db, datasetId);
  return [...tables.values()].flatMap((t) => [...t.signals]).sort();
}

/**
 * GET /api/datasets/channels on a narrow dataset (with or without experimentId): give every signal in the data a
 * channel row (hypertableColName = name = the signal; unit and dataType from the pinned dialect, or
 * `bytes` for raw payloads), so the list is complete for a flight never opened in a console. Channels
 * already there (perhaps renamed) are left alone; concurrent calls are harmless (on conflict do nothing).
 */
export async function materialiseNarrowChannels(db: Executor, dataset: DatasetRow, now: Date): Promise<number> {
  const tables = await loadMessageTables(db, dataset.id);
  const names = [...tables.values()].flatMap((t) => [...t.signals]).sort();
  if (names.length === 0) return 0;
  const known = new Set(
    (await db.selectFrom('channels').select('col_name').where('dataset_id', '=', dataset.id).execute()).map((r) => r.col_name),
  );
  const rows = names
    .filter((name) => !known.has(name))
    .sort()
    .map((name) => {
      const found = isLogSignalName(name) ? findSignal(tables, name) : undefined;
      const info = found ? logSignalInfo(found.column) : signalInfo(name);
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
  return insertFoundChannels(db, rows);
}
