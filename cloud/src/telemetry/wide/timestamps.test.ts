import { describe, expect, it } from 'vitest';
import { epochMicrosToIso, isoToEpochMicros } from './timestamps.ts';

describe('timestamps', () => {
  it('keeps microseconds that Date drops', () => {
    expect(isoToEpochMicros('2026-01-01T00:00:00.123456Z')).toBe(1767225600123456n);
    expect(isoToEpochMicros('2026-01-01T00:00:00Z')).toBe(1767225600000000n);
    expect(isoToEpochMicros('2026-01-01T01:00:00.5+01:00')).toBe(1767225600500000n);
  });
  it('round-trips through the ISO form', () => {
    const us = 1767225600123456n;
    expect(epochMicrosToIso(us)).toBe('2026-01-01T00:00:00.123456Z');
    expect(isoToEpochMicros(epochMicrosToIso(us))).toBe(us);
  });
  it('refuses what is not a timestamp', () => {
    expect(() => isoToEpochMicros('later')).toThrow(RangeError);
  });
});
