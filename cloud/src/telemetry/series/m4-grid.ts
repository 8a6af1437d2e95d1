import { compareF8, PACKED_M4_WIDTH, type M4 } from './m4.ts';

/**
 * The M4 aggregates of a Query's buckets as one column of doubles: bucket k's fields lie at
 * k × M4_FIELDS, in the order a rollup pack's slot and a packed SQL answer hold them (count, min value,
 * min time, max value, max time, first time, first value, last time, last value). A count of 0 is an
 * empty bucket.
 *
 * Why not an M4 object per bucket in a Map by key: an eight-channel Query of a whole range held ~16,000
 * of them with their Map entries, ~3.7 MB that lived through the young generation's scavenges into the
 * old one. A grid is one 72 KB ArrayBuffer per channel (2,000 points): V8 counts it as external memory,
 * which a scavenge frees while it is young (platform/heap.ts says why that matters), not objects for
 * its collectors to trace. Its buckets are in key order as they are filled, so no reordering is needed
 * when reads that ran at once interleaved their keys.
 *
 * Keys are the bucket indices of the Query's plan, 0 ≤ k < size (planQuery's origin is at or before
 * the range's start and its bucket count covers the end): a key outside is a planning error and throws.
 */
export const M4_FIELDS = 9;

const COUNT = 0, MIN_V = 1, MIN_T = 2, MAX_V = 3, MAX_T = 4, FIRST_T = 5, FIRST_V = 6, LAST_T = 7, LAST_V = 8;

export class M4Grid {
  readonly size: number;
  readonly data: Float64Array;

  constructor(size: number) {
    if (!Number.isSafeInteger(size) || size < 0) throw new RangeError(`an M4 grid of ${size} buckets`);
    this.size = size;
    this.data = new Float64Array(size * M4_FIELDS);
  }

  /** Add one sample to bucket `k`. */
  add(k: number, t: number, v: number): void {
    mergeAt(this.data, this.offset(k), 1, v, t, v, t, t, v, t, v);
  }

  /** Fold the non-empty rollup slot starting at byte `at` of `view` (big-endian, rollup-packs.ts) into bucket `k`. */
  mergeSlot(k: number, view: DataView, at: number): void {
    mergeAt(this.data, this.offset(k), view.getFloat64(at), view.getFloat64(at + 8), view.getFloat64(at + 16), view.getFloat64(at + 24),
      view.getFloat64(at + 32), view.getFloat64(at + 40), view.getFloat64(at + 48), view.getFloat64(at + 56), view.getFloat64(at + 64));
  }

  /**
   * Fold a packed SQL answer (`PACKED_M4_WIDTH` values a bucket: its key, then the fields in the grid's
   * order; sql/packed-m4.ts) into the grid. Rows of one key are partial aggregates of one bucket and merge.
   */
  mergePacked(values: Float64Array): void {
    for (let i = 0; i + PACKED_M4_WIDTH <= values.length; i += PACKED_M4_WIDTH) {
      mergeAt(this.data, this.offset(values[i]!), values[i + 1]!, values[i + 2]!, values[i + 3]!, values[i + 4]!, values[i + 5]!,
        values[i + 6]!, values[i + 7]!, values[i + 8]!, values[i + 9]!);
    }
  }

  /** Raw samples in every bucket. */
  total(): number {
    let n = 0;
    for (let o = COUNT; o < this.data.length; o += M4_FIELDS) n += this.data[o]!;
    return n;
  }

  /** Bucket `k` as an M4, or undefined when it is empty: for the few readers that want one, not for loops over the grid. */
  bucket(k: number): M4 | undefined {
    const d = this.data;
    const o = this.offset(k);
    if (d[o + COUNT] === 0) return undefined;
    return {
      count: d[o + COUNT]!, firstT: d[o + FIRST_T]!, firstV: d[o + FIRST_V]!, lastT: d[o + LAST_T]!, lastV: d[o + LAST_V]!,
      minT: d[o + MIN_T]!, minV: d[o + MIN_V]!, maxT: d[o + MAX_T]!, maxV: d[o + MAX_V]!,
    };
  }

  private offset(k: number): number {
    if (!(k >= 0 && k < this.size && Number.isInteger(k))) throw new RangeError(`bucket ${k} is outside the grid's ${this.size} buckets`);
    return k * M4_FIELDS;
  }
}

/** Where each field of a bucket lies, from the bucket's offset: for readers that walk the grid's column. */
export const M4_FIELD = { COUNT, MIN_V, MIN_T, MAX_V, MAX_T, FIRST_T, FIRST_V, LAST_T, LAST_V } as const;

/**
 * Fold a partial aggregate into the bucket at `o` (series/m4.ts `mergeParts`, on a column): the earliest
 * sample wins ties for first, minimum and maximum, values ordered as PostgreSQL orders float8 (NaN highest).
 */
function mergeAt(d: Float64Array, o: number, count: number, minV: number, minT: number, maxV: number, maxT: number,
  firstT: number, firstV: number, lastT: number, lastV: number): void {
  if (d[o + COUNT] === 0) {
    d[o + COUNT] = count;
    d[o + MIN_V] = minV; d[o + MIN_T] = minT;
    d[o + MAX_V] = maxV; d[o + MAX_T] = maxT;
    d[o + FIRST_T] = firstT; d[o + FIRST_V] = firstV;
    d[o + LAST_T] = lastT; d[o + LAST_V] = lastV;
    return;
  }
  d[o + COUNT] = d[o + COUNT]! + count;
  if (firstT < d[o + FIRST_T]!) {
    d[o + FIRST_T] = firstT; d[o + FIRST_V] = firstV;
  }
  if (lastT > d[o + LAST_T]!) {
    d[o + LAST_T] = lastT; d[o + LAST_V] = lastV;
  }
  const lower = compareF8(minV, d[o + MIN_V]!);
  if (lower < 0 || (lower === 0 && minT < d[o + MIN_T]!)) {
    d[o + MIN_V] = minV; d[o + MIN_T] = minT;
  }
  const higher = compareF8(maxV, d[o + MAX_V]!);
  if (higher > 0 || (higher === 0 && maxT < d[o + MAX_T]!)) {
    d[o + MAX_V] = maxV; d[o + MAX_T] = maxT;
  }
}
