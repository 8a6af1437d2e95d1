import type { Sample, SampleColumns } from './lttb.ts';

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

/**
 * What Query answers for one channel, whatever the storage shape: the budget's samples and the exact raw
 * count. The samples are columns (times in µs, values), as the answer is written: not an object per
 * sample. Eight channels' 16,000 sample objects were alive across the Query's awaits, so V8 learned to
 * allocate them straight into the old generation, where they died: a Mark-Compact every three or four
 * eight-channel Queries (docs/PERFORMANCE.md).
 */
export interface SeriesResult {
  channelId: string;
  samples: SampleColumns;
  rawPoints: number;
}

/** Samples given one by one (rows of SQL, a live follower's few), as columns. */
export function sampleColumnsOf(samples: readonly Sample[]): SampleColumns {
  const t = new Float64Array(samples.length);
  const v = new Float64Array(samples.length);
  for (let i = 0; i < samples.length; i++) {
    t[i] = samples[i]!.t;
    v[i] = samples[i]!.v;
  }
  return { t, v };
}

/** Columns as a Sample per entry: for tests and the few readers that want objects, not for an answer's path. */
export function samplesOf(columns: SampleColumns): Sample[] {
  return Array.from(columns.t, (t, i) => ({ t, v: columns.v[i]! }));
}

/**
 * Buckets for a budget of `maxPoints` samples: two pinned samples (minimum and maximum) per bucket,
 * plus the series' first and last sample, fit the budget exactly.
 */
export function bucketsForBudget(maxPoints: number): number {
  return Math.max(1, Math.floor((maxPoints - 2) / 2));
}
