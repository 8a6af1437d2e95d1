/** A sample of a series: time in µs since the epoch, value as a double. */
export interface Sample {
  t: number;
  v: number;
}

function area(a: Sample, b: Sample, cT: number, cV: number): number {
  // Twice the triangle's area; only comparisons matter. Times are shifted to `a` to keep the products small.
  return Math.abs((b.t - a.t) * (cV - a.v) - (cT - a.t) * (b.v - a.v));
}

/**
 * Largest-Triangle-Three-Buckets (Steinarsson, 2013): reduce `points` (time-ordered) to `threshold`
 * points, always keeping the first and the last, and from each of the `threshold - 2` equal-count
 * buckets between them the point forming the largest triangle with the previously kept point and the
 * average of the next bucket.
 */
export function lttb(points: readonly Sample[], threshold: number): Sample[] {
  const n = points.length;
  if (threshold >= n || n === 0) return points.slice();
  if (threshold <= 0) return [];
  if (threshold === 1) return [points[0]!];
  if (threshold === 2) return [points[0]!, points[n - 1]!];

  const out: Sample[] = [points[0]!];
  const every = (n - 2) / (threshold - 2);
  let a = 0;
  for (let i = 0; i < threshold - 2; i++) {
    const avgStart = Math.floor((i + 1) * every) + 1;
    const avgEnd = Math.min(Math.floor((i + 2) * every) + 1, n);
    let avgT = 0;
    let avgV = 0;
    for (let j = avgStart; j < avgEnd; j++) {
      avgT += points[j]!.t;
      avgV += points[j]!.v;
    }
    const avgLen = avgEnd - avgStart;
    avgT /= avgLen;
    avgV /= avgLen;

    const from = Math.floor(i * every) + 1;
    const to = Math.floor((i + 1) * every) + 1;
    let best = from;
    let bestArea = -1;
    for (let j = from; j < to; j++) {
      const s = area(points[a]!, points[j]!, avgT, avgV);
      if (s > bestArea) {
        bestArea = s;
        best = j;
      }
    }
    out.push(points[best]!);
    a = best;
  }
  out.push(points[n - 1]!);
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
 * reduced with plain LTTB.
 */
export function lttbWithPins(points: readonly Sample[], pinned: readonly boolean[], threshold: number): Sample[] {
  const n = points.length;
  if (threshold >= n) return points.slice();
  if (threshold <= 0) return [];
  const pins: number[] = [];
  const free: number[] = [];
  for (let i = 0; i < n; i++) (pinned[i] ? pins : free).push(i);
  if (pins.length >= threshold) return lttb(pins.map((i) => points[i]!), threshold);

  const slots = threshold - pins.length;
  const keep = pinned.slice(0, n).map(Boolean);
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
      cT = points[pins[pinAfter]!]!.t;
      cV = points[pins[pinAfter]!]!.v;
    } else if (nextLo < free.length) {
      cT = 0;
      cV = 0;
      for (let j = nextLo; j < nextHi; j++) {
        cT += points[free[j]!]!.t;
        cV += points[free[j]!]!.v;
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
        const s = area(points[anchor]!, points[free[j]!]!, cT, cV);
        if (s > bestArea) {
          bestArea = s;
          best = free[j]!;
        }
      }
    }
    keep[best] = true;
    lastChosen = best;
  }
  const out: Sample[] = [];
  for (let i = 0; i < n; i++) if (keep[i]) out.push(points[i]!);
  return out;
}
