import { describe, expect, it } from 'vitest';
import { NumberColumn, valueAt } from './column-arrays.ts';

describe('NumberColumn', () => {
  it('keeps every value exactly as it grows past its capacity, and drops the tail when its length is cut', () => {
    const column = new NumberColumn();
    const values = Array.from({ length: 1000 }, (_, i) => (i % 3 === 0 ? -i : i * 0.1 + Math.fround(1 / 3)));
    values[7] = NaN; // a float field's "unknown" in MAVLink: a value, not a missing one
    for (const v of values) column.push(v);
    expect(column.length).toBe(1000);
    expect(Array.from(column.data.subarray(0, column.length))).toEqual(values);
    column.length = 10;
    column.push(42);
    expect(Array.from(column.data.subarray(0, column.length))).toEqual([...values.slice(0, 10), 42]);
    expect(valueAt(column, 10)).toBe(42);
    expect(valueAt(['a', 'b'], 1)).toBe('b');
  });
});
