import { BinaryWriter } from '@bufbuild/protobuf/wire';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { varintLength, writeVarint } from './varint.ts';

/** protobuf-es's varint of an int64. */
function reference(n: number): Uint8Array {
  return new BinaryWriter().int64(BigInt(n)).finish();
}

function written(n: number): Uint8Array {
  const buf = new Uint8Array(16);
  return buf.subarray(0, writeVarint(buf, 0, n));
}

describe('varints', () => {
  it('are what protobuf-es writes, and as long as varintLength says, at every length boundary', () => {
    const edges = [0, 1, 2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 53 - 1, -1, -(2 ** 40)];
    for (let bits = 7; bits <= 49; bits += 7) edges.push(2 ** bits - 1, 2 ** bits);
    for (const n of edges) {
      expect(written(n), String(n)).toEqual(reference(n));
      expect(varintLength(n), String(n)).toBe(reference(n).length);
    }
  });

  it('agree with protobuf-es on any safe integer', () => {
    fc.assert(
      fc.property(fc.oneof(fc.integer(), fc.maxSafeInteger(), fc.integer({ min: 0, max: 2 ** 31 + 1000 })), (n) => {
        expect(written(n)).toEqual(reference(n));
        expect(varintLength(n)).toBe(reference(n).length);
      }),
      { numRuns: 5000 },
    );
  });
});
