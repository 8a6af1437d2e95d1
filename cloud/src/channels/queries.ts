import type { ChannelRow } from '../db/schema.ts';
import type { Executor } from '../db/executor.ts';

/**
 * Lock the dataset's row until the transaction ends, so two declarations on one dataset cannot pick the
 * same next column index. Only meaningful on a transaction.
 */
export async function lockDatasetForChannels(tx: Executor, datasetId: string): Promise<void> {
  await tx.selectFrom('datasets').select('id').where('id', '=', datasetId).forUpdate().execute();
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
