/**
 * Bucket widths of the telemetry rollups, finest first. Each width divides the next, and every bucket
 * starts at a multiple of its width since the Unix epoch, so a coarse bucket is exactly the union of
 * the finer buckets inside it. Migration 0003 carries a frozen copy of this list for its backfill.
 */
export const ROLLUP_WIDTHS_MS = [10, 100, 1_000, 10_000, 60_000, 600_000, 3_600_000, 86_400_000] as const;

export const FINEST_WIDTH_US = ROLLUP_WIDTHS_MS[0] * 1000;

/** Start (µs since the epoch) of the bucket of width `widthUs` holding `us`; floors for negative times too. */
export function bucketStart(us: number, widthUs: number): number {
  return Math.floor(us / widthUs) * widthUs;
}

/** First bucket boundary at or after `us`. */
export function bucketCeil(us: number, widthUs: number): number {
  return Math.ceil(us / widthUs) * widthUs;
}
