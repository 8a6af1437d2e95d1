import http2 from 'node:http2';
import { BENCH_START_US } from './bench-env.ts';
import { encodeBatchFrame, encodeHeaderFrame, openStreamSubmit, type BenchRows } from './grpc-wire.ts';

/**
 * The benches' long wide flight: rows at 20 kHz from START_US, each channel a slow wave with noise and
 * rare spikes a chart must not lose, loaded through StreamSubmit (so ingest builds the rollups as it
 * would for a real flight). bench:query, bench:console and bench:export read the same data.
 */
export const ROW_COUNT = 1_250_000;
export const SAMPLE_US = 50;
export const START_US = BENCH_START_US;
const BATCH = 1000;
/** Concurrent StreamSubmit streams, each its own stretch of time. */
const STREAMS = 5;

/** Batch `b` (rows b·1000 … b·1000+999, fewer in the last batch of `rowCount`) of `channels` channels. */
export function wideRows(b: number, channels: number, rowCount = ROW_COUNT): BenchRows {
  const n = Math.min(BATCH, rowCount - b * BATCH);
  const timesUs = new Float64Array(n);
  const values = Array.from({ length: channels }, () => new Float64Array(n));
  for (let r = 0; r < n; r++) {
    const i = b * BATCH + r;
    timesUs[r] = START_US + i * SAMPLE_US;
    for (let c = 0; c < channels; c++) values[c]![r] = Math.sin(i / 40_000 + c) * 100 + ((i * 7919 + c) % 101) / 10 + (i % 333_331 === 7 ? 900 : 0);
  }
  return { timesUs, values };
}

/** Write `rowCount` rows of `channels` channels into the wide dataset over the server's gRPC port. */
export async function loadWideFlight(grpcPort: number, apiKey: string, experimentId: string, datasetId: string, channels: number, rowCount = ROW_COUNT): Promise<void> {
  const session = http2.connect(`http://127.0.0.1:${grpcPort}`);
  const batches = Math.ceil(rowCount / BATCH);
  const perStream = Math.ceil(batches / STREAMS);
  try {
    await Promise.all(
      Array.from({ length: STREAMS }, async (_, s) => {
        const stream = openStreamSubmit(session, apiKey);
        await stream.write(encodeHeaderFrame(experimentId, datasetId));
        for (let b = s * perStream; b < Math.min(batches, (s + 1) * perStream); b++) await stream.write(encodeBatchFrame(wideRows(b, channels, rowCount)));
        await stream.finish();
      }),
    );
  } finally {
    session.close();
  }
}
