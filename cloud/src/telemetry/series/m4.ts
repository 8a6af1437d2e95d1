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
 * An M4 bucket as the queries select it: the (value, time) extremes are compared as arrays in SQL and
 * taken apart there, so nine float8 scalars cross the wire (cheaper to send and to parse than arrays).
 */
export interface M4Columns {
  n: number;
  min_v: number;
  min_t: number;
  max_v: number;
  max_t: number;
  first_t: number;
  first_v: number;
  last_t: number;
  last_v: number;
}

export function m4FromColumns(row: M4Columns): M4 {
  return {
    count: row.n,
    minV: row.min_v,
    minT: row.min_t,
    maxV: row.max_v,
    maxT: row.max_t,
    firstT: row.first_t,
    firstV: row.first_v,
    lastT: row.last_t,
    lastV: row.last_v,
  };
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
  a.count += b.count;
  if (b.firstT < a.firstT) {
    a.firstT = b.firstT;
    a.firstV = b.firstV;
  }
  if (b.lastT > a.lastT) {
    a.lastT = b.lastT;
    a.lastV = b.lastV;
  }
  const lower = compareF8(b.minV, a.minV);
  if (lower < 0 || (lower === 0 && b.minT < a.minT)) {
    a.minT = b.minT;
    a.minV = b.minV;
  }
  const higher = compareF8(b.maxV, a.maxV);
  if (higher > 0 || (higher === 0 && b.maxT < a.maxT)) {
    a.maxT = b.maxT;
    a.maxV = b.maxV;
  }
  return a;
}

/** Add one sample to an aggregate (mutates; the ingest hot path, so no allocation). */
export function addSample(a: M4, t: number, v: number): M4 {
  a.count += 1;
  if (t < a.firstT) {
    a.firstT = t;
    a.firstV = v;
  }
  if (t > a.lastT) {
    a.lastT = t;
    a.lastV = v;
  }
  const lower = compareF8(v, a.minV);
  if (lower < 0 || (lower === 0 && t < a.minT)) {
    a.minT = t;
    a.minV = v;
  }
  const higher = compareF8(v, a.maxV);
  if (higher > 0 || (higher === 0 && t < a.maxT)) {
    a.maxT = t;
    a.maxV = v;
  }
  return a;
}
