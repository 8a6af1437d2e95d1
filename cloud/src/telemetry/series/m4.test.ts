import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addSample, compareF8, m4Of, m4sFromPacked, m4sInKeyOrder, mergeM4, PACKED_M4_WIDTH, type M4 } from './m4.ts';

function fromSamples(samples: Array<[number, number]>): M4 {
  const [first, ...rest] = samples;
  const agg = m4Of(first![0], first![1]);
  for (const [t, v] of rest) addSample(agg, t, v);
  return agg;
}

describe('compareF8 (PostgreSQL float8 order)', () => {
  it('orders NaN above everything, and equal to itself', () => {
    expect(compareF8(NaN, Infinity)).toBe(1);
    expect(compareF8(Infinity, NaN)).toBe(-1);
    expect(compareF8(NaN, NaN)).toBe(0);
    expect(compareF8(-0, 0)).toBe(0);
    expect(compareF8(1, 2)).toBe(-1);
  });
});

describe('mergeM4', () => {
  const samples: Array<[number, number]> = [
    [10, 3],
    [11, -2],
    [12, 7],
    [13, -2],
    [14, 7],
    [15, 1],
  ];

  it('first, last, minimum and maximum with their times; earliest sample wins ties', () => {
    expect(fromSamples(samples)).toEqual({ count: 6, firstT: 10, firstV: 3, lastT: 15, lastV: 1, minT: 11, minV: -2, maxT: 12, maxV: 7 });
  });

  it('gives the same aggregate whatever the split and merge order', () => {
    const whole = fromSamples(samples);
    for (let cut = 1; cut < samples.length; cut++) {
      const left = fromSamples(samples.slice(0, cut));
      const right = fromSamples(samples.slice(cut));
      expect(mergeM4({ ...left }, right)).toEqual(whole);
      expect(mergeM4({ ...right }, left)).toEqual(whole);
    }
  });

  it('treats NaN as the largest value, as SQL aggregates do', () => {
    const agg = fromSamples([
      [1, 5],
      [2, NaN],
      [3, -Infinity],
    ]);
    expect(agg.maxV).toBeNaN();
    expect(agg.maxT).toBe(2);
    expect(agg.minV).toBe(-Infinity);
  });
});

describe('m4sFromPacked', () => {
  const row = (key: number, m: M4) => [key, m.count, m.minV, m.minT, m.maxV, m.maxT, m.firstT, m.firstV, m.lastT, m.lastV];

  it('reads one bucket per key in order, and merges adjacent rows of one key', () => {
    const a = m4Of(100, 5);
    const b1 = m4Of(200, 1);
    const b2 = addSample(m4Of(250, 9), 260, -3);
    const c = m4Of(400, 7);
    const packed = Float64Array.from([...row(0, a), ...row(1, b1), ...row(1, b2), ...row(3, c)]);
    expect(packed.length).toBe(4 * PACKED_M4_WIDTH);
    expect(m4sFromPacked(packed)).toEqual([a, mergeM4(m4Of(200, 1), addSample(m4Of(250, 9), 260, -3)), c]);
  });

  it('reads nothing from an empty answer', () => {
    expect(m4sFromPacked(new Float64Array(0))).toEqual([]);
  });
});

describe('m4sInKeyOrder', () => {
  it('answers buckets folded in any order in the order of their keys, negative keys first', () => {
    const byKey = new Map<number, M4>([
      [10, m4Of(1000, 1)],
      [-2, m4Of(-200, 2)],
      [3, m4Of(300, 3)],
    ]);
    expect(m4sInKeyOrder(byKey)).toEqual([m4Of(-200, 2), m4Of(300, 3), m4Of(1000, 1)]);
    expect(m4sInKeyOrder(new Map())).toEqual([]);
  });

  it('keeps a map filled in key order as it is, and sorts one that turns back only at its end', () => {
    const inOrder = new Map<number, M4>([-1, 0, 1, 5].map((k) => [k, m4Of(k * 10, k)]));
    expect(m4sInKeyOrder(inOrder).map((m) => m.firstV)).toEqual([-1, 0, 1, 5]);
    // Two reads at once fold their halves in turn: the later half's keys may come first.
    const lateStart = new Map<number, M4>([4, 5, 6, 0, 1].map((k) => [k, m4Of(k * 10, k)]));
    expect(m4sInKeyOrder(lateStart).map((m) => m.firstV)).toEqual([0, 1, 4, 5, 6]);
  });

  it('orders any keys as a sort does: dense or sparse, negative, fractional', () => {
    fc.assert(
      fc.property(fc.oneof(
          fc.array(fc.oneof(fc.integer({ min: -50, max: 50 }), fc.integer({ min: -50, max: 50 }).map((k) => k + 0.5)), { maxLength: 60 }),
          fc.array(fc.oneof(fc.integer({ min: -50, max: 50 }), fc.integer({ min: -1e12, max: 1e12 }), fc.double({ noNaN: true, noDefaultInfinity: true })), { maxLength: 60 }),
        ), (keys) => {
        const byKey = new Map<number, M4>(keys.map((k) => [k, m4Of(k, k)]));
        const expected = [...byKey.keys()].sort((a, b) => a - b).map((k) => byKey.get(k));
        const got = m4sInKeyOrder(byKey);
        expect(got).toHaveLength(expected.length);
        got.forEach((m4, i) => expect(m4).toBe(expected[i]));
      }),
      { numRuns: 500 },
    );
  });
});
