import type { Channel, Dataset } from '@sortie/contracts';
import type { Kysely, Transaction } from 'kysely';
import type { ChannelRow, Database, DatasetRow } from '../db/schema.ts';
import { notFound } from '../http/api-error.ts';

export type Executor = Kysely<Database> | Transaction<Database>;

/**
 * The dataset, if it belongs to the caller's organization (and to the named experiment, when given).
 * Anything else is 404: another organization's dataset must look exactly like a missing one.
 */
export async function requireDataset(
  db: Executor,
  organizationId: string,
  datasetId: string,
  experimentId?: string,
): Promise<DatasetRow> {
  let query = db.selectFrom('datasets').selectAll().where('id', '=', datasetId).where('organization_id', '=', organizationId);
  if (experimentId) query = query.where('experiment_id', '=', experimentId);
  const row = await query.executeTakeFirst();
  if (!row) throw notFound(`no dataset ${datasetId}${experimentId ? ` in experiment ${experimentId}` : ''}`);
  return row;
}

export async function requireExperiment(db: Executor, organizationId: string, experimentId: string) {
  const row = await db
    .selectFrom('experiments')
    .selectAll()
    .where('id', '=', experimentId)
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
  if (!row) throw notFound(`no experiment ${experimentId}`);
  return row;
}

export function listChannelRows(db: Executor, datasetId: string): Promise<ChannelRow[]> {
  return db.selectFrom('channels').selectAll().where('dataset_id', '=', datasetId).orderBy('col_index').orderBy('col_name').execute();
}

export function toDataset(row: DatasetRow): Dataset {
  return {
    id: row.id,
    experimentId: row.experiment_id,
    name: row.name,
    storageShape: row.storage_shape,
    codec: row.codec,
    dialect: row.dialect,
    format: row.format,
    createdAt: row.created_at.toISOString(),
  };
}

export function toChannel(row: ChannelRow): Channel {
  return { id: row.id, name: row.name, unit: row.unit, dataType: row.data_type, hypertableColName: row.col_name };
}
