import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../platform/logger.ts';
import { exitOnSignals } from './shutdown.ts';

const logger = createLogger('silent');

function setUp(destroy: () => Promise<void>, graceMs = 5000, repeatWindowMs?: number) {
  const signals = new EventEmitter();
  const exits: number[] = [];
  let exited: (code: number) => void = () => {};
  const exitedOnce = new Promise<number>((resolve) => (exited = resolve));
  exitOnSignals({
    destroy,
    logger,
    graceMs,
    signals,
    repeatWindowMs,
    exit: (code) => {
      exits.push(code);
      exited(code);
    },
  });
  return { signals, exits, exitedOnce };
}

describe('exitOnSignals', () => {
  it('destroys once and exits 0 when the stop finishes', async () => {
    let destroyed = 0;
    const { signals, exits, exitedOnce } = setUp(async () => {
      destroyed += 1;
    });
    signals.emit('SIGTERM', 'SIGTERM');
    expect(await exitedOnce).toBe(0);
    expect(destroyed).toBe(1);
    expect(exits).toEqual([0]);
  });

  it('exits 1 at once on a second signal while stopping', async () => {
    const { signals, exits } = setUp(() => new Promise(() => {}), 5000, 20);
    signals.emit('SIGINT', 'SIGINT');
    expect(exits).toEqual([]);
    await new Promise((r) => setTimeout(r, 40));
    signals.emit('SIGINT', 'SIGINT');
    expect(exits).toEqual([1]);
  });

  it('takes the same signal again within the repeat window as one (deno task forwards Ctrl-C twice)', async () => {
    let release!: () => void;
    let destroyed = 0;
    const { signals, exits, exitedOnce } = setUp(() => {
      destroyed += 1;
      return new Promise<void>((resolve) => (release = resolve));
    });
    signals.emit('SIGINT', 'SIGINT');
    signals.emit('SIGINT', 'SIGINT');
    await new Promise((r) => setTimeout(r, 10));
    signals.emit('SIGINT', 'SIGINT');
    expect(exits).toEqual([]);
    release();
    expect(await exitedOnce).toBe(0);
    expect(exits).toEqual([0]);
    expect(destroyed).toBe(1);
  });

  it('a different signal within the repeat window is a second request', () => {
    const { signals, exits } = setUp(() => new Promise(() => {}));
    signals.emit('SIGINT', 'SIGINT');
    signals.emit('SIGTERM', 'SIGTERM');
    expect(exits).toEqual([1]);
  });

  it('exits 1 when the grace period runs out', async () => {
    const { signals, exitedOnce } = setUp(() => new Promise(() => {}), 50);
    const started = Date.now();
    signals.emit('SIGTERM', 'SIGTERM');
    expect(await exitedOnce).toBe(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
  });

  it('exits 1 when the stop fails', async () => {
    const { signals, exitedOnce } = setUp(() => Promise.reject(new Error('pool would not close')));
    signals.emit('SIGTERM', 'SIGTERM');
    expect(await exitedOnce).toBe(1);
  });
});
