import type { Sample } from '../series/lttb.ts';

/**
 * Holds one followed channel to its point budget while it streams: at most `budget` samples per
 * `windowUs` of data, whatever the channel's rate.
 *
 * Time is cut into slices, floor(budget / 3) − 1 of them per window, so that any window overlaps at most
 * floor(budget / 3) slices, wherever it starts. A slice's first sample leaves at once (a live plot
 * moves with the data, not a slice later); its minimum and maximum leave when the slice closes, which
 * is when a later slice's sample arrives or the dataset's head passes the slice's end. At most three
 * samples per slice, so at most `budget` per window; every sample sent is a real one, and a spike
 * inside a slice is never lost (it is the slice's minimum or maximum). Below the budget's rate (a 1 Hz
 * channel in a 10-minute window) each sample is its own slice's first and leaves as it comes.
 */
/** The smallest point budget Follow accepts: two slices per window. */
export const MIN_FOLLOW_BUDGET = 9;

export class Decimator {
  readonly #sliceUs: number;
  #slice = Number.NaN;
  #first: Sample | undefined;
  #min: Sample | undefined;
  #max: Sample | undefined;

  /** `budget` ≥ MIN_FOLLOW_BUDGET (below it, a window overlapping two slices could take six samples). */
  constructor(windowUs: number, budget: number) {
    this.#sliceUs = Math.max(1, windowUs / Math.max(1, Math.floor(budget / 3) - 1));
  }

  /** Take samples in time order; append to `out` what leaves now. */
  push(samples: readonly Sample[], out: Sample[]): void {
    for (const s of samples) {
      const slice = Math.floor(s.t / this.#sliceUs);
      if (slice === this.#slice) {
        if (this.#min === undefined || s.v < this.#min.v) this.#min = s;
        if (this.#max === undefined || s.v > this.#max.v) this.#max = s;
        continue;
      }
      // A sample older than the open slice (a late batch) joins it: the budget still holds.
      if (slice < this.#slice) {
        if (this.#min === undefined || s.v < this.#min.v) this.#min = s;
        if (this.#max === undefined || s.v > this.#max.v) this.#max = s;
        continue;
      }
      this.#close(out);
      this.#slice = slice;
      this.#first = s;
      out.push(s);
    }
  }

  /** The dataset's newest sample is at `headUs`: a slice that ended before it will get no more samples. */
  advance(headUs: number, out: Sample[]): void {
    if (Number.isNaN(this.#slice)) return;
    if (Math.floor(headUs / this.#sliceUs) > this.#slice) {
      this.#close(out);
      this.#slice = Number.NaN;
    }
  }

  /** Forget everything: after a reset, the next sample opens a slice of its own. */
  clear(): void {
    this.#slice = Number.NaN;
    this.#first = this.#min = this.#max = undefined;
  }

  /** Send the open slice's minimum and maximum (in time order), unless already sent as its first. */
  #close(out: Sample[]): void {
    const first = this.#first;
    const extremes = [this.#min, this.#max].filter((s): s is Sample => s !== undefined && s !== first);
    if (extremes.length === 2 && extremes[0] === extremes[1]) extremes.pop();
    extremes.sort((a, b) => a.t - b.t);
    out.push(...extremes);
    this.#first = this.#min = this.#max = undefined;
  }
}
