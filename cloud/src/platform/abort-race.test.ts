import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { raceAbort } from './abort-race.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const ABORTED = Symbol('aborted');

describe('raceAbort', () => {
  it('answers the promise, or the abort, and the promise when both are ready', async () => {
    const controller = new AbortController();
    await expect(raceAbort(Promise.resolve(1), controller.signal, ABORTED)).resolves.toBe(1);
    await expect(raceAbort(Promise.reject(new Error('read failed')), controller.signal, ABORTED)).rejects.toThrow('read failed');
    const pending = raceAbort(new Promise<number>(() => {}), controller.signal, ABORTED);
    controller.abort();
    await expect(pending).resolves.toBe(ABORTED);
    await expect(raceAbort(Promise.resolve(2), controller.signal, ABORTED)).resolves.toBe(2);
    await expect(raceAbort(new Promise<number>(() => {}), controller.signal, ABORTED)).resolves.toBe(ABORTED);
  });

  it('keeps nothing it was raced with reachable while the signal stays unaborted', async () => {
    const controller = new AbortController();
    const refs: Array<WeakRef<object>> = [];
    for (let i = 0; i < 20; i++) {
      const message = { payload: new Uint8Array(1024) };
      refs.push(new WeakRef(message));
      await raceAbort(Promise.resolve(message), controller.signal, ABORTED);
    }
    // Let the reactions of the last race run, then collect.
    await new Promise((r) => setImmediate(r));
    gc();
    await new Promise((r) => setImmediate(r));
    gc();
    // The last one may still sit in this async function's frame; the other 19 must be gone.
    expect(refs.filter((r) => r.deref() !== undefined).length).toBeLessThanOrEqual(1);
  });

  it('the pattern it replaces does keep them reachable (this test proves the one above can fail)', async () => {
    const controller = new AbortController();
    const aborted = new Promise<typeof ABORTED>((resolve) => controller.signal.addEventListener('abort', () => resolve(ABORTED)));
    const refs: Array<WeakRef<object>> = [];
    for (let i = 0; i < 20; i++) {
      const message = { payload: new Uint8Array(1024) };
      refs.push(new WeakRef(message));
      await Promise.race([Promise.resolve(message), aborted]);
    }
    await new Promise((r) => setImmediate(r));
    gc();
    expect(refs.filter((r) => r.deref() !== undefined).length).toBeGreaterThan(15);
  });
});
