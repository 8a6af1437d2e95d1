// Which spool seq may be acknowledged. The spool's ack is one cumulative seq over every system id,
// while the cloud confirms frames per dataset (one per system id), a whole StreamSubmit session at a
// time, and sessions of different systems finish in any order. So the safe ack is
//
//     (the lowest seq handed to a session that the cloud has not confirmed yet) − 1
//
// or, with nothing unconfirmed, the highest seq handed out at all. Records are handed out in seq
// order (the spool reader's order), so each session holds an increasing run of seqs and its first
// seq is the lowest it holds.
//
// Pure bookkeeping (no I/O), tested on its own. One tracker per connection attempt: after a failure
// everything unconfirmed is read from the spool again, from its acked seq, and the server collapses
// the frames it already had on frame_seq.

export interface SessionRange {
  /** First seq handed to this session; null while it is empty. */
  readonly first: bigint | null;
  /** Last seq handed to this session; null while it is empty. */
  readonly last: bigint | null;
  readonly frames: number;
  readonly settled: boolean;
}

interface MutableRange {
  first: bigint | null;
  last: bigint | null;
  frames: number;
  settled: boolean;
}

export class AckTracker {
  #highest: bigint;
  readonly #open = new Set<MutableRange>();

  /** `baseline`: the spool's acked seq when the attempt starts (everything ≤ it is confirmed). */
  constructor(baseline: bigint) {
    this.#highest = baseline;
  }

  /** The highest seq handed out (or the baseline). */
  get highest(): bigint {
    return this.#highest;
  }

  /** Sessions begun and not yet settled. */
  get unsettled(): number {
    return this.#open.size;
  }

  /** A new, empty session. */
  begin(): SessionRange {
    const range: MutableRange = { first: null, last: null, frames: 0, settled: false };
    this.#open.add(range);
    return range;
  }

  /** `seq` goes to `range`. Seqs must be handed out in increasing order across all sessions. */
  add(range: SessionRange, seq: bigint): void {
    const r = range as MutableRange;
    if (r.settled) throw new Error('cannot add a frame to a session the cloud already confirmed');
    if (seq <= this.#highest) throw new RangeError(`seq ${seq} handed out after ${this.#highest}: records must be sent in seq order`);
    r.first ??= seq;
    r.last = seq;
    r.frames++;
    this.#highest = seq;
  }

  /**
   * A seq that needs no confirmation: a record the uplink skips (it could not be decoded). It only
   * moves the high-water mark, like a seq dropped by the spool's full policy.
   */
  skip(seq: bigint): void {
    if (seq <= this.#highest) throw new RangeError(`seq ${seq} skipped after ${this.#highest}`);
    this.#highest = seq;
  }

  /** The cloud confirmed every frame of `range`. */
  settle(range: SessionRange): void {
    const r = range as MutableRange;
    r.settled = true;
    this.#open.delete(r);
  }

  /** The highest seq such that every seq at or below it is confirmed (or needs no confirmation). */
  safeAck(): bigint {
    let lowest: bigint | null = null;
    for (const r of this.#open) {
      if (r.first !== null && (lowest === null || r.first < lowest)) lowest = r.first;
    }
    return lowest === null ? this.#highest : lowest - 1n;
  }
}
