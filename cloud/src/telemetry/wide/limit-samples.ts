import type { CommittedSamples } from '../../platform/limit-watch.ts';
import { channelIndexOf, type WideBatch } from './wide-batch.ts';

/**
 * A committed wide batch as the limit watcher reads it: the numeric cells the write newly stored
 * (`fresh`, from the writer), by channel index, in time order (a batch's rows are). A cell the dataset
 * already held (a redelivered or overlapping append) is not visited.
 */
export function wideCommittedSamples(batch: WideBatch, fresh: ReadonlyArray<Uint8Array>): CommittedSamples {
  return {
    forEach(signal, visit) {
      const index = channelIndexOf(signal);
      if (index < 0) return;
      const c = batch.columns.findIndex((column) => column.info.index === index);
      const values = batch.columns[c]?.values;
      const mask = fresh[c];
      if (!values || !mask) return;
      const times = batch.times;
      for (let i = 0; i < times.length; i++) if (mask[i]) visit(times[i]!, values[i]!);
    },
  };
}
