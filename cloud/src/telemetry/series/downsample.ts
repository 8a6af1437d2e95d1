import { lttbWithPins, type Sample } from './lttb.ts';
import { compareF8, type M4 } from './m4.ts';

/**
 * Turn per-bucket M4 aggregates (time-ordered, one per non-empty bucket) into at most `budget` samples.
 *
 * What is kept, in priority order:
 *  1. every bucket's minimum and maximum sample (pinned) — always, when budget ≥ 2 × buckets;
 *  2. the first and the last sample of the whole series, when room remains;
 *  3. the buckets' first and last samples, chosen by LTTB to fill the remaining budget exactly.
 * A budget of 1 returns the series' maximum sample. Every returned sample is a real one (its exact time
 * and value); samples appear once even when one is, say, both a bucket's first and its minimum.
 */
export function samplesFromBuckets(buckets: readonly M4[], budget: number): Sample[] {
  if (buckets.length === 0 || budget <= 0) return [];
  if (budget === 1) {
    let best = buckets[0]!;
    for (const b of buckets) if (compareF8(b.maxV, best.maxV) > 0) best = b;
    return [{ t: best.maxT, v: best.maxV }];
  }

  const points: Sample[] = [];
  const pinned: boolean[] = [];
  const quad: Array<[number, number, boolean]> = [];
  for (const b of buckets) {
    quad.length = 0;
    quad.push([b.firstT, b.firstV, false], [b.minT, b.minV, true], [b.maxT, b.maxV, true], [b.lastT, b.lastV, false]);
    quad.sort((x, y) => x[0] - y[0]);
    for (const [t, v, pin] of quad) {
      const prev = points.length - 1;
      if (prev >= 0 && points[prev]!.t === t) {
        pinned[prev] = pinned[prev]! || pin;
        continue;
      }
      points.push({ t, v });
      pinned.push(pin);
    }
  }
  let pins = pinned.filter(Boolean).length;
  const lastIndex = points.length - 1;
  for (const i of [0, lastIndex]) {
    if (!pinned[i] && pins < budget) {
      pinned[i] = true;
      pins++;
    }
  }
  return lttbWithPins(points, pinned, budget);
}
