import { describe, expect, it } from 'vitest';
import { coerceJsonValue } from './wide-values.ts';

describe('coerceJsonValue', () => {
  it.each([
    ['double precision', 1.5, 1.5],
    ['bigint', 42, '42'],
    ['bigint', '-9223372036854775808', '-9223372036854775808'],
    ['numeric(20,0)', '18446744073709551615', '18446744073709551615'],
    ['boolean', true, true],
    ['text', 'hello', 'hello'],
  ] as const)('%s accepts %j', (type, input, expected) => {
    expect(coerceJsonValue(type, input)).toEqual({ ok: true, value: expected });
  });

  it.each([
    ['double precision', '1.5'],
    ['double precision', true],
    ['bigint', 1.5],
    ['bigint', 2 ** 60],
    ['bigint', '9223372036854775808'],
    ['numeric(20,0)', -1],
    ['boolean', 1],
    ['text', 3],
    ['bytea', 'not base64!'],
  ] as const)('%s refuses %j', (type, input) => {
    const result = coerceJsonValue(type, input);
    expect(result.ok).toBe(false);
  });

  it('decodes base64 for bytes columns', () => {
    const result = coerceJsonValue('bytea', 'AQID');
    expect(result.ok && [...(result.value as Buffer)]).toEqual([1, 2, 3]);
  });
});
