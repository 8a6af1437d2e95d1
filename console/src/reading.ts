// What the plots read off their data, apart from drawing it: the value under the cursor and the step
// of the value ticks. Pure, so the unit tests check it without a browser.

/** Index of the sample nearest `t` in ascending `times`, or -1 when there is none. */
function nearest(times: ArrayLike<number>, t: number): number {
  let lo = 0;
  let hi = times.length - 1;
  if (hi < 0) return -1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (times[mid]! < t) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && t - times[lo - 1]! < times[lo]! - t ? lo - 1 : lo;
}

/**
 * One pane's reading at `t`: its nearest sample, unless the cursor is off the series' ends or in a gap
 * several times its mean spacing (a link loss), where the line would only be interpolating.
 */
export function readingAt(times: ArrayLike<number>, values: ArrayLike<number>, t: number): number | undefined {
  const i = nearest(times, t);
  if (i < 0) return undefined;
  const n = times.length;
  const first = times[0]!;
  const last = times[n - 1]!;
  if (t < first || t > last) return n === 1 && t === first ? values[0] : undefined;
  const spacing = n > 1 ? (last - first) / (n - 1) : 0;
  return Math.abs(times[i]! - t) <= 2.5 * spacing ? values[i] : undefined;
}

/**
 * The value ticks' step for a pane showing `min`…`max` over `dim` pixels: the widest round step (1, 2,
 * 2.5 or 5 × 10ⁿ) that still puts four ticks on it, no closer than `minGap` pixels; undefined for an
 * empty range.
 */
export function valueTickStep(min: number, max: number, dim: number, minGap: number): number | undefined {
  const range = max - min;
  if (!(range > 0) || !(dim > 0)) return undefined;
  const px = dim / range;
  const top = Math.floor(Math.log10(range));
  let chosen: number | undefined;
  let finest: number | undefined;
  for (let exp = top - 2; exp <= top + 1; exp++) {
    for (const m of [1, 2, 2.5, 5]) {
      const step = m * 10 ** exp;
      if (step * px < minGap) continue;
      finest ??= step;
      const ticks = Math.floor(max / step + 1e-9) - Math.ceil(min / step - 1e-9) + 1;
      if (ticks >= 4) chosen = step;
    }
  }
  // A pane too short for four ticks that far apart: as many as fit.
  return chosen ?? finest;
}
