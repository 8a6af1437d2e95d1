import type { AppContext } from '../../platform/context.ts';
import { watchedDataset, type WatchedDataset } from '../../platform/limit-watch.ts';
import { listChannelRows } from '../../datasets/queries.ts';
import type { DatasetRow } from '../../db/schema.ts';
import { stageEncodedBatch, stageEncodedPoint } from './point-decoder.ts';
import type { PointSource, SinkCounts, TelemetrySink } from '../ingest/sink.ts';
import { binaryArrays, textArrays } from '../sql/sql-arrays.ts';
import { UnknownColumnError, WideBatchBuilder, writableColumns } from './wide-batch.ts';
import { writeWideBatch, type WideTarget } from './wide-writer.ts';
import { PackCache } from './pack-cache.ts';
import { wideCommittedSamples } from './limit-samples.ts';

/** A channel list is re-read on an unknown ch_N at most this often (the dataset may have been widened). */
const REFRESH_INTERVAL_MS = 1000;

class WideSink implements TelemetrySink {
  #ctx: AppContext;
  #target: WideTarget;
  #watched: WatchedDataset;
  #builder: WideBatchBuilder;
  #refreshedAt: number;
  #written = 0;
  #duplicates = 0;
  /** The last flush's write. */
  #tail: Promise<unknown> = Promise.resolve();

  constructor(ctx: AppContext, target: WideTarget, builder: WideBatchBuilder, watched: WatchedDataset) {
    this.#ctx = ctx;
    this.#target = target;
    this.#watched = watched;
    this.#builder = builder;
    this.#refreshedAt = performance.now();
  }

  get staged(): number {
    return this.#builder.size;
  }

  async stage(source: PointSource, locate: (index: number) => string): Promise<void> {
    const mark = this.#builder.mark();
    try {
      this.#stageAll(source, locate);
    } catch (error) {
      this.#builder.rollback(mark);
      // A ch_N unknown when the stream opened may have been added since (the dataset was widened).
      if (!(error instanceof UnknownColumnError) || !(await this.#refresh())) throw error;
      try {
        this.#stageAll(source, locate);
      } catch (again) {
        this.#builder.rollback(mark);
        throw again;
      }
    }
  }

  #stageAll(source: PointSource, locate: (index: number) => string): void {
    const builder = this.#builder;
    if ('encodedBatch' in source) stageEncodedBatch(builder, source.encodedBatch, locate);
    else if ('encodedPoints' in source) source.encodedPoints.forEach((bytes, i) => stageEncodedPoint(builder, bytes, locate, i));
    else source.points.forEach((point, i) => builder.addPoint(point, locate, i));
  }

  flush(): Promise<{ points: number; rows: number }> {
    const batch = this.#builder.take();
    const points = batch.cells + batch.mergedInBatch;
    // Writes take turns in flush order; behind a failed one, this one fails unwritten (sink.ts).
    const run = this.#tail.then(async () => {
      const result = await writeWideBatch(this.#ctx.db, this.#target, batch);
      // Committed: what it newly stored goes to the dataset's limit rules (they copy what they watch).
      await this.#ctx.limits.committed(this.#watched, wideCommittedSamples(batch, result.fresh));
      this.#written += result.written;
      this.#duplicates += result.duplicates;
      return { points, rows: result.rows };
    });
    this.#tail = run;
    return run;
  }

  counts(): SinkCounts {
    return {
      accepted: this.#builder.accepted,
      written: this.#written,
      duplicates: this.#duplicates,
      ignored: this.#builder.ignored,
      ignoredChannelIds: [...this.#builder.ignoredIds],
    };
  }

  /** Re-read the channel list; true when that may have helped. */
  async #refresh(): Promise<boolean> {
    if (performance.now() - this.#refreshedAt < REFRESH_INTERVAL_MS) return false;
    this.#refreshedAt = performance.now();
    this.#builder.setColumns(writableColumns(await listChannelRows(this.#ctx.db, this.#target.datasetId)));
    return true;
  }
}

export async function openWideSink(ctx: AppContext, dataset: DatasetRow): Promise<TelemetrySink> {
  const columns = writableColumns(await listChannelRows(ctx.db, dataset.id));
  // The sink's writes take turns (flush), so the packs it remembers are the ones its last write stored.
  const target = { datasetId: dataset.id, table: dataset.table_name!, arrays: ctx.database.kind === 'postgres' ? binaryArrays : textArrays, packs: new PackCache(), pool: ctx.database.pool };
  return new WideSink(ctx, target, new WideBatchBuilder(columns), watchedDataset(dataset));
}
