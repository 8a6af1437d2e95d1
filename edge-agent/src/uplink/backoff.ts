// Reconnect delays: exponential with jitter, capped. Pure (the random source is injected), so the
// sequence is tested without waiting.
//
// "Equal jitter": the n-th delay after the last success is d/2 + random·d/2 with d = min(cap, base·2^n).
// Half of it is fixed, so a fleet of agents that lost the cloud at the same moment neither retries in
// lockstep nor hammers it with near-zero delays; the cap bounds how stale an agent can be once the
// cloud is back. A failure that a retry cannot fix on its own (a revoked key, a server that does not
// take this format yet) waits the cap straight away: `next({ permanent: true })`.

export interface BackoffOptions {
  /** First delay's upper bound, ms. */
  readonly baseMs: number;
  /** Upper bound of every delay, ms. */
  readonly capMs: number;
  /** [0, 1); Math.random by default. */
  readonly random?: () => number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 250, capMs: 30_000 };

export class Backoff {
  readonly #baseMs: number;
  readonly #capMs: number;
  readonly #random: () => number;
  #failures = 0;

  constructor(options: BackoffOptions = DEFAULT_BACKOFF) {
    if (!(options.baseMs > 0) || !(options.capMs >= options.baseMs)) {
      throw new RangeError(`back-off needs 0 < baseMs <= capMs, got ${options.baseMs} and ${options.capMs}`);
    }
    this.#baseMs = options.baseMs;
    this.#capMs = options.capMs;
    this.#random = options.random ?? Math.random;
  }

  /** Consecutive failures since the last reset. */
  get failures(): number {
    return this.#failures;
  }

  /** The delay before the next attempt, ms; counts one more failure. */
  next(options: { permanent?: boolean } = {}): number {
    const n = this.#failures++;
    const ceiling = options.permanent ? this.#capMs : Math.min(this.#capMs, this.#baseMs * 2 ** Math.min(n, 52));
    const r = Math.min(Math.max(this.#random(), 0), 1);
    return Math.round(ceiling / 2 + (r * ceiling) / 2);
  }

  /** After a success: the next failure starts from the base again. */
  reset(): void {
    this.#failures = 0;
  }
}
