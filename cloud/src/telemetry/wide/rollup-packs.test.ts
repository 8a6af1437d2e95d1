import { describe, expect, it } from 'vitest';
import { m4Of, addSample, mergeM4 } from '../series/m4.ts';
import { mergeSlots, pack, packGroup, packSlot, readSlot, SLOT_BYTES, unpack } from './rollup-packs.ts';

describe('rollup packs', () => {
  it('round-trips slots bit for bit, empty slots included, and trims trailing empty ones', () => {
    const a = addSample(m4Of(1_772_323_200_000_000, -0), 1_772_323_200_000_250, Number.NaN);
    const b = addSample(m4Of(5, Infinity), 9, 5e-324);
    const bytes = pack([undefined, a, undefined, b, undefined, undefined]);
    expect(bytes.byteLength).toBe(4 * SLOT_BYTES);
    const back = unpack(bytes);
    expect(back).toEqual([undefined, a, undefined, b]);
    expect(Object.is(back[1]!.firstV, -0)).toBe(true);
    expect(pack([undefined, undefined]).byteLength).toBe(0);
  });

  it('writes network order, as float8send does', () => {
    const bytes = pack([m4Of(2, 1)]);
    // count 1.0 = 0x3FF0000000000000
    expect([...bytes.subarray(0, 8)]).toEqual([0x3f, 0xf0, 0, 0, 0, 0, 0, 0]);
  });

  it('reads a slot past a short pack as empty, and refuses a pack that is not whole slots', () => {
    const bytes = pack([m4Of(2, 1)]);
    expect(readSlot(new DataView(bytes.buffer), 0, bytes.byteLength, 3)).toBeUndefined();
    expect(() => unpack(new Uint8Array(SLOT_BYTES + 1))).toThrow(/whole number/);
  });

  it('merges slot by slot as mergeM4 does', () => {
    const stored = [m4Of(10, 1), undefined];
    const delta = [m4Of(5, 7), m4Of(6, -1), m4Of(7, 2)];
    const merged = mergeSlots(stored, delta);
    expect(merged).toEqual([mergeM4(m4Of(10, 1), m4Of(5, 7)), m4Of(6, -1), m4Of(7, 2)]);
    expect(merged[1]).not.toBe(delta[1]);
  });

  it('puts sixteen channels in a group', () => {
    expect([0, 15, 16, 21].map((c) => [packGroup(c), packSlot(c)])).toEqual([[0, 0], [0, 15], [1, 0], [1, 5]]);
  });
});
