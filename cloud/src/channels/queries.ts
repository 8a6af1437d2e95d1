import type { ChannelRow } from '../db/schema.ts';
import type { Executor } from '../db/executor.ts';

/**
 * Lock the dataset's row until the transaction ends, so two declarations on one dataset cannot pick the
 * same next column index. Only meaningful on a transaction.
 */
export async function lockDatasetForChannels(tx: Executor, datasetId: string): Promise<void> {
  await tx.selectFrom('datasets').select('id').where('id', '=', datasetId).forUpdate().execute();
}

// Written by datasets/, the owner of `channels`.
export { updateChannel } from '../datasets/queries.ts';
