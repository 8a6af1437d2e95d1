import { describe, expect, it } from 'vitest';
import { histogramPercentile, isoMicros } from './bench-env.ts';

describe('histogramPercentile', () => {
  // Cumulative buckets, as /metrics gives them: 10 observations ≤ 5 ms, 10 more in (5, 10], none above.
  const buckets = [
    { le: 5, count: 10 },
    { le: 10, count: 20 },
    { le: 20, count: 20 },
    { le: Infinity, count: 20 },
  ];

  it('interpolates within the bucket holding the rank, as histogram_quantile does', () => {
    expect(histogramPercentile(buckets, 50)).toBe(5);
    expect(histogramPercentile(buckets, 25)).toBe(2.5);
    expect(histogramPercentile(buckets, 75)).toBe(7.5);
    expect(histogramPercentile(buckets, 100)).toBe(10);
  });

  it('answers the last finite bound for a rank in +Inf, and NaN for no observations', () => {
    expect(histogramPercentile([{ le: 5, count: 1 }, { le: Infinity, count: 4 }], 99)).toBe(5);
    expect(histogramPercentile([{ le: 5, count: 0 }, { le: Infinity, count: 0 }], 50)).toBeNaN();
  });
});

describe('isoMicros', () => {
  it('writes the microseconds, so rows 50 µs apart keep distinct times', () => {
    expect(isoMicros(1_700_000_000_123_456)).toBe('2023-11-14T22:13:20.123456Z');
    expect(isoMicros(1_700_000_000_000_007)).toBe('2023-11-14T22:13:20.000007Z');
    const times = Array.from({ length: 40 }, (_, i) => isoMicros(1_700_000_000_000_000 + i * 50));
    expect(new Set(times).size).toBe(40);
    expect(times.map((t) => Date.parse(t))).toEqual(times.map((_, i) => 1_700_000_000_000 + Math.floor((i * 50) / 1000)));
  });
});
