import { API_ROUTES } from '@sortie/contracts';
import { describe, expect, it } from 'vitest';
import { queryString } from './http.ts';
import { OPERATIONS, STREAMED_OPERATIONS } from './routes.ts';

describe('the client covers the route table', () => {
  it('every route is one method of the client, and no method names a route that is gone', () => {
    const methods = Object.values(OPERATIONS).flatMap((group) => Object.values(group) as string[]);
    const covered = [...methods, ...STREAMED_OPERATIONS].sort();
    expect(covered).toEqual(API_ROUTES.map((r) => r.operationId).sort());
    expect(new Set(covered).size).toBe(covered.length);
  });

  it('streamed routes are exactly those whose answer is a file', () => {
    const files = API_ROUTES.filter((r) => r.success.some((s) => s.media)).map((r) => r.operationId);
    expect(files).toEqual([...STREAMED_OPERATIONS]);
  });
});

describe('queryString', () => {
  it('repeats array keys, leaves out undefined, writes dates as RFC 3339', () => {
    expect(queryString({ a: 'x y', channel: ['p', 'q'], skip: undefined, at: new Date('2026-01-02T03:04:05.000Z'), n: 3 })).toBe(
      '?a=x+y&channel=p&channel=q&at=2026-01-02T03%3A04%3A05.000Z&n=3',
    );
    expect(queryString({})).toBe('');
  });
});
