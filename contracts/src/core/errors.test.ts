import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ERROR_STATUS } from './error-codes.ts';
import { ErrorEnvelopeSchema, formatIssuePath, zodIssuesToDetails } from './errors.ts';

describe('error envelope', () => {
  it('renders paths with zero-based indexes', () => {
    expect(formatIssuePath(['rows', 12, 'timestamp'])).toBe('rows[12].timestamp');
    expect(formatIssuePath([3, 'a'])).toBe('[3].a');
    expect(formatIssuePath([])).toBe('');
  });

  it('maps zod issues to details naming the field', () => {
    const schema = z.object({ rows: z.array(z.object({ timestamp: z.iso.datetime() })) });
    const rows = Array.from({ length: 13 }, () => ({ timestamp: '2026-01-01T00:00:00Z' }));
    rows[12] = { timestamp: 'yesterday' };
    const result = schema.safeParse({ rows });
    expect(result.success).toBe(false);
    expect(zodIssuesToDetails(result.error!).map((d) => d.field)).toEqual(['rows[12].timestamp']);
  });

  it('fixes the status of every code as the spec lists it', () => {
    expect(ERROR_STATUS).toMatchObject({ invalid_request: 400, unauthorized: 401, not_found: 404, rate_limited: 429 });
    expect(
      ErrorEnvelopeSchema.safeParse({ error: { code: 'nope', message: '', details: [], request_id: 'x' } }).success,
    ).toBe(false);
  });
});
