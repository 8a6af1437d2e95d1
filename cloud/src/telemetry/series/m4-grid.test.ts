import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { M4Grid, M4_FIELDS } from './m4-grid.ts';
import { addSample, m4Of, mergeM4, PACKED_M4_WIDTH, type M4 } from './m4.ts';
import { pack } from '../wide/rollup-packs.ts';

/** A bucket's fields in a packed SQL answer: its key, then the grid's order. */
const packedRow = (key: number, m: M4) => [key, m.count, m.minV, m.minT, m.maxV, m.maxT, m.firstT, m.firstV, m.lastT, m.lastV];

/**
 * Samples as (bucket, time, value); values include NaN, -0 and ties, which PostgreSQL's float8 order
 * decides, and times tie too (a few instants shared by many samples) so the earlier-wins rules are tried.
 */
const samples = fc.array(
  fc.tuple(
    fc.integer({ min: 0, max: 5 }),
    fc.oneof(fc.integer({ min: 0, max: 1_000_000 }), fc.integer({ min: 0, max: 3 })),
    fc.oneof(fc.double({ noDefaultInfinity: true }), fc.constantFrom(0, -0, 1, -1, NaN)),
  ),
  { maxLength: 80 },
);

/** The same samples as one M4 object per bucket, folded by m4.ts. */
function objectsOf(list: ReadonlyArray<[number, number, number]>): Map<number, M4> {
  const byKey = new Map<number, M4>();
  for (const [k, t, v] of list) {
    const m4 = byKey.get(k);
    if (m4) addSample(m4, t, v);
    else byKey.set(k, m4Of(t, v));
  }
  return byKey;
}

describe('M4Grid', () => {
  it('folds samples into the buckets m4.ts would, whatever their order', () => {
    fc.assert(
      fc.property(samples, (list) => {
        const grid = new M4Grid(6);
        for (const [k, t, v] of list) grid.add(k, t, v);
        const byKey = objectsOf(list);
        for (let k = 0; k < 6; k++) expect(grid.bucket(k)).toEqual(byKey.get(k));
        expect(grid.total()).toBe(list.length);
      }),
      { numRuns: 300 },
    );
  });

  it('merges partial aggregates from rollup packs and packed answers as mergeM4 does', () => {
    fc.assert(
      fc.property(samples, samples, (left, right) => {
        const a = objectsOf(left);
        const b = objectsOf(right);
        const grid = new M4Grid(6);
        // One part as rollup slots (big-endian bytes), the other as a packed SQL answer.
        for (const [k, m4] of a) {
          const bytes = pack([m4]);
          grid.mergeSlot(k, new DataView(bytes.buffer), 0);
        }
        grid.mergePacked(Float64Array.from([...b].flatMap(([k, m4]) => packedRow(k, m4))));
        for (let k = 0; k < 6; k++) {
          const x = a.get(k);
          const y = b.get(k);
          const expected = x && y ? mergeM4({ ...x }, y) : (x ?? y);
          expect(grid.bucket(k)).toEqual(expected);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('merges rows of one key in a packed answer, and reads nothing from an empty one', () => {
    const grid = new M4Grid(4);
    const packed = Float64Array.from([...packedRow(0, m4Of(100, 5)), ...packedRow(1, m4Of(200, 1)), ...packedRow(1, addSample(m4Of(250, 9), 260, -3)), ...packedRow(3, m4Of(400, 7))]);
    expect(packed.length).toBe(4 * PACKED_M4_WIDTH);
    grid.mergePacked(packed);
    expect([0, 1, 2, 3].map((k) => grid.bucket(k))).toEqual([m4Of(100, 5), mergeM4(m4Of(200, 1), addSample(m4Of(250, 9), 260, -3)), undefined, m4Of(400, 7)]);
    grid.mergePacked(new Float64Array(0));
    expect(grid.total()).toBe(5);
  });

  it('refuses a key outside its buckets rather than dropping the sample', () => {
    const grid = new M4Grid(3);
    expect(grid.data.length).toBe(3 * M4_FIELDS);
    for (const key of [-1, 3, 1.5, NaN]) expect(() => grid.add(key, 1, 1)).toThrow(RangeError);
    expect(() => grid.mergePacked(Float64Array.from(packedRow(7, m4Of(1, 1))))).toThrow(/bucket 7 is outside the grid's 3 buckets/);
    expect(() => new M4Grid(-1)).toThrow(RangeError);
    expect(grid.total()).toBe(0);
  });
});
