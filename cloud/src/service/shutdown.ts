import type { Logger } from '../platform/logger.ts';

/** How soon a repeat of the same signal counts as one delivery (see below). */
export const SIGNAL_REPEAT_WINDOW_MS = 1000;

/**
 * SIGTERM / SIGINT: stop gracefully (`destroy`), then exit 0. A second signal, or the grace period
 * running out, exits 1 at once: an orchestrator's SIGKILL would follow anyway, and what was not
 * finished is safe (un-acked queue messages are redelivered, unpublished outbox rows are relayed).
 *
 * The same signal again within `repeatWindowMs` is not a second request: one Ctrl-C under
 * `deno task start` (and some terminals) arrives twice within milliseconds, once from the terminal
 * to the process group and once forwarded by the parent.
 */
export function exitOnSignals(input: {
  destroy: () => Promise<void>;
  logger: Logger;
  graceMs: number;
  /** Tests pass their own; main.ts uses the process's. */
  exit?: (code: number) => void;
  signals?: { on(signal: 'SIGTERM' | 'SIGINT', listener: (signal: NodeJS.Signals) => void): unknown };
  /** A repeat of the first signal this soon after it is ignored. */
  repeatWindowMs?: number;
}): void {
  const { logger, graceMs } = input;
  const exit = input.exit ?? ((code: number) => process.exit(code));
  const signals = input.signals ?? process;
  const repeatWindowMs = input.repeatWindowMs ?? SIGNAL_REPEAT_WINDOW_MS;
  let started = 0;
  let first: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (started !== 0) {
      const ms = Date.now() - started;
      if (signal === first && ms < repeatWindowMs) {
        logger.info({ signal, ms }, 'shutdown: the same signal again at once; taken as a repeat of the first, not a second request');
        return;
      }
      logger.warn({ signal, ms }, 'shutdown: second signal; exiting now');
      exit(1);
      return;
    }
    started = Date.now();
    first = signal;
    logger.info({ signal, graceMs }, 'shutdown: started');
    const timer = setTimeout(() => {
      logger.error({ graceMs }, 'shutdown: grace period over; exiting before everything finished');
      exit(1);
    }, graceMs);
    input.destroy().then(
      () => {
        clearTimeout(timer);
        logger.info({ ms: Date.now() - started }, 'shutdown: complete');
        exit(0);
      },
      (err: unknown) => {
        clearTimeout(timer);
        logger.error({ err, ms: Date.now() - started }, 'shutdown: failed');
        exit(1);
      },
    );
  };
  signals.on('SIGTERM', onSignal);
  signals.on('SIGINT', onSignal);
}
