import { afterEach, describe, expect, it, vi } from 'vitest';
import { ManualClock } from '../platform/clock.ts';
import type { AppContext } from '../platform/context.ts';
import type { Logger } from '../platform/logger.ts';
import { startSweeper, sweepOutcomeLog } from './sweeper.ts';

/** A logger that keeps each line as [level, message]. */
function recordingLogger() {
  const lines: [string, string, Record<string, unknown>][] = [];
  const at = (level: string) => (fields: Record<string, unknown>, message: string) => void lines.push([level, message, fields]);
  const logger = { info: at('info'), warn: at('warn'), error: at('error') } as unknown as Logger;
  return { logger, lines, levels: () => lines.map(([level, message]) => `${level}: ${message}`) };
}

/** What node-postgres throws when nothing listens on the database port. */
const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
/** A query the server answered with an error: a bug, not an outage. */
const badStatement = () => Object.assign(new Error('column "ack_deadline_at" does not exist'), { code: '42703' });

describe('timeout sweeper logging', () => {
  it('logs one warn when the database becomes unreachable, nothing on the failing ticks after, one info on recovery', () => {
    const clock = new ManualClock();
    const { logger, lines, levels } = recordingLogger();
    const log = sweepOutcomeLog(logger, clock);

    log.succeeded([]);
    for (let tick = 0; tick < 5; tick++) {
      log.failed(refused());
      clock.advance(1_000);
    }
    // node-postgres loses the socket mid-query without a code, and a pool timeout wraps the cause.
    log.failed(new Error('Connection terminated unexpectedly'));
    log.failed(new Error('pool gave up', { cause: refused() }));
    expect(levels()).toEqual(['warn: timeout sweep paused: database unreachable (logged once until it recovers)']);

    log.succeeded(['c1']);
    expect(levels().slice(1)).toEqual(['info: timeout sweep recovered: database reachable again', 'info: commands timed out']);
    expect(lines[1]![2]).toEqual({ outageMs: 5_000, failedSweeps: 7 });

    // Healthy ticks stay quiet; a second outage is announced again.
    log.succeeded([]);
    log.failed(refused());
    log.failed(refused());
    expect(levels().slice(3)).toEqual(['warn: timeout sweep paused: database unreachable (logged once until it recovers)']);
  });

  it('keeps error level, every time, for failures that are not the database being unreachable', () => {
    const clock = new ManualClock();
    const { logger, levels } = recordingLogger();
    const log = sweepOutcomeLog(logger, clock);

    log.failed(badStatement());
    log.failed(badStatement());
    log.failed(refused());
    log.failed(badStatement());
    log.succeeded([]);
    expect(levels()).toEqual([
      'error: timeout sweep failed',
      'error: timeout sweep failed',
      'warn: timeout sweep paused: database unreachable (logged once until it recovers)',
      'error: timeout sweep failed',
      'info: timeout sweep recovered: database reachable again',
    ]);
  });

  describe('the running sweeper', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('sweeps every 30 s through an outage and logs only its start and its end', async () => {
      vi.useFakeTimers();
      const clock = new ManualClock();
      const { logger, levels } = recordingLogger();
      const ctx = { db: {}, clock, logger } as unknown as AppContext;
      // One result per sweep: up, down for four ticks, up again.
      const script: (() => string[])[] = [
        () => [],
        ...Array.from({ length: 4 }, () => () => {
          throw refused();
        }),
        () => ['c9'],
      ];
      let sweeps = 0;
      const sweeper = startSweeper(ctx, async () => script[sweeps++]!());
      for (let tick = 1; tick < script.length; tick++) {
        clock.advance(30_000);
        await vi.advanceTimersByTimeAsync(30_000);
      }
      await sweeper.stop();

      expect(sweeps).toBe(script.length);
      expect(levels()).toEqual([
        'warn: timeout sweep paused: database unreachable (logged once until it recovers)',
        'info: timeout sweep recovered: database reachable again',
        'info: commands timed out',
      ]);
    });
  });
});
