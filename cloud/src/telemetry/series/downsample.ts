import { lttbWithPinsAt, type SampleColumns } from './lttb.ts';
import { compareF8 } from './m4.ts';
import { M4_FIELD, M4_FIELDS, type M4Grid } from './m4-grid.ts';
import { sampleColumnsOf } from './series.ts';

const { COUNT, MIN_V, MIN_T, MAX_V, MAX_T, FIRST_T, FIRST_V, LAST_T, LAST_V } = M4_FIELD;

/**
 * Turn a grid of M4 aggregates (its buckets in time order, empty ones skipped) into at most `budget` samples.
 *
 * What is kept, in priority order:
 *  1. every bucket's minimum and maximum sample (pinned) — always, when budget ≥ 2 × buckets;
 *  2. the first and the last sample of the whole series, when room remains;
 *  3. the buckets' first and last samples, chosen by LTTB to fill the remaining budget exactly.
 * A budget of 1 returns the series' maximum sample. Every returned sample is a real one (its exact time
 * and value); samples appear once even when one is, say, both a bucket's first and its minimum.
 */
export function samplesFromBuckets(grid: M4Grid, budget: number): SampleColumns {
  const d = grid.data;
  let filled = 0;
  let best = -1;
  for (let o = 0; o < d.length; o += M4_FIELDS) {
    if (d[o + COUNT] === 0) continue;
    filled++;
    if (best < 0 || compareF8(d[o + MAX_V]!, d[best + MAX_V]!) > 0) best = o;
  }
  if (filled === 0 || budget <= 0) return sampleColumnsOf([]);
  if (budget === 1) return { t: Float64Array.of(d[best + MAX_T]!), v: Float64Array.of(d[best + MAX_V]!) };

  // The candidates as columns (lttb.ts SampleColumns), at most four a bucket.
  const capacity = filled * 4;
  const candidates = { t: new Float64Array(capacity), v: new Float64Array(capacity) };
  const pinned = new Uint8Array(capacity);
  let n = 0;
  // A bucket's four samples (first, min, max, last) in time order, ties in that order: sorted in place
  // in these slots rather than as four small arrays per bucket (a Query holds thousands of buckets).
  const qt = new Float64Array(4);
  const qv = new Float64Array(4);
  const qp = new Uint8Array(4);
  for (let o = 0; o < d.length; o += M4_FIELDS) {
    if (d[o + COUNT] === 0) continue;
    qt[0] = d[o + FIRST_T]!; qv[0] = d[o + FIRST_V]!; qp[0] = 0;
    qt[1] = d[o + MIN_T]!; qv[1] = d[o + MIN_V]!; qp[1] = 1;
    qt[2] = d[o + MAX_T]!; qv[2] = d[o + MAX_V]!; qp[2] = 1;
    qt[3] = d[o + LAST_T]!; qv[3] = d[o + LAST_V]!; qp[3] = 0;
    for (let i = 1; i < 4; i++) {
      const t = qt[i]!, v = qv[i]!, p = qp[i]!;
      let j = i - 1;
      for (; j >= 0 && qt[j]! > t; j--) {
        qt[j + 1] = qt[j]!; qv[j + 1] = qv[j]!; qp[j + 1] = qp[j]!;
      }
      qt[j + 1] = t; qv[j + 1] = v; qp[j + 1] = p;
    }
    for (let k = 0; k < 4; k++) {
      const t = qt[k]!;
      if (n > 0 && candidates.t[n - 1] === t) {
        pinned[n - 1] = pinned[n - 1]! | qp[k]!;
        continue;
      }
      candidates.t[n] = t;
      candidates.v[n] = qv[k]!;
      pinned[n] = qp[k]!;
      n++;
    }
  }
  let pins = 0;
  for (let i = 0; i < n; i++) pins += pinned[i]!;
  for (const i of [0, n - 1]) {
    if (!pinned[i] && pins < budget) {
      pinned[i] = 1;
      pins++;
    }
  }
  const kept = lttbWithPinsAt(candidates, pinned, n, budget);
  const out = { t: new Float64Array(kept.length), v: new Float64Array(kept.length) };
  for (let k = 0; k < kept.length; k++) {
    out.t[k] = candidates.t[kept[k]!]!;
    out.v[k] = candidates.v[kept[k]!]!;
  }
  return out;
}
