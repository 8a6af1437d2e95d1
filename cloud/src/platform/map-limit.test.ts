import { describe, expect, it } from 'vitest';
import { mapLimit } from './map-limit.ts';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('mapLimit', () => {
  it('keeps input order and never runs more than the limit at once', async () => {
    let running = 0;
    let peak = 0;
    const out = await mapLimit([5, 1, 4, 2, 3, 0, 6], 3, async (n, i) => {
      running++;
      peak = Math.max(peak, running);
      for (let k = 0; k < n; k++) await tick();
      running--;
      return `${i}:${n}`;
    });
    expect(out).toEqual(['0:5', '1:1', '2:4', '3:2', '4:3', '5:0', '6:6']);
    expect(peak).toBe(3);
  });

  it('fails with the first error and starts nothing after it', async () => {
    const started: number[] = [];
    await expect(
      mapLimit([0, 1, 2, 3, 4, 5], 2, async (n) => {
        started.push(n);
        await tick();
        if (n === 1) throw new Error('boom');
        return n;
      }),
    ).rejects.toThrow('boom');
    await tick();
    await tick();
    expect(started).toEqual([0, 1, 2]);
  });

  it('answers an empty list and refuses a limit below 1', async () => {
    expect(await mapLimit([], 4, async () => 1)).toEqual([]);
    await expect(mapLimit([1], 0, async () => 1)).rejects.toThrow(RangeError);
  });
});
