import type { Logger } from './logger.ts';

/**
 * SIGTERM / SIGINT: stop gracefully (`destroy`), then exit 0. A second signal, or the grace period
 * running out, exits 1 at once: an orchestrator's SIGKILL would follow anyway, and what was not
 * finished is safe (un-acked queue messages are redelivered, unpublished outbox rows are relayed).
 */
export function exitOnSignals(input: {
  destroy: () => Promise<void>;
  logger: Logger;
  graceMs: number;
  /** Tests pass their own; main.ts uses the process's. */
  exit?: (code: number) => void;
  signals?: { on(signal: 'SIGTERM' | 'SIGINT', listener: (signal: NodeJS.Signals) => void): unknown };
}): void {
  const { logger, graceMs } = input;
  const exit = input.exit ?? ((code: number) => process.exit(code));
  const signals = input.signals ?? process;
  let started = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    if (started !== 0) {
      logger.warn({ signal, ms: Date.now() - started }, 'shutdown: second signal; exiting now');
      exit(1);
      return;
    }
    started = Date.now();
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
