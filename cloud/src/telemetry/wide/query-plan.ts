import { ROLLUP_WIDTHS_MS } from './rollup-levels.ts';

/**
 * How a query range is read. The range [start, end) is cut into equal buckets of `width` µs starting
 * at `origin`. When a rollup width fits, `width` is a multiple of it and `origin` a multiple of it, so
 * every rollup bucket lies inside exactly one query bucket; the range is then covered by rollup rows
 * of that width in the middle, finer widths towards the edges, and raw rows only for the remnants
 * narrower than the finest width (at most one on each side).
 */
export interface QueryPlan {
  origin: number;
  width: number;
  /** Buckets between origin and end; never more than the requested maximum. */
  bucketCount: number;
  /** The rollup width whose grid the buckets follow; null when the range is read from raw rows only. */
  rollupWidthMs: number | null;
  /** Rollup rows of width `widthMs` whose bucket start lies in [from, to). */
  blocks: Array<{ widthMs: number; from: number; to: number }>;
  /** Raw rows with time in [from, to). */
  raw: Array<{ from: number; to: number }>;
}

/**
 * A rollup width is used only when each query bucket spans at least this many of its buckets, so that
 * rounding the bucket width up to a multiple of it costs at most 1/4 of the resolution.
 */
export const ROLLUP_BUCKETS_PER_QUERY_BUCKET = 4;

/** Ranges estimated to hold at most this many raw samples are read raw, at full resolution. */
export const MAX_RAW_SAMPLES = 50_000;

/**
 * A raw range estimated to hold at least this many rows is read by two COPYs at once, each half of it.
 * PostgreSQL sends a statement's rows from one backend, at ~0.5 µs a row on the 2-core machine (a 2 s
 * window of 40,000 rows took it ~21 ms to COPY to /dev/null, its scan alone ~9 ms): one read left the
 * other core idle while the server waited for rows. Two halves on two backends took the 2 s window's p50
 * (as columns) from 33–36 to 27–29 ms there, eight channels' from ~105 to 94–98 ms (docs/PERFORMANCE.md).
 * Four parts did no better than two on two cores. Below it, a second statement's fixed cost is not paid back.
 */
export const RAW_ROWS_PER_SPLIT = 10_000;

/**
 * The plan's raw ranges as the reads that fetch them: a range holding `RAW_ROWS_PER_SPLIT` rows or more
 * (by the channel's density) cut in two at a query bucket boundary, so that no bucket is folded by both.
 */
export function rawReadRanges(plan: QueryPlan, density: number): Array<Array<{ from: number; to: number }>> {
  const whole: Array<{ from: number; to: number }> = [];
  const halves: Array<Array<{ from: number; to: number }>> = [];
  for (const range of plan.raw) {
    const middle = plan.origin + Math.round(((range.from + range.to) / 2 - plan.origin) / plan.width) * plan.width;
    if ((range.to - range.from) * density < RAW_ROWS_PER_SPLIT || middle <= range.from || middle >= range.to) whole.push(range);
    else halves.push([{ from: range.from, to: middle }], [{ from: middle, to: range.to }]);
  }
  return whole.length > 0 ? [whole, ...halves] : halves;
}

/**
 * @param density estimated samples per µs of the channel (its count over its extent); decides
 *   whether a range too narrow for the 4× rule is cheap enough to read raw.
 */
export function planQuery(
  start: number,
  end: number,
  maxBuckets: number,
  density = 0,
  widthsMs: readonly number[] = ROLLUP_WIDTHS_MS,
): QueryPlan {
  if (!(end > start)) throw new RangeError('planQuery needs end > start');
  const buckets = Math.max(1, Math.floor(maxBuckets));
  const span = end - start;
  const ideal = span / buckets;

  let level = -1;
  for (let i = widthsMs.length - 1; i >= 0; i--) {
    if (widthsMs[i]! * 1000 * ROLLUP_BUCKETS_PER_QUERY_BUCKET <= ideal) {
      level = i;
      break;
    }
  }
  // Too narrow for the 4× rule: raw rows when they are few; otherwise the finest rollups, trading
  // resolution (fewer, wider buckets than asked for) for not scanning a dense range sample by sample.
  if (level < 0 && widthsMs.length > 0 && span * density > MAX_RAW_SAMPLES) level = 0;

  if (level < 0) {
    const width = Math.max(1, Math.ceil(span / buckets));
    return { origin: start, width, bucketCount: Math.ceil(span / width), rollupWidthMs: null, blocks: [], raw: [{ from: start, to: end }] };
  }

  const unit = widthsMs[level]! * 1000;
  const origin = Math.floor(start / unit) * unit;
  const width = Math.ceil((end - origin) / buckets / unit) * unit;
  const plan: QueryPlan = { origin, width, bucketCount: Math.ceil((end - origin) / width), rollupWidthMs: widthsMs[level]!, blocks: [], raw: [] };
  cover(plan, widthsMs, start, end, level);
  plan.blocks.sort((a, b) => a.from - b.from);
  plan.raw.sort((a, b) => a.from - b.from);
  return plan;
}

/** Cover [s, e) with the widest aligned rollup buckets available, down to raw rows. */
function cover(plan: QueryPlan, widthsMs: readonly number[], s: number, e: number, level: number): void {
  if (s >= e) return;
  if (level < 0) {
    plan.raw.push({ from: s, to: e });
    return;
  }
  const unit = widthsMs[level]! * 1000;
  const a = Math.ceil(s / unit) * unit;
  const b = Math.floor(e / unit) * unit;
  if (a < b) {
    plan.blocks.push({ widthMs: widthsMs[level]!, from: a, to: b });
    cover(plan, widthsMs, s, a, level - 1);
    cover(plan, widthsMs, b, e, level - 1);
  } else {
    cover(plan, widthsMs, s, e, level - 1);
  }
}
