import { sql } from 'kysely';
import type { AppContext } from '../../platform/context.ts';
import { watchedDataset, type WatchedDataset } from '../../platform/limit-watch.ts';
import type { DatasetRow } from '../../db/schema.ts';
import type { PointSource, SinkCounts, TelemetrySink } from '../ingest/sink.ts';
import { binaryArrays, textArrays } from '../sql/sql-arrays.ts';
import { forEachFramePoint } from './frame-points.ts';
import { narrowCommittedSamples } from './limit-samples.ts';
import { GroupPool, NarrowBatch } from './narrow-batch.ts';
import { prepareFastWrite, runFastWrite, writeInTransaction, type NarrowTarget, type SessionCache } from './narrow-writer.ts';

/**
 * The mavlink-raw-v1 sink: each point's frame is checked and decoded when staged (so a bad frame fails
 * its own message, named by index, before anything of it is written) and a flush writes the staged
 * frames' rows. Counts are in frames: `written` newly stored, `duplicates` already held (redelivery),
 * `ignored` always 0 (the format has no channel ids to get wrong).
 *
 * Writes take turns, in flush order. A flush called while the one before it is still running prepares
 * its statement at once from the cache that write will leave (narrow-writer.ts FastWrite), so only the
 * round trip is left once its turn comes; a write that fails makes every write queued behind it fail
 * unwritten.
 */
class NarrowSink implements TelemetrySink {
  readonly #ctx: AppContext;
  readonly #target: NarrowTarget;
  readonly #watched: WatchedDataset;
  readonly #pool = new GroupPool();
  #batch: NarrowBatch;
  /** The cache the last completed write left. */
  #cache: SessionCache | undefined;
  /** The cache the last flush leaves if it commits on its fast path; undefined while that cannot be known. */
  #expected: SessionCache | undefined;
  /** The last flush's write: the next one starts when it has settled. */
  #tail: Promise<unknown> = Promise.resolve();
  #flushes = 0;
  #accepted = 0;
  #written = 0;
  #duplicates = 0;

  constructor(ctx: AppContext, target: NarrowTarget, sysid: number | undefined, watched: WatchedDataset) {
    this.#ctx = ctx;
    this.#target = target;
    this.#watched = watched;
    this.#batch = new NarrowBatch(sysid, this.#pool);
  }

  get staged(): number {
    return this.#batch.frames;
  }

  /** The batch being staged: an importer adds a log's rows to it directly (NarrowBatch.addLogRow). */
  get batch(): NarrowBatch {
    return this.#batch;
  }

  async stage(source: PointSource, locate: (index: number) => string): Promise<void> {
    const batch = this.#batch;
    const mark = batch.mark();
    const sysid = batch.sysid;
    const nowUs = this.#ctx.clock.now().getTime() * 1000;
    try {
      this.#accepted += forEachFramePoint(source, locate, (buf, start, end, receivedUs, frameSeq, index) =>
        batch.addAt(buf, start, end, receivedUs, frameSeq, nowUs, locate, index),
      );
    } catch (error) {
      batch.rollback(mark, sysid);
      throw error;
    }
  }

  flush(): Promise<{ points: number; rows: number }> {
    const batch = this.#batch;
    this.#batch = new NarrowBatch(batch.sysid, this.#pool);
    const flush = ++this.#flushes;
    const db = this.#ctx.db;
    const early = this.#expected && prepareFastWrite(db, this.#target, batch, this.#expected);
    this.#expected = early?.after;
    const run = this.#tail.then(async () => {
      try {
        // Prepared from what the write before would leave: good only if that is what it left.
        const fast = early && early.basis === this.#cache ? early : this.#cache && prepareFastWrite(db, this.#target, batch, this.#cache);
        if (flush === this.#flushes) this.#expected = fast?.after;
        // Refused (the dataset moved on) or not preparable: the transaction, without trying the same cache again.
        const result = (fast && (await runFastWrite(db, this.#target, fast))) || (await writeInTransaction(db, this.#target, batch, this.#cache));
        this.#cache = result.cache;
        if (flush === this.#flushes) this.#expected = result.cache;
        this.#written += result.written;
        this.#duplicates += result.duplicates;
        const points = batch.frames;
        // Committed: the frames it newly stored go to the dataset's limit rules, which copy what they watch before the groups are reused.
        await this.#ctx.limits.committed(this.#watched, narrowCommittedSamples(batch, result.priorMaxFrameSeq));
        // Committed, and its statement built: nothing reads the batch again, so its groups serve the next ones.
        this.#pool.give(batch);
        return { points, rows: result.rows };
      } catch (error) {
        this.#expected = undefined;
        throw error;
      }
    });
    this.#tail = run;
    return run;
  }

  counts(): SinkCounts {
    return { accepted: this.#accepted, written: this.#written, duplicates: this.#duplicates, ignored: 0, ignoredChannelIds: [] };
  }
}

/** SinkFactory of SINKS.narrow['mavlink-raw-v1']. */
export function openNarrowSink(ctx: AppContext, dataset: DatasetRow): Promise<TelemetrySink> {
  return openNarrowWriter(ctx, dataset);
}

/**
 * The writer an importer fills: frames staged as a stream's are (stage), or a log's rows added to
 * `batch`; flush() writes what is staged, taking turns behind the flushes before it.
 */
export interface NarrowRowWriter extends TelemetrySink {
  readonly batch: NarrowBatch;
}

export async function openNarrowWriter(ctx: AppContext, dataset: DatasetRow): Promise<NarrowRowWriter> {
  const bound = await sql<{ sysid: number }>`select sysid from narrow_datasets where dataset_id = ${dataset.id}::uuid`.execute(ctx.db);
  const target = { datasetId: dataset.id, arrays: ctx.database.kind === 'postgres' ? binaryArrays : textArrays, pool: ctx.database.pool, timescale: ctx.database.timescale };
  return new NarrowSink(ctx, target, bound.rows[0]?.sysid, watchedDataset(dataset));
}
