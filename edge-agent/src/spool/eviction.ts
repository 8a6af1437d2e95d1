// Eviction: which segments leave the spool, and their files' unlinking. Fully acknowledged segments go
// once the persisted acked seq covers them; when an append would pass maxBytes, the full policy
// decides (see spool.ts): 'drop-oldest' deletes the oldest segments, acknowledged ones first, and
// counts the unacknowledged records lost; 'reject-new' frees only what is acknowledged. The segment
// being written, and segments with bytes still on their way to disk, never go.
import { rm } from 'node:fs/promises';
import type { AckStore } from './ack-store.ts';
import type { SpoolWarning } from './errors.ts';
import type { ResolvedOptions } from './options.ts';
import { closeSegmentFile, unackedIn } from './segment.ts';
import type { SegmentWriter } from './writer.ts';

export interface EvictionInit {
  readonly opts: Pick<ResolvedOptions, 'fullPolicy' | 'maxBytes'>;
  readonly writer: SegmentWriter;
  readonly acks: AckStore;
  readonly warn: (w: SpoolWarning) => void;
}

export class Eviction {
  readonly #o: EvictionInit;
  /** Unlinks under way. */
  readonly #background = new Set<Promise<void>>();
  #overBudgetWarned = false;
  #dropped = 0;

  constructor(init: EvictionInit) {
    this.#o = init;
  }

  /** Unacknowledged records deleted by the 'drop-oldest' policy since open. */
  get dropped(): number {
    return this.#dropped;
  }

  /**
   * Frees room for `need` more bytes as the full policy allows. false: the policy refuses the append
   * ('reject-new' and not enough acknowledged); under 'drop-oldest' the append always goes ahead,
   * over the bound (with one 'over-budget' warning) when nothing more can be dropped.
   */
  makeRoom(need: number): boolean {
    const { writer, acks, warn } = this.#o;
    const { fullPolicy: policy, maxBytes } = this.#o.opts;
    while (writer.totalBytes + need > maxBytes) {
      const oldest = writer.segments[0];
      // The segment being written, and segments with bytes still on their way, cannot go.
      if (!oldest || oldest === writer.active || oldest.durableSize !== oldest.size) break;
      const ackedSeq = acks.ackedSeq;
      const unacked = unackedIn(oldest, ackedSeq);
      if (unacked > 0 && policy === 'reject-new') break;
      void this.#removeOldestSegment();
      if (unacked > 0) {
        this.#dropped += unacked;
        warn({
          kind: 'dropped-oldest',
          segment: oldest.name,
          records: unacked,
          firstSeq: BigInt(Math.max(oldest.firstSeq, ackedSeq + 1)),
          lastSeq: BigInt(oldest.lastSeq),
        });
      }
    }
    if (writer.totalBytes + need <= maxBytes) {
      this.#overBudgetWarned = false;
      return true;
    }
    if (policy === 'reject-new') return false;
    if (!this.#overBudgetWarned) {
      this.#overBudgetWarned = true;
      warn({ kind: 'over-budget', bytes: writer.totalBytes + need, maxBytes });
    }
    return true;
  }

  /** Deletes sealed segments the persisted acked seq fully covers; returns the unlink jobs. */
  deleteAckedSegments(): Promise<void>[] {
    const { writer, acks } = this.#o;
    const jobs: Promise<void>[] = [];
    for (;;) {
      const oldest = writer.segments[0];
      if (!oldest || oldest === writer.active || oldest.durableSize !== oldest.size) return jobs;
      if (oldest.lastSeq > acks.persistedAckedSeq) return jobs;
      jobs.push(this.#removeOldestSegment());
    }
  }

  /** Waits for the unlinks under way. */
  async settle(): Promise<void> {
    await Promise.allSettled(this.#background);
  }

  /** Forgets the oldest segment now and unlinks its file in the background. */
  #removeOldestSegment(): Promise<void> {
    const seg = this.#o.writer.forgetOldestSegment();
    if (!seg) return Promise.resolve();
    const job = (async () => {
      try {
        await rm(seg.path, { force: true });
      } catch (error) {
        this.#o.warn({ kind: 'unlink-failed', segment: seg.name, error });
      }
      if (seg.busy === 0) await closeSegmentFile(seg);
    })();
    this.#background.add(job);
    void job.finally(() => this.#background.delete(job));
    return job;
  }
}
