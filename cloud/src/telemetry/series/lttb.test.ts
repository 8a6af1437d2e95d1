import { describe, expect, it } from 'vitest';
import { lttbAt, lttbWithPinsAt, type Sample, type SampleColumns } from './lttb.ts';

// The functions work on columns and answer positions; these read them as Sample arrays in and out, so
// that a kept sample is the very object given.
function columnsOf(points: readonly Sample[]): SampleColumns {
  return { t: Float64Array.from(points, (p) => p.t), v: Float64Array.from(points, (p) => p.v) };
}

function lttb(points: readonly Sample[], threshold: number): Sample[] {
  return [...lttbAt(columnsOf(points), Int32Array.from(points.keys()), threshold)].map((i) => points[i]!);
}

function lttbWithPins(points: readonly Sample[], pinned: readonly boolean[], threshold: number): Sample[] {
  const flags = Uint8Array.from(points, (_, i) => (pinned[i] ? 1 : 0));
  return [...lttbWithPinsAt(columnsOf(points), flags, points.length, threshold)].map((i) => points[i]!);
}

const series = (values: number[]): Sample[] => values.map((v, t) => ({ t, v }));

function isOrderedSubset(out: Sample[], of: Sample[]): boolean {
  let j = 0;
  for (const p of out) {
    while (j < of.length && of[j] !== p) j++;
    if (j === of.length) return false;
    j++;
  }
  return true;
}

describe('lttb', () => {
  it('returns exactly the threshold, first and last kept, an ordered subset', () => {
    const data = series(Array.from({ length: 1000 }, (_, i) => Math.sin(i / 17) + (i % 7) / 10));
    for (const n of [3, 10, 99, 500]) {
      const out = lttb(data, n);
      expect(out).toHaveLength(n);
      expect(out[0]).toBe(data[0]);
      expect(out.at(-1)).toBe(data.at(-1));
      expect(isOrderedSubset(out, data)).toBe(true);
    }
  });

  it('keeps an isolated spike that plain striding would drop', () => {
    const values = Array.from({ length: 100 }, () => 0);
    values[37] = 50;
    const out = lttb(series(values), 10);
    expect(out.some((p) => p.t === 37 && p.v === 50)).toBe(true);
  });

  it('picks the largest triangle in each bucket (hand-checked case)', () => {
    // Buckets between first and last: [1,2] and [3,4]; from (0,0) towards the average of [3,4] = (3.5, -1),
    // (2, 5) forms the larger triangle; then from (2,5) towards (5,0), (4,-3) beats (3,1).
    const data = series([0, 1, 5, 1, -3, 0]);
    expect(lttb(data, 4).map((p) => p.t)).toEqual([0, 2, 4, 5]);
  });

  it('handles the small cases', () => {
    const data = series([1, 2, 3]);
    expect(lttb(data, 5)).toEqual(data);
    expect(lttb(data, 0)).toEqual([]);
    expect(lttb(data, 1)).toEqual([data[0]]);
    expect(lttb(data, 2)).toEqual([data[0], data[2]]);
    expect(lttb([], 3)).toEqual([]);
  });
});

describe('lttbWithPins', () => {
  it('keeps every pinned point and fills the rest up to exactly the threshold', () => {
    const data = series(Array.from({ length: 400 }, (_, i) => Math.cos(i / 9) * 10 + (i % 5)));
    const pinned = data.map((_, i) => i % 40 === 3);
    for (const n of [10, 25, 200]) {
      const out = lttbWithPins(data, pinned, n);
      expect(out).toHaveLength(n);
      expect(isOrderedSubset(out, data)).toBe(true);
      for (let i = 0; i < data.length; i++) if (pinned[i]) expect(out).toContain(data[i]);
    }
  });

  it('with no pins keeps the first and last point like plain LTTB', () => {
    const data = series(Array.from({ length: 50 }, (_, i) => (i * 37) % 11));
    const out = lttbWithPins(data, [], 7);
    expect(out).toHaveLength(7);
    expect(out[0]).toBe(data[0]);
    expect(out.at(-1)).toBe(data.at(-1));
  });

  it('chooses the free point that forms the largest triangle between its anchors', () => {
    // Pins at both ends; one free slot among t = 1..4: the spike at t = 3 wins.
    const data = series([0, 1, 0, 9, 0, 0]);
    const pinned = [true, false, false, false, false, true];
    expect(lttbWithPins(data, pinned, 3).map((p) => p.t)).toEqual([0, 3, 5]);
  });

  it('reduces the pins themselves when they alone exceed the threshold', () => {
    const data = series([0, 5, -5, 5, -5, 0]);
    const out = lttbWithPins(data, data.map(() => true), 3);
    expect(out).toHaveLength(3);
    expect(out[0]).toBe(data[0]);
    expect(out.at(-1)).toBe(data.at(-1));
  });

  it('returns everything when it already fits', () => {
    const data = series([1, 2, 3]);
    expect(lttbWithPins(data, [false, true, false], 3)).toEqual(data);
  });
});
