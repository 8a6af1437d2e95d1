import { mergeM4, type M4 } from '../series/m4.ts';

/**
 * How a rollup bucket is stored: one row per (dataset, channel group, width, bucket) whose `data` bytea
 * holds the M4 aggregates of up to PACK_CHANNELS channels side by side, a slot of SLOT_BYTES per channel.
 *
 * Why packed: a Query of eight channels' whole range read 50,000 rollup rows of eleven fields each, and
 * PostgreSQL's cost of sending a field (~57 ns) made that 37 ms however the rows were read. Packed, the
 * same range is 6,250 rows of three fields, sent in ~4 ms (docs/PERFORMANCE.md). Sixteen channels keep a
 * pack at 1,152 bytes, under PostgreSQL's 2 kB threshold for compressing or moving a value out of line.
 *
 * Slot layout, big-endian float8 (network order, as `float8send` writes them, so SQL can build a pack):
 * count, min value, min time, max value, max time, first time, first value, last time, last value.
 * Times are µs since the epoch, exact as doubles below 2^53. A count of 0 is an empty slot (a channel
 * without samples in the bucket). A pack is as long as its highest non-empty slot needs.
 */
export const PACK_CHANNELS = 16;
export const SLOT_FLOATS = 9;
export const SLOT_BYTES = SLOT_FLOATS * 8;

/** The group a channel's slot lives in, and the slot within its group's packs. */
export function packGroup(channel: number): number {
  return Math.floor(channel / PACK_CHANNELS);
}
export function packSlot(channel: number): number {
  return channel % PACK_CHANNELS;
}

/** The aggregate in `slot` of a pack, or undefined when the slot is empty or past the pack's end. */
export function readSlot(view: DataView, offset: number, length: number, slot: number): M4 | undefined {
  const at = offset + slot * SLOT_BYTES;
  if (at + SLOT_BYTES > offset + length) return undefined;
  const count = view.getFloat64(at);
  if (count === 0) return undefined;
  // Fields in m4Of's order, so every M4 a Query folds has one shape and the code reading them stays monomorphic.
  return {
    count,
    firstT: view.getFloat64(at + 40),
    firstV: view.getFloat64(at + 48),
    lastT: view.getFloat64(at + 56),
    lastV: view.getFloat64(at + 64),
    minT: view.getFloat64(at + 16),
    minV: view.getFloat64(at + 8),
    maxT: view.getFloat64(at + 32),
    maxV: view.getFloat64(at + 24),
  };
}

/** A pack's slots (undefined where empty). */
export function unpack(bytes: Uint8Array): Array<M4 | undefined> {
  if (bytes.byteLength % SLOT_BYTES !== 0) throw new RangeError(`a rollup pack of ${bytes.byteLength} bytes is not a whole number of ${SLOT_BYTES}-byte slots`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return Array.from({ length: bytes.byteLength / SLOT_BYTES }, (_, slot) => readSlot(view, 0, bytes.byteLength, slot));
}

/** The pack of the given slots, as long as the last non-empty one needs. */
export function pack(slots: ReadonlyArray<M4 | undefined>): Uint8Array {
  let used = slots.length;
  while (used > 0 && !slots[used - 1]?.count) used--;
  const bytes = new Uint8Array(used * SLOT_BYTES);
  const view = new DataView(bytes.buffer);
  for (let slot = 0; slot < used; slot++) {
    const m4 = slots[slot];
    if (!m4 || m4.count === 0) continue;
    const at = slot * SLOT_BYTES;
    view.setFloat64(at, m4.count);
    view.setFloat64(at + 8, m4.minV);
    view.setFloat64(at + 16, m4.minT);
    view.setFloat64(at + 24, m4.maxV);
    view.setFloat64(at + 32, m4.maxT);
    view.setFloat64(at + 40, m4.firstT);
    view.setFloat64(at + 48, m4.firstV);
    view.setFloat64(at + 56, m4.lastT);
    view.setFloat64(at + 64, m4.lastV);
  }
  return bytes;
}

/** Fold the aggregates of `delta` into those of `stored` slot by slot (mutates and returns `stored`). */
export function mergeSlots(stored: Array<M4 | undefined>, delta: ReadonlyArray<M4 | undefined>): Array<M4 | undefined> {
  delta.forEach((m4, slot) => {
    if (!m4 || m4.count === 0) return;
    const into = stored[slot];
    stored[slot] = into && into.count > 0 ? mergeM4(into, m4) : { ...m4 };
  });
  return stored;
}
