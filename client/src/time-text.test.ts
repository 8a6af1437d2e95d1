import { create, toJson } from '@bufbuild/protobuf';
import { TimestampSchema } from '@bufbuild/protobuf/wkt';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { timeText, timestampText } from './time-text.ts';

describe('timeText', () => {
  it('writes what protobuf-es writes for a Timestamp in JSON, at every precision', () => {
    const nanos = fc.oneof(
      fc.constant(0),
      fc.integer({ min: 0, max: 999 }).map((n) => n * 1_000_000),
      fc.integer({ min: 0, max: 999_999 }).map((n) => n * 1000),
      fc.integer({ min: 0, max: 999_999_999 }),
    );
    // From 1970 to the year 9999, the end of what RFC 3339 (and protobuf's JSON) writes.
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 253_402_300_799 }), nanos, (seconds, n) => {
        const expected = toJson(TimestampSchema, create(TimestampSchema, { seconds: BigInt(seconds), nanos: n }));
        expect(timeText(seconds, n)).toBe(expected);
        expect(timestampText({ seconds: BigInt(seconds), nanos: n })).toBe(expected);
      }),
      { numRuns: 5000 },
    );
  });

  it('keeps leading zeros in every group of digits', () => {
    expect(timeText(0, 1)).toBe('1970-01-01T00:00:00.000000001Z');
    expect(timeText(0, 1000)).toBe('1970-01-01T00:00:00.000001Z');
    expect(timeText(0, 1_000_000)).toBe('1970-01-01T00:00:00.001Z');
    expect(timeText(0, 10_020_003)).toBe('1970-01-01T00:00:00.010020003Z');
    expect(timeText(1_700_000_000, 0)).toBe('2023-11-14T22:13:20Z');
  });

  it('writes nanos outside a Timestamp\'s range as their digits, not from the table', () => {
    // No valid text exists (protobuf-es refuses these); what matters is that both client paths agree.
    expect(timeText(0, 1_000_000_000)).toBe('1970-01-01T00:00:00.1000000000Z');
    expect(timeText(0, -5)).toBe('1970-01-01T00:00:00.0000000-5Z');
  });
});
