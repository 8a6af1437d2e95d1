import type { BinaryParam } from '../../db/direct-query.ts';
import { describe, expect, it } from 'vitest';
import { arrayLiteral, binaryArrays, float8ArrayFromBinary, float8Text, quotedBytea, quotedText, textArrays } from './sql-arrays.ts';

describe('array literals', () => {
  it('formats doubles exactly, keeping -0, NaN and the infinities', () => {
    expect([0.1, -0, 0, NaN, Infinity, -Infinity, 1e300, 5e-324].map(float8Text)).toEqual(['0.1', '-0', '0', 'NaN', 'Infinity', '-Infinity', '1e+300', '5e-324']);
    expect(textArrays.float8([1.5, 2, 3], new Uint8Array([1, 0, 1]))).toBe('{1.5,NULL,3}');
  });

  it('quotes text and bytea elements so array parsing gives them back unchanged', () => {
    expect(quotedText('a "b" \\ {c},d')).toBe('"a \\"b\\" \\\\ {c},d"');
    expect(quotedBytea(new Uint8Array([0, 0xab]))).toBe('"\\\\x00ab"');
    expect(arrayLiteral(['"x"', undefined, 't'], 4)).toBe('{"x",NULL,t,NULL}');
  });
});

describe('binary arrays', () => {
  it('writes the PostgreSQL binary array layout: header, then length-prefixed big-endian elements, -1 for NULL', () => {
    const buf = (binaryArrays.float8([1.5, 0, -2], new Uint8Array([1, 0, 1])) as BinaryParam).toPostgres();
    expect([buf.readInt32BE(0), buf.readInt32BE(4), buf.readInt32BE(8), buf.readInt32BE(12), buf.readInt32BE(16)]).toEqual([1, 1, 701, 3, 1]);
    expect([buf.readInt32BE(20), buf.readDoubleBE(24), buf.readInt32BE(32), buf.readInt32BE(36), buf.readDoubleBE(40)]).toEqual([8, 1.5, -1, 8, -2]);
    expect(buf.length).toBe(48);
  });

  it('encodes int8 exactly for negative and large safe integers', () => {
    const values = [-1, 0, 2 ** 53 - 1, -(2 ** 53) + 1, 1_767_225_600_000_000];
    const buf = (binaryArrays.int8(values) as BinaryParam).toPostgres();
    expect(buf.readInt32BE(8)).toBe(20);
    expect(values.map((_, i) => Number(buf.readBigInt64BE(24 + i * 12)))).toEqual(values);
    const int4 = (binaryArrays.int4([7, -7]) as BinaryParam).toPostgres();
    expect([int4.readInt32BE(8), int4.readInt32BE(24), int4.readInt32BE(32)]).toEqual([23, 7, -7]);
  });
});

describe('reading binary float8 arrays', () => {
  it('reads back what the writer wrote, bit-exact, NULL as NaN', () => {
    const values = [1.5, -0, NaN, Infinity, -Infinity, 5e-324, 1_796_342_400_000_000];
    const present = new Uint8Array([1, 1, 1, 1, 1, 1, 0]);
    const read = float8ArrayFromBinary((binaryArrays.float8(values, present) as BinaryParam).toPostgres());
    expect(Object.is(read[1], -0)).toBe(true);
    expect([...read]).toEqual([1.5, -0, NaN, Infinity, -Infinity, 5e-324, NaN]);
  });

  it('reads a two-dimensional array row by row, and an empty one', () => {
    const buf = Buffer.alloc(12 + 16 + 6 * 12);
    buf.writeInt32BE(2, 0);
    buf.writeInt32BE(701, 8);
    buf.writeInt32BE(2, 12); // rows
    buf.writeInt32BE(1, 16);
    buf.writeInt32BE(3, 20); // columns
    buf.writeInt32BE(1, 24);
    for (let i = 0; i < 6; i++) {
      buf.writeInt32BE(8, 28 + i * 12);
      buf.writeDoubleBE(i * 10, 32 + i * 12);
    }
    expect([...float8ArrayFromBinary(buf)]).toEqual([0, 10, 20, 30, 40, 50]);
    const empty = Buffer.alloc(12);
    empty.writeInt32BE(701, 8);
    expect(float8ArrayFromBinary(empty).length).toBe(0);
  });

  it('refuses an array of another type rather than misreading it', () => {
    expect(() => float8ArrayFromBinary((binaryArrays.int8([1]) as BinaryParam).toPostgres())).toThrow(/float8/);
  });
});
