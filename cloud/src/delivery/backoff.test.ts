import { describe, expect, it } from 'vitest';
import {
  classifyStatus,
  JITTER,
  MAX_RETRY_AFTER_MS,
  nextAttemptDelay,
  parseRetryAfter,
  retryDelayMs,
} from './backoff.ts';

describe('retryDelayMs', () => {
  const schedule = [1000, 5000, 30_000];
  it('walks the schedule and repeats its last wait', () => {
    expect([1, 2, 3, 4, 9].map((n) => retryDelayMs(n, schedule, 0.5))).toEqual([1000, 5000, 30_000, 30_000, 30_000]);
  });
  it('jitters within ±20 %', () => {
    expect(retryDelayMs(2, schedule, 0)).toBe(5000 * (1 - JITTER));
    expect(retryDelayMs(2, schedule, 0.999_999)).toBeCloseTo(5000 * (1 + JITTER), -1);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-22T10:00:00Z');
  it('reads delay-seconds and HTTP dates', () => {
    expect(parseRetryAfter('7', now)).toBe(7000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 10:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 09:00:00 GMT', now)).toBe(0);
  });
  it('ignores what it cannot read', () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-3', now)).toBeUndefined();
  });
});

describe('classifyStatus', () => {
  it.each([
    [200, 'success'],
    [204, 'success'],
    [299, 'success'],
    [301, 'final'],
    [307, 'final'],
    [400, 'final'],
    [404, 'final'],
    [410, 'final'],
    [408, 'retry'],
    [429, 'retry'],
    [500, 'retry'],
    [503, 'retry'],
    [101, 'retry'],
  ] as const)('%i is %s', (status, verdict) => {
    expect(classifyStatus(status)).toBe(verdict);
  });
});

describe('nextAttemptDelay', () => {
  const base = { schedule: [1000, 2000], nowMs: 0, deadlineMs: 60_000, random: 0.5 };
  it('follows the schedule while the deadline allows', () => {
    expect(nextAttemptDelay({ ...base, failedAttempts: 1 })).toBe(1000);
    expect(nextAttemptDelay({ ...base, failedAttempts: 5 })).toBe(2000);
  });
  it('gives up when the next attempt would start at or after the deadline', () => {
    expect(nextAttemptDelay({ ...base, failedAttempts: 1, nowMs: 59_000 })).toBeUndefined();
    expect(nextAttemptDelay({ ...base, failedAttempts: 1, nowMs: 58_999 })).toBe(1000);
  });
  it('honours a longer Retry-After on 429 and 503, capped', () => {
    expect(nextAttemptDelay({ ...base, failedAttempts: 1, statusCode: 429, retryAfter: '20' })).toBe(20_000);
    expect(nextAttemptDelay({ ...base, failedAttempts: 1, statusCode: 503, retryAfter: '20' })).toBe(20_000);
    expect(nextAttemptDelay({ ...base, deadlineMs: 3_600_000, failedAttempts: 1, statusCode: 429, retryAfter: '86400' })).toBe(MAX_RETRY_AFTER_MS);
  });
  it('does not let Retry-After hurry a retry or apply to other statuses', () => {
    expect(nextAttemptDelay({ ...base, failedAttempts: 2, statusCode: 429, retryAfter: '0' })).toBe(2000);
    expect(nextAttemptDelay({ ...base, failedAttempts: 1, statusCode: 500, retryAfter: '20' })).toBe(1000);
  });
  it('gives up when Retry-After reaches past the deadline', () => {
    expect(nextAttemptDelay({ ...base, failedAttempts: 1, statusCode: 429, retryAfter: '60' })).toBeUndefined();
  });
});
