/**
 * How a JSON value from HTTP append becomes a value of a physical column. Strict on purpose: a value
 * of the wrong kind is a 400 naming the field, never a silent conversion.
 */
export type Coerced = { ok: true; value: unknown } | { ok: false; message: string };

const UINT64_MAX = 18446744073709551615n;
const INT64_MIN = -9223372036854775808n;
const INT64_MAX = 9223372036854775807n;

/** Narrower ranges of declared types that share the bigint column. */
const DECLARED_RANGE: Record<string, [bigint, bigint, string]> = {
  int32: [-2147483648n, 2147483647n, 'a 32-bit signed integer'],
  uint32: [0n, 4294967295n, 'a 32-bit unsigned integer'],
  enum: [0n, 4294967295n, 'an enum value (32-bit unsigned)'],
};

export function coerceJsonValue(physicalType: string, value: number | string | boolean, dataType?: string): Coerced {
  const declared = dataType ? DECLARED_RANGE[dataType] : undefined;
  if (physicalType === 'bigint' && declared) return integer(value, declared[0], declared[1], declared[2]);
  switch (physicalType) {
    case 'double precision':
      if (typeof value === 'number') return { ok: true, value };
      return { ok: false, message: 'expected a number' };
    case 'bigint':
      return integer(value, INT64_MIN, INT64_MAX, 'a 64-bit signed integer');
    case 'numeric(20,0)':
      return integer(value, 0n, UINT64_MAX, 'a 64-bit unsigned integer');
    case 'boolean':
      if (typeof value === 'boolean') return { ok: true, value };
      return { ok: false, message: 'expected true or false' };
    case 'text':
      if (typeof value === 'string') return { ok: true, value };
      return { ok: false, message: 'expected a string' };
    case 'bytea':
      if (typeof value === 'string' && /^[A-Za-z0-9+/]*={0,2}$/.test(value) && value.length % 4 === 0) {
        return { ok: true, value: Buffer.from(value, 'base64') };
      }
      return { ok: false, message: 'expected base64 bytes' };
    default:
      return { ok: false, message: `column type ${physicalType} is not writable` };
  }
}

function integer(value: number | string | boolean, min: bigint, max: bigint, what: string): Coerced {
  let big: bigint;
  if (typeof value === 'number' && Number.isSafeInteger(value)) big = BigInt(value);
  else if (typeof value === 'string' && /^-?\d{1,20}$/.test(value)) big = BigInt(value);
  else return { ok: false, message: `expected ${what} (a JSON integer, or a decimal string beyond 2^53)` };
  if (big < min || big > max) return { ok: false, message: `out of range for ${what}` };
  return { ok: true, value: big.toString() };
}
