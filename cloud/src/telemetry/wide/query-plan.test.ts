import { describe, expect, it } from 'vitest';
import { planQuery, RAW_ROWS_PER_SPLIT, rawReadRanges, ROLLUP_BUCKETS_PER_QUERY_BUCKET } from './query-plan.ts';
import { ROLLUP_WIDTHS_MS } from './rollup-levels.ts';

const S = 1_000_000;
const T0 = Date.UTC(2026, 0, 1) * 1000;

/** Every µs of [start, end) is covered exactly once by blocks and raw ranges (checked on the boundaries). */
function expectExactCover(plan: ReturnType<typeof planQuery>, start: number, end: number) {
  const pieces = [
    ...plan.blocks.map((b) => ({ from: b.from, to: b.to })),
    ...plan.raw,
  ].sort((a, b) => a.from - b.from);
  expect(pieces[0]!.from).toBe(start);
  expect(pieces.at(-1)!.to).toBe(end);
  for (let i = 1; i < pieces.length; i++) expect(pieces[i]!.from).toBe(pieces[i - 1]!.to);
}

describe('planQuery', () => {
  it('reads a long range from the coarsest rollups that keep the resolution, raw rows only at the edges', () => {
    const start = T0 + 123_456;
    const end = start + 3600 * S + 777;
    const plan = planQuery(start, end, 1000);
    expect(plan.rollupWidthMs).toBe(100); // ideal bucket 3.6 s: 1 s buckets would be under 4 per query bucket
    expect(plan.bucketCount).toBeLessThanOrEqual(1000);
    expect(plan.bucketCount).toBeGreaterThanOrEqual(800);
    expectExactCover(plan, start, end);
    for (const r of plan.raw) expect(r.to - r.from).toBeLessThan(ROLLUP_WIDTHS_MS[0] * 1000);
    expect(plan.raw.length).toBeLessThanOrEqual(2);
  });

  it('aligns buckets so that every rollup block falls inside exactly one query bucket', () => {
    const start = T0 + 5_432_109;
    const end = start + 86_400 * S * 3;
    const plan = planQuery(start, end, 500);
    expect(plan.width % (plan.rollupWidthMs! * 1000)).toBe(0);
    expect(plan.origin % (plan.rollupWidthMs! * 1000)).toBe(0);
    for (const block of plan.blocks) {
      const w = block.widthMs * 1000;
      expect(block.from % w).toBe(0);
      expect(block.to % w).toBe(0);
      // each rollup bucket [b, b + w) lies in one query bucket
      for (let b = block.from; b < block.to; b += Math.max(w, Math.floor((block.to - block.from) / 7 / w) * w)) {
        expect(Math.floor((b - plan.origin) / plan.width)).toBe(Math.floor((b + w - 1 - plan.origin) / plan.width));
      }
    }
  });

  it('chooses the coarsest width with at least four rollup buckets per query bucket', () => {
    for (const span of [45 * S, 300 * S, 7200 * S, 40 * 86_400 * S]) {
      const plan = planQuery(T0, T0 + span, 1000);
      const ideal = span / 1000;
      const w = plan.rollupWidthMs! * 1000;
      expect(w * ROLLUP_BUCKETS_PER_QUERY_BUCKET).toBeLessThanOrEqual(ideal);
      const coarser = ROLLUP_WIDTHS_MS[ROLLUP_WIDTHS_MS.indexOf(plan.rollupWidthMs as (typeof ROLLUP_WIDTHS_MS)[number]) + 1];
      if (coarser) expect(coarser * 1000 * ROLLUP_BUCKETS_PER_QUERY_BUCKET).toBeGreaterThan(ideal);
      expect(plan.width).toBeLessThanOrEqual(1.25 * ideal + w);
    }
  });

  it('reads a range too narrow for the 4× rule raw when it holds few samples, else from the finest rollups', () => {
    const sparse = planQuery(T0 + 3, T0 + 20 * S + 3, 1000, 1 / 1000); // 1 kHz: 20,000 samples
    expect(sparse.rollupWidthMs).toBeNull();
    expect(sparse.blocks).toEqual([]);
    expect(sparse.raw).toEqual([{ from: T0 + 3, to: T0 + 20 * S + 3 }]);
    expect(sparse.width).toBe(20_000);
    expect(sparse.bucketCount).toBe(1000);

    const dense = planQuery(T0 + 3, T0 + 20 * S + 3, 1000, 1 / 50); // 20 kHz: 400,000 samples
    expect(dense.rollupWidthMs).toBe(10);
    expect(dense.width % 10_000).toBe(0);
    expect(dense.bucketCount).toBeLessThanOrEqual(1000);
    expect(dense.bucketCount).toBeGreaterThanOrEqual(600);
    expect(dense.raw.reduce((n, r) => n + (r.to - r.from), 0)).toBeLessThan(2 * 10_000);

    const tiny = planQuery(T0, T0 + 2 * S, 1000, 1 / 50); // 40,000 samples: raw at full resolution
    expect(tiny.rollupWidthMs).toBeNull();
    expect(tiny.width).toBe(2000);
  });

  it('works before the epoch too', () => {
    const start = -5 * 86_400 * S - 12_345;
    const plan = planQuery(start, start + 86_400 * S, 300);
    expectExactCover(plan, start, start + 86_400 * S);
    expect(plan.origin).toBeLessThanOrEqual(start);
  });

  it('refuses an empty range', () => {
    expect(() => planQuery(T0, T0, 10)).toThrow(RangeError);
  });
});

describe('rawReadRanges', () => {
  it('reads a raw range of many rows as two halves, cut on a query bucket boundary', () => {
    const start = T0 + 20_000_123;
    const end = start + 2 * S;
    const density = 1 / 50; // 20 kHz: 40,000 rows in the window
    const plan = planQuery(start, end, 999, density);
    expect(plan.blocks).toHaveLength(0);
    const reads = rawReadRanges(plan, density);
    expect(reads).toHaveLength(2);
    const [[first], [second]] = reads as [[{ from: number; to: number }], [{ from: number; to: number }]];
    expect(first.from).toBe(start);
    expect(second.to).toBe(end);
    expect(second.from).toBe(first.to);
    expect((first.to - plan.origin) % plan.width).toBe(0);
    // Halves within a bucket of each other.
    expect(Math.abs(first.to - first.from - (second.to - second.from))).toBeLessThanOrEqual(plan.width);
  });

  it('keeps a range of few rows in one read, with the edges of a plan with rollups', () => {
    const start = T0 + 20_000_123;
    const end = start + 2 * S;
    const sparse = (RAW_ROWS_PER_SPLIT - 1) / (2 * S);
    expect(rawReadRanges(planQuery(start, end, 999, sparse), sparse)).toEqual([[{ from: start, to: end }]]);
    // A long range read from rollups keeps its raw edges (each narrower than a query bucket) in one read.
    const dense = 1 / 50;
    const mixed = planQuery(start, start + 3600 * S + 777, 1000, dense);
    expect(mixed.raw).toHaveLength(2);
    expect(rawReadRanges(mixed, dense)).toEqual([mixed.raw]);
  });

  it('splits a range no narrower than two buckets only', () => {
    const plan = { origin: T0, width: 1000, bucketCount: 1, rollupWidthMs: null, blocks: [], raw: [{ from: T0, to: T0 + 1000 }] };
    expect(rawReadRanges(plan, 100)).toEqual([[{ from: T0, to: T0 + 1000 }]]);
  });
});
