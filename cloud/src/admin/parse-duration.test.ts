import { describe, expect, it } from 'vitest';
import { parseDuration } from './parse-duration.ts';

describe('parseDuration', () => {
  it('reads the usual units', () => {
    expect(parseDuration('30d')).toBe(30 * 86400);
    expect(parseDuration('12h')).toBe(43200);
    expect(parseDuration('90m')).toBe(5400);
    expect(parseDuration('1w')).toBe(604800);
  });
  it('refuses what it cannot read', () => {
    expect(() => parseDuration('30 days')).toThrow(/not a duration/);
    expect(() => parseDuration('0d')).toThrow(/positive/);
    expect(() => parseDuration('-1d')).toThrow();
  });
});
