// Pacing and clock of a tlog replay. At speed s a record stamped t goes out (t - t0) / s after the
// first; at 'max' nothing waits. The replay clock is the recording's time: it moves with the records
// handed out and, while the replay waits for the next record, runs on at s× up to that record's stamp,
// never past it. So a silence in the recording reads as a silence (at any speed, live during the wait
// at recorded speed), and neither a fast replay nor a pipeline stalled on the disk invents one.
export type ReplaySpeed = number | 'max';

export class ReplayPacer {
  readonly #speed: ReplaySpeed;
  readonly #monoMs: () => number;
  #anchorTs = 0;
  #anchorMs = 0;
  #anchored = false;
  #lastTs = 0;
  #lastMs = 0;
  /** How far the clock may run ahead of the last record handed out (the next record's stamp). */
  #capTs = 0;

  constructor(speed: ReplaySpeed, monoMs: () => number = () => performance.now()) {
    if (speed !== 'max' && !(speed > 0)) throw new RangeError(`replay speed must be > 0 or 'max', got ${speed}`);
    this.#speed = speed;
    this.#monoMs = monoMs;
  }

  /** Milliseconds to wait before handing out the record stamped `tsUs`. */
  delayFor(tsUs: number): number {
    if (this.#speed === 'max') return 0;
    const now = this.#monoMs();
    if (!this.#anchored || tsUs < this.#lastTs) {
      // First record, or the recording's clock stepped back: pace from here.
      this.#anchored = true;
      this.#anchorTs = tsUs;
      this.#anchorMs = now;
      return 0;
    }
    const due = this.#anchorMs + (tsUs - this.#anchorTs) / 1000 / this.#speed;
    if (due <= now) return 0;
    this.#capTs = Math.max(this.#capTs, tsUs);
    return due - now;
  }

  /** The record stamped `tsUs` was handed out. */
  emitted(tsUs: number): void {
    this.#lastTs = tsUs;
    this.#lastMs = this.#monoMs();
    this.#capTs = tsUs;
  }

  /** Replay clock, µs of the recording (0 before the first record). */
  now(): number {
    if (this.#speed === 'max') return this.#lastTs;
    const running = this.#lastTs + (this.#monoMs() - this.#lastMs) * 1000 * this.#speed;
    return Math.min(running, this.#capTs);
  }
}
