/**
 * M4 aggregate of one time bucket (Jugel et al., VLDB 2014): the first, last, minimum and maximum sample,
 * each with its time, plus how many raw samples the bucket holds. Times are µs since the epoch.
 *
 * Ordering follows PostgreSQL's float8 ordering so that aggregates merged here agree with aggregates
 * computed in SQL: NaN sorts above every number, and equal values prefer the earlier sample.
 */
export interface M4 {
  count: number;
  firstT: number;
  firstV: number;
  lastT: number;
  lastV: number;
  minT: number;
  minV: number;
  maxT: number;
  maxV: number;
}

/**
 * Values per bucket in a packed answer: the bucket's key, then count, min (value, time), max (value,
 * time), first (time, value), last (time, value). The queries build it with `packedM4Sql`
 * (sql/packed-m4.ts): one bytea per channel instead of a row of ten float texts per bucket.
 */
export const PACKED_M4_WIDTH = 10;

/**
 * Buckets in time order from a packed answer (`PACKED_M4_WIDTH` values each, in key order); adjacent
 * rows with one key are partial aggregates of one bucket (read partly from rollups, partly from raw
 * rows) and are merged.
 */
export function m4sFromPacked(values: Float64Array): M4[] {
  const out: M4[] = [];
  let lastKey = Number.NaN;
  for (let i = 0; i + PACKED_M4_WIDTH <= values.length; i += PACKED_M4_WIDTH) {
    const m4 = packedM4At(values, i);
    const key = values[i]!;
    if (key === lastKey) mergeM4(out[out.length - 1]!, m4);
    else out.push(m4);
    lastKey = key;
  }
  return out;
}

/** The buckets of a packed answer merged into `byKey` by their key (a bucket read partly elsewhere is completed). */
export function mergePackedInto(values: Float64Array, byKey: Map<number, M4>): void {
  for (let i = 0; i + PACKED_M4_WIDTH <= values.length; i += PACKED_M4_WIDTH) {
    const m4 = packedM4At(values, i);
    const into = byKey.get(values[i]!);
    if (into) mergeM4(into, m4);
    else byKey.set(values[i]!, m4);
  }
}

function packedM4At(values: Float64Array, i: number): M4 {
  // Fields in m4Of's order: one shape for every M4.
  return {
    count: values[i + 1]!,
    firstT: values[i + 6]!,
    firstV: values[i + 7]!,
    lastT: values[i + 8]!,
    lastV: values[i + 9]!,
    minT: values[i + 3]!,
    minV: values[i + 2]!,
    maxT: values[i + 5]!,
    maxV: values[i + 4]!,
  };
}

/**
 * Buckets keyed by their index on the query's grid, in time order. A read that fills the map alone fills
 * it in key order (rows arrive by time), and its order is taken as it is. Reads that run at once (rollup
 * packs and raw edges, two halves of a raw range) interleave their keys: as the keys are whole bucket
 * indices, mostly dense, they are then placed by index in one pass rather than sorted with a comparator
 * (sorting eight channels' ~900 keys each was ~2.5 ms of an eight-channel Query's CPU).
 */
export function m4sInKeyOrder(byKey: ReadonlyMap<number, M4>): M4[] {
  let ordered = true;
  let integral = true;
  let last = -Infinity;
  let low = Infinity;
  let high = -Infinity;
  for (const key of byKey.keys()) {
    if (key < last) ordered = false;
    last = key;
    if (!Number.isSafeInteger(key)) integral = false;
    if (key < low) low = key;
    if (key > high) high = key;
  }
  if (ordered) return [...byKey.values()];
  const span = high - low + 1;
  if (!integral || span > 4 * byKey.size) {
    return [...byKey.keys()].sort((a, b) => a - b).map((key) => byKey.get(key)!);
  }
  const slots: Array<M4 | undefined> = new Array(span).fill(undefined);
  for (const [key, m4] of byKey) slots[key - low] = m4;
  const out: M4[] = [];
  for (const m4 of slots) if (m4 !== undefined) out.push(m4);
  return out;
}

/** Compare two doubles the way PostgreSQL does: NaN equals NaN and is greater than everything else. */
export function compareF8(a: number, b: number): number {
  const aNaN = Number.isNaN(a);
  const bNaN = Number.isNaN(b);
  if (aNaN || bNaN) return aNaN === bNaN ? 0 : aNaN ? 1 : -1;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The aggregate of a single sample. */
export function m4Of(t: number, v: number): M4 {
  return { count: 1, firstT: t, firstV: v, lastT: t, lastV: v, minT: t, minV: v, maxT: t, maxV: v };
}

/** Fold `b` into `a` (mutates and returns `a`). Associative and commutative, so partial aggregates combine in any order. */
export function mergeM4(a: M4, b: M4): M4 {
  return mergeParts(a, b.count, b.minV, b.minT, b.maxV, b.maxT, b.firstT, b.firstV, b.lastT, b.lastV);
}

/** `mergeM4` with the second aggregate given field by field, for a reader that folds rows without building one. */
export function mergeParts(a: M4, count: number, minV: number, minT: number, maxV: number, maxT: number, firstT: number, firstV: number, lastT: number, lastV: number): M4 {
  a.count += count;
  if (firstT < a.firstT) {
    a.firstT = firstT;
    a.firstV = firstV;
  }
  if (lastT > a.lastT) {
    a.lastT = lastT;
    a.lastV = lastV;
  }
  const lower = compareF8(minV, a.minV);
  if (lower < 0 || (lower === 0 && minT < a.minT)) {
    a.minT = minT;
    a.minV = minV;
  }
  const higher = compareF8(maxV, a.maxV);
  if (higher > 0 || (higher === 0 && maxT < a.maxT)) {
    a.maxT = maxT;
    a.maxV = maxV;
  }
  return a;
}

/** Add one sample to an aggregate (mutates; the ingest hot path, so no allocation: V8 inlines the call). */
export function addSample(a: M4, t: number, v: number): M4 {
  return mergeParts(a, 1, v, t, v, t, t, v, t, v);
}
