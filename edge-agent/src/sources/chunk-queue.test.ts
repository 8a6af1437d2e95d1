import { describe, expect, it } from 'vitest';
import { ChunkQueue } from './chunk-queue.ts';

const chunk = (n: number, at: number) => ({ bytes: new Uint8Array(n), receivedAtUs: at });

describe('ChunkQueue', () => {
  it('hands chunks out in order and ends after the queued ones', async () => {
    const q = new ChunkQueue(1000);
    q.push(chunk(1, 10));
    q.push(chunk(2, 20));
    q.end();
    const got: number[] = [];
    for await (const c of q) got.push(c.receivedAtUs);
    expect(got).toEqual([10, 20]);
  });

  it('wakes a waiting reader', async () => {
    const q = new ChunkQueue(1000);
    const reading = (async () => {
      const got: number[] = [];
      for await (const c of q) got.push(c.receivedAtUs);
      return got;
    })();
    await new Promise((r) => setTimeout(r, 5));
    q.push(chunk(1, 1));
    q.end();
    expect(await reading).toEqual([1]);
  });

  it('reports the oldest unread receive time (the pipeline clock of a live link lags with it)', () => {
    const q = new ChunkQueue(1000);
    expect(q.oldestReceivedAtUs()).toBeUndefined();
    q.push(chunk(1, 5));
    q.push(chunk(1, 9));
    expect(q.oldestReceivedAtUs()).toBe(5);
  });

  it('drops and counts what does not fit rather than growing', () => {
    const q = new ChunkQueue(10);
    expect(q.push(chunk(8, 1))).toBe(true);
    expect(q.push(chunk(5, 2))).toBe(false);
    expect(q.droppedBytes).toBe(5);
  });

  it('rethrows the error it was ended with, after the queued chunks', async () => {
    const q = new ChunkQueue(100);
    q.push(chunk(1, 1));
    q.end(new Error('socket died'));
    const got: number[] = [];
    await expect(
      (async () => {
        for await (const c of q) got.push(c.receivedAtUs);
      })(),
    ).rejects.toThrow('socket died');
    expect(got).toEqual([1]);
  });
});
