import { describe, expect, it } from 'vitest';
import { CreateEventsRequestSchema } from './events.ts';
import { isStorableText, jsonObject, jsonProblem, MAX_JSON_DEPTH, MAX_TIMESTAMP_SECONDS, Timestamp } from './common.ts';
import { zodIssuesToDetails } from '../core/errors.ts';

/** `depth` objects nested in each other, built without recursion. */
function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
}

describe('storable text', () => {
  it('refuses NUL and unpaired surrogates, and takes every other string', () => {
    expect(isStorableText('plain, ünïcødé, 🚁')).toBe(true);
    expect(isStorableText('a\u0000b')).toBe(false);
    expect(isStorableText('\ud800')).toBe(false);
    expect(isStorableText('x\udc00')).toBe(false);
  });
});

describe('free-form JSON objects', () => {
  it('names the path of a NUL in a nested key or value, and of a lone surrogate', () => {
    expect(jsonProblem({ a: [{ b: 'ok' }, { 'c\u0000': 1 }] })?.path).toEqual(['a', 1, 'c\u0000']);
    expect(jsonProblem({ a: { b: 'x\u0000' } })?.path).toEqual(['a', 'b']);
    expect(jsonProblem({ a: ['\ud800'] })?.path).toEqual(['a', 0]);
    expect(jsonProblem({ a: [1, { b: null }], c: 'fine' })).toBeUndefined();
    // A top-level key gets the same check and message as a nested one.
    expect(jsonObject().safeParse({ 'a\u0000': 1 }).error!.issues.map((i) => [i.path, i.message])).toEqual([
      [['a\u0000'], 'key must not contain NUL (U+0000) or an unpaired UTF-16 surrogate'],
    ]);
  });

  it('refuses nesting past the bound without overflowing on 10,000 levels', () => {
    expect(jsonProblem(nested(MAX_JSON_DEPTH))).toBeUndefined();
    expect(jsonProblem(nested(MAX_JSON_DEPTH + 1))?.message).toMatch(/deeper than 64/);
    expect(jsonProblem(nested(10_000))?.path).toHaveLength(MAX_JSON_DEPTH + 1);
    expect(jsonObject().safeParse(nested(10_000)).success).toBe(false);
  });

  it('reports the field path through the request schema', () => {
    const parsed = CreateEventsRequestSchema.safeParse({
      experimentId: '0194d8a4-6b1e-7c3a-8f00-000000000001',
      datasetId: '0194d8a4-6b1e-7c3a-8f00-000000000002',
      events: [{ timestamp: '2026-05-01T12:00:00Z', kind: 'NOTE', data: { deep: { 'k\u0000': 1 } } }],
    });
    expect(parsed.success).toBe(false);
    expect(zodIssuesToDetails(parsed.error!).map((d) => d.field)).toEqual(['events[0].data.deep.k\u0000']);
  });
});

describe('Timestamp', () => {
  it('takes the years 1685 to 2255 and refuses year 0 and 9999 with one message', () => {
    expect(Timestamp.safeParse('1700-01-01T00:00:00Z').success).toBe(true);
    expect(Timestamp.safeParse('2250-12-31T23:59:59.999999Z').success).toBe(true);
    for (const outside of ['0000-01-01T00:00:00Z', '9999-12-31T23:59:59Z', '1600-01-01T00:00:00Z']) {
      const parsed = Timestamp.safeParse(outside);
      expect(parsed.success).toBe(false);
      expect(parsed.error!.issues.map((i) => i.message)).toEqual(['is outside the supported range (years 1685 to 2255)']);
    }
  });

  it('ends at the same second as the gRPC path (MAX_TIMESTAMP_SECONDS), whatever the sub-second digits', () => {
    const last = new Date(MAX_TIMESTAMP_SECONDS * 1000).toISOString().replace('.000Z', '.999999Z');
    const next = new Date((MAX_TIMESTAMP_SECONDS + 1) * 1000).toISOString();
    expect(Timestamp.safeParse(last).success).toBe(true);
    expect(Timestamp.safeParse(next).success).toBe(false);
  });

  it('reports a malformed timestamp once, as a format error', () => {
    expect(Timestamp.safeParse('yesterday').error!.issues.map((i) => i.message)).toEqual(['must be an ISO 8601 timestamp']);
  });
});
