import { describe, expect, it } from 'vitest';
import { isUuid, Uuid } from './common.ts';

describe('isUuid', () => {
  it('takes the 8-4-4-4-12 hex shape in either case', () => {
    expect(isUuid('0190a6e2-7c1d-7b3e-8f00-123456789abc')).toBe(true);
    expect(isUuid('0190A6E2-7C1D-7B3E-8F00-123456789ABC')).toBe(true);
  });

  it('takes a UUID whose version and variant digits the zod Uuid schema refuses', () => {
    const nonRfc = '12345678-1234-1234-1234-123456789abc';
    expect(isUuid(nonRfc)).toBe(true);
    expect(Uuid.safeParse(nonRfc).success).toBe(false);
  });

  it('refuses anything else', () => {
    for (const value of ['', 'ch_0', '0190a6e2-7c1d-7b3e-8f00-123456789ab', '0190a6e2-7c1d-7b3e-8f00-123456789abcd', ' 0190a6e2-7c1d-7b3e-8f00-123456789abc', '0190a6e27c1d7b3e8f00123456789abc', 'g190a6e2-7c1d-7b3e-8f00-123456789abc']) {
      expect(isUuid(value), value).toBe(false);
    }
  });
});
