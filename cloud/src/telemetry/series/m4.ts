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
 * (sql/packed-m4.ts): one bytea per channel instead of a row of ten float texts per bucket. An
 * `M4Grid` (m4-grid.ts) folds it.
 */
export const PACKED_M4_WIDTH = 10;

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

/** `mergeM4` with the second aggregate given field by field (an M4Grid folds into a column the same way, m4-grid.ts). */
function mergeParts(a: M4, count: number, minV: number, minT: number, maxV: number, maxT: number, firstT: number, firstV: number, lastT: number, lastV: number): M4 {
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
