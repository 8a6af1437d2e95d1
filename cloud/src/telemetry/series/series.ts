import type { Sample } from './lttb.ts';

/** Points per channel when the request leaves the budget at 0 (the proto's "server default"). */
export const DEFAULT_MAX_POINTS = 1000;
/** Larger budgets are clamped: the answer is still "at most max_points_per_channel". */
export const MAX_POINTS_PER_CHANNEL = 100_000;
export const MAX_CHANNELS_PER_QUERY = 256;
/**
 * Reads of one Query run at once (a narrow channel each; a wide Query's channel groups and raw rows), each
 * on its own pooled connection. A few keep a many-channel Query fast while leaving the pool (20) to every
 * other request; all 256 at once would take every connection.
 */
export const READS_PER_QUERY = 4;

/** What Query answers for one channel, whatever the storage shape: the budget's samples and the exact raw count. */
export interface SeriesResult {
  channelId: string;
  samples: Sample[];
  rawPoints: number;
}

/**
 * Buckets for a budget of `maxPoints` samples: two pinned samples (minimum and maximum) per bucket,
 * plus the series' first and last sample, fit the budget exactly.
 */
export function bucketsForBudget(maxPoints: number): number {
  return Math.max(1, Math.floor((maxPoints - 2) / 2));
}
