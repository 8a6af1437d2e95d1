import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Sample } from '../series/lttb.ts';
import { Decimator, MIN_FOLLOW_BUDGET } from './decimator.ts';

/** Feed `samples` in batches of `batch`, advancing to each batch's last time, as a live feed does. */
function run(decimator: Decimator, samples: Sample[], batch: number): Sample[] {
  const out: Sample[] = [];
  for (let i = 0; i < samples.length; i += batch) {
    const part = samples.slice(i, i + batch);
    decimator.push(part, out);
    decimator.advance(part[part.length - 1]!.t, out);
  }
  // The head moves on: the last slice closes.
  if (samples.length > 0) decimator.advance(samples[samples.length - 1]!.t + 3_600_000_000, out);
  return out;
}

const series = (n: number, stepUs: number, f: (i: number) => number): Sample[] => Array.from({ length: n }, (_, i) => ({ t: i * stepUs, v: f(i) }));

describe('Decimator', () => {
  it('passes a channel below the budget\'s rate through untouched', () => {
    // 1 Hz for a minute, budget 1000 per minute: every sample leaves.
    const samples = series(60, 1_000_000, (i) => Math.sin(i));
    expect(run(new Decimator(60_000_000, 1000), samples, 7)).toEqual(samples);
  });

  it('never sends more than the budget per window, and keeps every extreme', () => {
    // 50 Hz for 60 s into a 10 s window with a budget of 100: 3,000 samples.
    const samples = series(3000, 20_000, (i) => Math.sin(i / 10) + (i === 1234 ? 50 : 0) - (i === 2222 ? 70 : 0));
    const out = run(new Decimator(10_000_000, 100), samples, 13);
    for (let start = 0; start < 60_000_000; start += 1_000_000) {
      expect(out.filter((s) => s.t >= start && s.t < start + 10_000_000).length).toBeLessThanOrEqual(100);
    }
    expect(out).toContainEqual(samples[1234]);
    expect(out).toContainEqual(samples[2222]);
    // Time order, real samples only.
    for (let i = 1; i < out.length; i++) expect(out[i]!.t).toBeGreaterThan(out[i - 1]!.t);
    for (const s of out) expect(samples).toContainEqual(s);
  });

  it('holds the budget for any rate, batching and budget (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2000 }),
        fc.integer({ min: 100, max: 50_000 }),
        fc.integer({ min: MIN_FOLLOW_BUDGET, max: 300 }),
        fc.integer({ min: 1, max: 50 }),
        (n, stepUs, budget, batch) => {
          const windowUs = 1_000_000;
          const samples = series(n, stepUs, (i) => (i * 7919) % 101);
          const out = run(new Decimator(windowUs, budget), samples, batch);
          // Any window-wide span holds at most the budget.
          for (const s of out) expect(out.filter((o) => o.t >= s.t && o.t < s.t + windowUs).length).toBeLessThanOrEqual(budget);
          // The global extremes always leave.
          const max = samples.reduce((a, b) => (b.v > a.v ? b : a));
          expect(out.some((s) => s.v === max.v)).toBe(true);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('sends a slice\'s first sample at once and its extremes when the head passes the slice', () => {
    const d = new Decimator(6_000_000, 9); // 3 s slices: two per window
    const out: Sample[] = [];
    d.push([{ t: 0, v: 1 }, { t: 1_000_000, v: 9 }, { t: 2_000_000, v: -4 }], out);
    expect(out).toEqual([{ t: 0, v: 1 }]);
    d.advance(2_000_000, out);
    expect(out).toHaveLength(1);
    d.advance(3_000_000, out);
    expect(out).toEqual([{ t: 0, v: 1 }, { t: 1_000_000, v: 9 }, { t: 2_000_000, v: -4 }]);
  });
});
