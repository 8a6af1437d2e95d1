import { describe, expect, it } from 'vitest';
import { MicroBatcher } from './micro-batcher.ts';

describe('MicroBatcher', () => {
  it('runs items submitted in one turn as one batch and answers each with its own result', async () => {
    const batches: number[][] = [];
    const b = new MicroBatcher<number, string>(async (items) => {
      batches.push(items);
      return items.map((i) => `r${i}`);
    }, { maxBatch: 100 });
    const results = await Promise.all([1, 2, 3].map((i) => b.submit(i)));
    expect(results).toEqual(['r1', 'r2', 'r3']);
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it('collects items that arrive while a batch runs into the next one, up to maxBatch', async () => {
    const batches: number[][] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const b = new MicroBatcher<number, number>(async (items) => {
      batches.push(items);
      if (batches.length === 1) await gate;
      return items;
    }, { maxBatch: 2 });
    const first = b.submit(0);
    await new Promise((r) => setImmediate(r));
    const later = [1, 2, 3].map((i) => b.submit(i));
    release();
    await Promise.all([first, ...later]);
    expect(batches).toEqual([[0], [1, 2], [3]]);
  });

  it('rejects every item of a failed batch and keeps serving later ones', async () => {
    let fail = true;
    const b = new MicroBatcher<number, number>(async (items) => {
      if (fail) throw new Error('db down');
      return items;
    }, { maxBatch: 10 });
    const failed = await Promise.allSettled([b.submit(1), b.submit(2)]);
    expect(failed.map((f) => f.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    await expect(b.submit(3)).resolves.toBe(3);
  });

  it('with lingerMs, an idle batcher waits that long and runs what arrived meanwhile as one batch', async () => {
    const batches: Array<{ items: number[]; at: number }> = [];
    const started = performance.now();
    const b = new MicroBatcher<number, number>(async (items) => {
      batches.push({ items, at: performance.now() - started });
      return items;
    }, { maxBatch: 100, lingerMs: 50 });
    const first = b.submit(1);
    await new Promise((r) => setTimeout(r, 10));
    const second = b.submit(2);
    await Promise.all([first, second]);
    expect(batches.map((x) => x.items)).toEqual([[1, 2]]);
    expect(batches[0]!.at).toBeGreaterThanOrEqual(45);
  });

  it('with lingerMs, a full batch does not wait', async () => {
    const batches: number[][] = [];
    const b = new MicroBatcher<number, number>(async (items) => {
      batches.push(items);
      return items;
    }, { maxBatch: 2, lingerMs: 60_000 });
    await Promise.all([b.submit(1), b.submit(2)]);
    expect(batches).toEqual([[1, 2]]);
  });
});
