import type { SinkCounts, TelemetrySink } from './sink.ts';
import type { IngestShape, IngestTransport, Metrics } from '../../platform/metrics.ts';

/**
 * A sink that reports what it wrote after every flush (one bulk write: one batch, and how long it took
 * to commit; and, to live followers, that the dataset changed) and whatever else it counted (ignored points, staged without a write) when its totals are
 * read at the end of a call. Reporting differences of the sink's running totals keeps the hot path at
 * one update per write.
 */
export function countedSink(
  sink: TelemetrySink,
  metrics: Metrics,
  transport: IngestTransport,
  shape: IngestShape,
  /** Called after a flush that wrote anything has committed (the live bus's announcement). */
  committed: () => void = () => {},
): TelemetrySink {
  let reported = { written: 0, duplicates: 0, ignored: 0 };
  const report = (counts: SinkCounts, batches: number) => {
    metrics.ingested(
      transport,
      shape,
      { written: counts.written - reported.written, duplicates: counts.duplicates - reported.duplicates, ignored: counts.ignored - reported.ignored },
      batches,
    );
    reported = { written: counts.written, duplicates: counts.duplicates, ignored: counts.ignored };
  };
  return {
    get staged() {
      return sink.staged;
    },
    stage: (source, locate) => sink.stage(source, locate),
    flush: async () => {
      const started = performance.now();
      const result = await sink.flush();
      report(sink.counts(), result.points > 0 ? 1 : 0);
      if (result.points > 0) {
        metrics.ingestBatchWritten(transport, shape, (performance.now() - started) / 1000);
        committed();
      }
      return result;
    },
    counts: () => {
      const counts = sink.counts();
      report(counts, 0);
      return counts;
    },
  };
}
