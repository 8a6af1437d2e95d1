import type { TelemetryPoint } from '@sortie/contracts';
import type { AppContext } from '../../platform/context.ts';
import type { DatasetRow } from '../../db/schema.ts';

/**
 * What every storage shape's writer is to ingest. This file imports none of them: the writers
 * (wide-sink.ts, narrow/narrow-sink.ts) and the metrics wrapper (ingest-metrics.ts) depend on it, and
 * the registry choosing between them (sinks.ts) sits above them all.
 */

/** Totals a sink reports; `accepted = written + duplicates + ignored`. */
export interface SinkCounts {
  accepted: number;
  written: number;
  duplicates: number;
  ignored: number;
  ignoredChannelIds: string[];
}

/** Points as they arrive: decoded messages (JSON requests) or still encoded (binary requests). */
export type PointSource =
  | { points: readonly TelemetryPoint[] }
  | { encodedBatch: Uint8Array }
  | { encodedPoints: readonly Uint8Array[] };

/**
 * Where the points of one Submit or StreamSubmit go. A message's points are staged (validated and
 * pivoted, nothing written) and then flushed in one bulk write. `stage` stages every point of the
 * message or, throwing, none; a message of several points must be staged with nothing pending.
 */
export interface TelemetrySink {
  stage(source: PointSource, locate: (index: number) => string): Promise<void>;
  /** Points staged and not yet written. */
  readonly staged: number;
  /**
   * Writes what is staged. The sink takes the staged points at once, so the caller may stage the next
   * message while a flush runs, and may flush again before the last flush has settled: writes take
   * turns in flush order, and one queued behind a write that fails fails with that error, unwritten.
   * (StreamSubmit decodes one message while the one before it is written.)
   */
  flush(): Promise<{ points: number; rows: number }>;
  counts(): SinkCounts;
}

/** The counts as the Submit / StreamSubmit responses carry them (uint64 fields). */
export function countsResponse(counts: SinkCounts) {
  return {
    accepted: BigInt(counts.accepted),
    written: BigInt(counts.written),
    ignored: BigInt(counts.ignored),
    ignoredChannelIds: counts.ignoredChannelIds,
  };
}

export type SinkFactory = (ctx: AppContext, dataset: DatasetRow) => Promise<TelemetrySink>;
