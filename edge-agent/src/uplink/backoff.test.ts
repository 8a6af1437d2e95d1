import { describe, expect, it } from 'vitest';
import { Backoff } from './backoff.ts';

describe('Backoff', () => {
  it('doubles the ceiling per failure, half fixed and half jitter, up to the cap', () => {
    const low = new Backoff({ baseMs: 250, capMs: 30_000, random: () => 0 });
    const high = new Backoff({ baseMs: 250, capMs: 30_000, random: () => 0.999999 });
    const lows = Array.from({ length: 10 }, () => low.next());
    const highs = Array.from({ length: 10 }, () => high.next());
    expect(lows).toEqual([125, 250, 500, 1000, 2000, 4000, 8000, 15_000, 15_000, 15_000]);
    expect(highs).toEqual([250, 500, 1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
  });

  it('spreads agents that fail together (jitter), always within [ceiling/2, ceiling]', () => {
    let seed = 1;
    const random = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
    const b = new Backoff({ baseMs: 100, capMs: 10_000, random });
    const seen = new Set<number>();
    for (let n = 0; n < 200; n++) {
      const ceiling = Math.min(10_000, 100 * 2 ** n);
      const d = b.next();
      expect(d).toBeGreaterThanOrEqual(ceiling / 2);
      expect(d).toBeLessThanOrEqual(ceiling);
      seen.add(d);
    }
    expect(seen.size).toBeGreaterThan(100);
  });

  it('waits the cap at once for a failure a retry cannot fix, and starts over after a success', () => {
    const b = new Backoff({ baseMs: 250, capMs: 30_000, random: () => 0.5 });
    expect(b.next({ permanent: true })).toBe(22_500);
    expect(b.failures).toBe(1);
    b.reset();
    expect(b.failures).toBe(0);
    expect(b.next()).toBe(188);
  });

  it('never overflows after very many failures', () => {
    const b = new Backoff({ baseMs: 250, capMs: 30_000, random: () => 1 });
    for (let i = 0; i < 5000; i++) b.next();
    expect(b.next()).toBe(30_000);
  });

  it('refuses a cap below the base', () => {
    expect(() => new Backoff({ baseMs: 10, capMs: 5 })).toThrow(RangeError);
  });
});
