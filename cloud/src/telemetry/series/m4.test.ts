import { describe, expect, it } from 'vitest';
import { addSample, compareF8, m4Of, mergeM4, type M4 } from './m4.ts';

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
