import { describe, expect, it } from 'vitest';
import { samplesFromBuckets as columnsFromBuckets } from './downsample.ts';
import { samplesOf } from './series.ts';
import { M4Grid } from './m4-grid.ts';
import { addSample, m4Of, type M4 } from './m4.ts';

/** Random-walk samples cut into `buckets` equal buckets, with their M4 aggregates. */
function fixture(buckets: number, perBucket: number, seed = 1) {
  let x = seed;
  const rand = () => ((x = (x * 48271) % 2147483647) / 2147483647) - 0.5;
  const aggs: M4[] = [];
  let v = 0;
  for (let b = 0; b < buckets; b++) {
    let agg: M4 | undefined;
    for (let i = 0; i < perBucket; i++) {
      v += rand();
      const t = b * 1000 + i;
      agg = agg ? addSample(agg, t, v) : m4Of(t, v);
    }
    aggs.push(agg!);
  }
  return aggs;
}

/** The chosen samples as objects, to compare with the buckets' own. */
const samplesFromBuckets = (grid: M4Grid, budget: number) => samplesOf(columnsFromBuckets(grid, budget));

/** The aggregates as a grid, one bucket each, with `gaps` empty buckets before each. */
function gridOf(aggs: readonly M4[], gaps = 0): M4Grid {
  const grid = new M4Grid(aggs.length * (gaps + 1));
  aggs.forEach((m4, i) => {
    const at = new DataView(new ArrayBuffer(72));
    [m4.count, m4.minV, m4.minT, m4.maxV, m4.maxT, m4.firstT, m4.firstV, m4.lastT, m4.lastV].forEach((x, f) => at.setFloat64(f * 8, x));
    grid.mergeSlot(i * (gaps + 1) + gaps, at, 0);
  });
  return grid;
}

describe('samplesFromBuckets', () => {
  it('stays within the budget and keeps every bucket minimum and maximum', () => {
    const budget = 202;
    const buckets = fixture(100, 50);
    const out = samplesFromBuckets(gridOf(buckets), budget);
    expect(out.length).toBeLessThanOrEqual(budget);
    for (const b of buckets) {
      expect(out).toContainEqual({ t: b.minT, v: b.minV });
      expect(out).toContainEqual({ t: b.maxT, v: b.maxV });
    }
    expect(out[0]).toEqual({ t: buckets[0]!.firstT, v: buckets[0]!.firstV });
    expect(out.at(-1)).toEqual({ t: buckets.at(-1)!.lastT, v: buckets.at(-1)!.lastV });
  });

  it('uses the whole budget when there are more candidates, in time order, without duplicates', () => {
    const buckets = fixture(40, 30, 7);
    const out = samplesFromBuckets(gridOf(buckets), 120);
    expect(out).toHaveLength(120);
    for (let i = 1; i < out.length; i++) expect(out[i]!.t).toBeGreaterThan(out[i - 1]!.t);
  });

  it('returns all four M4 points per bucket when the budget allows', () => {
    const buckets = fixture(5, 20, 3);
    const out = samplesFromBuckets(gridOf(buckets), 1000);
    const expected = new Set(buckets.flatMap((b) => [b.firstT, b.minT, b.maxT, b.lastT]));
    expect(out.map((p) => p.t).sort((a, b) => a - b)).toEqual([...expected].sort((a, b) => a - b));
  });

  it('a budget of 1 returns the maximum sample; nothing for no data', () => {
    const buckets = fixture(10, 10, 5);
    const max = buckets.reduce((m, b) => (b.maxV > m.maxV ? b : m));
    expect(samplesFromBuckets(gridOf(buckets), 1)).toEqual([{ t: max.maxT, v: max.maxV }]);
    expect(samplesFromBuckets(new M4Grid(0), 10)).toEqual([]);
    expect(samplesFromBuckets(new M4Grid(5), 10)).toEqual([]);
  });

  it('skips empty buckets: a grid with gaps gives what the filled buckets alone give', () => {
    const buckets = fixture(30, 12, 9);
    for (const budget of [1, 40, 62, 200]) expect(samplesFromBuckets(gridOf(buckets, 2), budget)).toEqual(samplesFromBuckets(gridOf(buckets), budget));
  });
});
