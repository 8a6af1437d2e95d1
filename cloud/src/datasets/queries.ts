import type { Channel, ChannelDeclaration, Dataset } from '@sortie/contracts';
import type { Insertable } from 'kysely';
import type { ChannelRow, ChannelsTable, DatasetRow, DatasetsTable } from '../db/schema.ts';
import { notFound } from '../platform/errors.ts';
import { columnName } from './wide-table.ts';
import type { Executor } from '../db/executor.ts';

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

/** A dataset as the API shows it; `lastDataAt` from the live bus, when the caller has it. */
export function toDataset(row: DatasetRow, lastDataAt?: Date): Dataset {
  return {
    id: row.id,
    experimentId: row.experiment_id,
    name: row.name,
    storageShape: row.storage_shape,
    codec: row.codec,
    dialect: row.dialect,
    format: row.format,
    createdAt: row.created_at.toISOString(),
    lastDataAt: lastDataAt?.toISOString() ?? null,
  };
}

export function toChannel(row: ChannelRow): Channel {
  return { id: row.id, name: row.name, unit: row.unit, dataType: row.data_type, hypertableColName: row.col_name };
}

/** The next free `ch_N` index of a wide dataset: one past the highest assigned, gaps never reused. */
export function nextColumnIndex(channels: ChannelRow[]): number {
  return channels.reduce((max, ch) => Math.max(max, ch.col_index ?? -1), -1) + 1;
}

/** Declare channel `ch_<index>` of a wide dataset; `physicalType` null means metadata only, no column yet. */
export function insertWideChannel(
  db: Executor,
  input: { organizationId: string; datasetId: string; index: number; channel: ChannelDeclaration; physicalType: string | null; now: Date },
): Promise<ChannelRow> {
  return db
    .insertInto('channels')
    .values({
      id: crypto.randomUUID(),
      organization_id: input.organizationId,
      dataset_id: input.datasetId,
      col_index: input.index,
      col_name: columnName(input.index),
      name: input.channel.name,
      unit: input.channel.unit,
      data_type: input.channel.dataType,
      physical_type: input.physicalType,
      updated_at: input.now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * Change the given fields of a channel of the dataset; undefined when the dataset has no such channel.
 * A name already taken in the dataset surfaces as a unique violation.
 */
export function updateChannel(
  db: Executor,
  input: {
    datasetId: string;
    channelId: string;
    name?: string | undefined;
    unit?: string | undefined;
    dataType?: string | undefined;
    now: Date;
  },
): Promise<ChannelRow | undefined> {
  return db
    .updateTable('channels')
    .set({
      ...(input.name !== undefined && { name: input.name }),
      ...(input.unit !== undefined && { unit: input.unit }),
      ...(input.dataType !== undefined && { data_type: input.dataType }),
      updated_at: input.now,
    })
    .where('id', '=', input.channelId)
    .where('dataset_id', '=', input.datasetId)
    .returningAll()
    .executeTakeFirst();
}

/** Channels found in a dataset's stored data (telemetry/narrow/channels.ts), those already declared left alone; how many were new. */
export async function insertFoundChannels(db: Executor, rows: readonly Insertable<ChannelsTable>[]): Promise<number> {
  const inserted = await db.insertInto('channels').values([...rows]).onConflict((oc) => oc.doNothing()).returning('id').execute();
  return inserted.length;
}

/** A new dataset's row (a log import's, imports/import.ts). */
export async function insertDataset(db: Executor, row: Insertable<DatasetsTable>): Promise<void> {
  await db.insertInto('datasets').values(row).execute();
}

/** Delete a dataset's row; what references it cascades. */
export async function deleteDataset(db: Executor, datasetId: string): Promise<void> {
  await db.deleteFrom('datasets').where('id', '=', datasetId).execute();
}
