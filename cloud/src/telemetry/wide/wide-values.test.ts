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

  it.each([
    ['int32', 2 ** 31],
    ['int32', -(2 ** 31) - 1],
    ['uint32', -1],
    ['uint32', 2 ** 32],
    ['enum', -1],
  ] as const)('a %s channel refuses %j although its bigint column would hold it', (dataType, input) => {
    expect(coerceJsonValue('bigint', input, dataType).ok).toBe(false);
  });

  it.each([
    ['int32', -(2 ** 31)],
    ['uint32', 2 ** 32 - 1],
    ['enum', 7],
  ] as const)('a %s channel accepts %j', (dataType, input) => {
    expect(coerceJsonValue('bigint', input, dataType).ok).toBe(true);
  });

  it('decodes base64 for bytes columns', () => {
    const result = coerceJsonValue('bytea', 'AQID');
    expect(result.ok && [...(result.value as Buffer)]).toEqual([1, 2, 3]);
  });
});
