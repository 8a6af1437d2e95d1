import type { Logger } from './logger.ts';
import { TimeoutError, withTimeout } from './metrics.ts';

/** What /readyz reports per dependency. */
export type CheckState = 'ok' | 'failed' | 'timeout' | 'not_configured';

export interface ReadinessReport {
  ready: boolean;
  /** Set when the process is not ready whatever its dependencies say. */
  reason?: 'shutting_down';
  checks: Record<string, CheckState>;
}

/** Each check gets this long: a load balancer's probe must not hang on a dependency that hangs. */
export const READINESS_TIMEOUT_MS = 2000;

/**
 * The dependencies a process needs to serve traffic (Postgres, NATS), checked in parallel on every
 * /readyz. A check is a round trip that throws when the dependency is unreachable.
 */
export class Readiness {
  readonly #checks = new Map<string, (() => Promise<unknown>) | 'not_configured'>();
  readonly #logger: Logger;
  readonly #timeoutMs: number;
  #shuttingDown = false;

  constructor(logger: Logger, timeoutMs = READINESS_TIMEOUT_MS) {
    this.#logger = logger;
    this.#timeoutMs = timeoutMs;
  }

  set(name: string, check: (() => Promise<unknown>) | 'not_configured'): void {
    this.#checks.set(name, check);
  }

  /** From here on every check answers not ready, so load balancers stop routing here while calls in flight finish. */
  markShuttingDown(): void {
    this.#shuttingDown = true;
  }

  async check(requestId?: string): Promise<ReadinessReport> {
    // No round trips: the pool may be closing, and the answer is no whatever they say.
    if (this.#shuttingDown) return { ready: false, reason: 'shutting_down', checks: {} };
    const entries = await Promise.all(
      [...this.#checks].map(async ([name, check]): Promise<[string, CheckState]> => {
        if (check === 'not_configured') return [name, 'not_configured'];
        try {
          await withTimeout(check(), this.#timeoutMs, `${name} did not answer within ${this.#timeoutMs} ms`);
          return [name, 'ok'];
        } catch (err) {
          // The reason goes to the log, not to an unauthenticated caller.
          this.#logger.warn({ err, check: name, requestId }, 'readiness check failed');
          return [name, err instanceof TimeoutError ? 'timeout' : 'failed'];
        }
      }),
    );
    const checks = Object.fromEntries(entries);
    return { ready: entries.every(([, state]) => state === 'ok' || state === 'not_configured'), checks };
  }
}
