// Acknowledgements: how far the cloud has confirmed the spool (ackedSeq), and its persistence in
// state.json together with the high-water seq. Persisted in the background, batched on a timer rather
// than once per ack, one write at a time; after each write the segments the persisted acked seq fully
// covers are deleted (by eviction.ts, through onPersisted). A segment is deleted only once the
// *persisted* acked seq covers all of it, so nextSeq can always be rebuilt from what is on disk.
import type { FileHandle } from 'node:fs/promises';
import type { SpoolWarning } from './errors.ts';
import { unackedIn } from './segment.ts';
import { writeSpoolState } from './spool-state.ts';
import type { SegmentWriter } from './writer.ts';

export interface AckStoreInit {
  readonly dir: string;
  readonly dirHandle: FileHandle;
  readonly writer: SegmentWriter;
  readonly persistIntervalMs: number;
  /** What state.json held at open. */
  readonly ackedSeq: number;
  readonly highWaterSeq: number;
  /** Runs after each persist (deletes the segments the persisted acked seq now covers). */
  readonly onPersisted: () => Promise<unknown>;
  readonly warn: (w: SpoolWarning) => void;
}

export class AckStore {
  readonly #o: AckStoreInit;
  #ackedSeq: number;
  #persistedAckedSeq: number;
  #persistedHighWater: number;
  #timer: NodeJS.Timeout | null = null;
  #persisting: Promise<void> | null = null;
  #ackedCount = 0;

  constructor(init: AckStoreInit) {
    this.#o = init;
    this.#ackedSeq = init.ackedSeq;
    this.#persistedAckedSeq = init.ackedSeq;
    this.#persistedHighWater = init.highWaterSeq;
  }

  get ackedSeq(): number {
    return this.#ackedSeq;
  }

  /** The acked seq state.json holds: what a crash now would come back with. */
  get persistedAckedSeq(): number {
    return this.#persistedAckedSeq;
  }

  /** Records newly acknowledged since open. */
  get ackedCount(): number {
    return this.#ackedCount;
  }

  /** Marks every record with seq ≤ `seq` acknowledged (see Spool.ack) and schedules persisting it. */
  ack(seq: bigint): void {
    if (seq <= BigInt(this.#ackedSeq)) return;
    const { writer } = this.#o;
    if (seq > BigInt(writer.durableSeq)) {
      throw new RangeError(`cannot ack seq ${seq}: only seqs up to ${writer.durableSeq} are durable`);
    }
    const n = Number(seq);
    for (const s of writer.segments) {
      if (s.lastSeq <= this.#ackedSeq) continue;
      if (s.firstSeq > n) break;
      this.#ackedCount += unackedIn(s, this.#ackedSeq) - unackedIn(s, n);
    }
    this.#ackedSeq = n;
    if (this.#timer === null && !writer.closing) {
      this.#timer = setTimeout(() => {
        this.#timer = null;
        this.persist().catch((error: unknown) => this.#o.warn({ kind: 'state-persist-failed', error }));
      }, this.#o.persistIntervalMs);
    }
  }

  /** Writes the acked offset and high-water seq now (after any write under way), then runs onPersisted. */
  async persist(): Promise<void> {
    const previous = this.#persisting;
    const run = (async () => {
      await previous?.catch(() => {});
      await this.#persistOnce();
    })();
    this.#persisting = run;
    try {
      await run;
    } finally {
      if (this.#persisting === run) this.#persisting = null;
    }
  }

  /** No more timed persists (closing: the spool persists once more itself). */
  cancelTimer(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  async #persistOnce(): Promise<void> {
    const ackedSeq = this.#ackedSeq;
    const highWaterSeq = Math.max(this.#o.writer.durableSeq, this.#persistedHighWater, ackedSeq);
    if (ackedSeq !== this.#persistedAckedSeq || highWaterSeq !== this.#persistedHighWater) {
      await writeSpoolState(this.#o.dir, this.#o.dirHandle, { ackedSeq, highWaterSeq });
      this.#persistedAckedSeq = ackedSeq;
      this.#persistedHighWater = highWaterSeq;
    }
    await this.#o.onPersisted();
  }
}
