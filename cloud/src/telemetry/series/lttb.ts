/** A sample of a series: time in µs since the epoch, value as a double. */
export interface Sample {
  t: number;
  v: number;
}

/**
 * Samples as columns: time and value of sample i at `t[i]` and `v[i]`. The choosing below works on
 * these rather than on a Sample object per candidate: a Query's channel offers ~3,600 candidates for
 * 2,000 samples, and eight channels' objects, with the arrays LTTB kept beside them, were a fifth of
 * an eight-channel Query's main thread (docs/PERFORMANCE.md).
 */
export interface SampleColumns {
  t: Float64Array;
  v: Float64Array;
}

/**
 * Twice the area of the triangle of samples a and b and the point (cT, cV); only comparisons matter.
 * Times are shifted to a's to keep the products small.
 */
function area(s: SampleColumns, a: number, b: number, cT: number, cV: number): number {
  const aT = s.t[a]!;
  const aV = s.v[a]!;
  return Math.abs((s.t[b]! - aT) * (cV - aV) - (cT - aT) * (s.v[b]! - aV));
}

/**
 * Largest-Triangle-Three-Buckets (Steinarsson, 2013) over the samples of `s` at the positions `at` (in
 * time order): reduce them to `threshold`, always keeping the first and the last, and from each of the
 * `threshold - 2` equal-count buckets between them the sample forming the largest triangle with the
 * previously kept one and the average of the next bucket. Answers the positions kept.
 */
export function lttbAt(s: SampleColumns, at: Int32Array, threshold: number): Int32Array {
  const n = at.length;
  if (threshold >= n) return at;
  if (threshold <= 0) return new Int32Array(0);
  if (threshold === 1) return at.slice(0, 1);
  if (threshold === 2) return Int32Array.of(at[0]!, at[n - 1]!);

  const out = new Int32Array(threshold);
  out[0] = at[0]!;
  const every = (n - 2) / (threshold - 2);
  let a = 0;
  for (let i = 0; i < threshold - 2; i++) {
    const avgStart = Math.floor((i + 1) * every) + 1;
    const avgEnd = Math.min(Math.floor((i + 2) * every) + 1, n);
    let avgT = 0;
    let avgV = 0;
    for (let j = avgStart; j < avgEnd; j++) {
      avgT += s.t[at[j]!]!;
      avgV += s.v[at[j]!]!;
    }
    const avgLen = avgEnd - avgStart;
    avgT /= avgLen;
    avgV /= avgLen;

    const from = Math.floor(i * every) + 1;
    const to = Math.floor((i + 1) * every) + 1;
    let best = from;
    let bestArea = -1;
    for (let j = from; j < to; j++) {
      const area2 = area(s, at[a]!, at[j]!, avgT, avgV);
      if (area2 > bestArea) {
        bestArea = area2;
        best = j;
      }
    }
    out[i + 1] = at[best]!;
    a = best;
  }
  out[threshold - 1] = at[n - 1]!;
  return out;
}

/**
 * LTTB that must keep some points. `pinned[i]` marks points that are always kept; the remaining
 * `threshold - pinnedCount` slots go to the unpinned points, which are cut into that many equal-count
 * groups, one point chosen per group by LTTB's rule. The anchor before a group is the last kept point
 * before it (pinned or chosen); the anchor after it is the next pinned point when one comes before
 * the next group, else the next group's average. A group with no kept point before it keeps its first
 * point, and the last group with nothing kept after it keeps its last point, as plain LTTB does.
 *
 * When more points are pinned than `threshold`, not all pins can stay: the pinned points alone are
 * reduced with plain LTTB. Over the first `n` samples of `s`, pinned where `pinned[i]` is 1; answers the
 * positions kept, in order.
 */
export function lttbWithPinsAt(s: SampleColumns, pinned: Uint8Array, n: number, threshold: number): Int32Array {
  if (threshold >= n) return Int32Array.from({ length: n }, (_, i) => i);
  if (threshold <= 0) return new Int32Array(0);
  let pinCount = 0;
  for (let i = 0; i < n; i++) pinCount += pinned[i]!;
  const pins = new Int32Array(pinCount);
  const free = new Int32Array(n - pinCount);
  for (let i = 0, p = 0, f = 0; i < n; i++) {
    if (pinned[i]) pins[p++] = i;
    else free[f++] = i;
  }
  if (pinCount >= threshold) return lttbAt(s, pins, threshold);

  const slots = threshold - pinCount;
  const keep = pinned.slice(0, n);
  let pinPtr = 0; // first pin not yet passed
  let lastChosen = -1;
  for (let g = 0; g < slots; g++) {
    const lo = Math.floor((g * free.length) / slots);
    const hi = Math.floor(((g + 1) * free.length) / slots);
    const first = free[lo]!;
    const last = free[hi - 1]!;
    while (pinPtr < pins.length && pins[pinPtr]! < first) pinPtr++;
    const pinBefore = pinPtr > 0 ? pins[pinPtr - 1]! : -1;
    const anchor = Math.max(pinBefore, lastChosen);

    // The anchor after the group: a pin between this group and the next, else the next group's average.
    let pinAfter = pinPtr;
    while (pinAfter < pins.length && pins[pinAfter]! < last) pinAfter++;
    const nextLo = hi;
    const nextHi = Math.floor(((g + 2) * free.length) / slots);
    let cT: number;
    let cV: number;
    let haveAfter = true;
    if (pinAfter < pins.length && (nextLo >= free.length || pins[pinAfter]! < free[nextLo]!)) {
      cT = s.t[pins[pinAfter]!]!;
      cV = s.v[pins[pinAfter]!]!;
    } else if (nextLo < free.length) {
      cT = 0;
      cV = 0;
      for (let j = nextLo; j < nextHi; j++) {
        cT += s.t[free[j]!]!;
        cV += s.v[free[j]!]!;
      }
      cT /= nextHi - nextLo;
      cV /= nextHi - nextLo;
    } else {
      haveAfter = false;
      cT = 0;
      cV = 0;
    }

    let best: number;
    if (anchor < 0) best = first;
    else if (!haveAfter) best = last;
    else {
      best = first;
      let bestArea = -1;
      for (let j = lo; j < hi; j++) {
        const area2 = area(s, anchor, free[j]!, cT, cV);
        if (area2 > bestArea) {
          bestArea = area2;
          best = free[j]!;
        }
      }
    }
    keep[best] = 1;
    lastChosen = best;
  }
  let kept = 0;
  for (let i = 0; i < n; i++) kept += keep[i]!;
  const out = new Int32Array(kept);
  for (let i = 0, k = 0; i < n; i++) if (keep[i]) out[k++] = i;
  return out;
}
