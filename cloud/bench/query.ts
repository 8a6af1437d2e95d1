// npm run bench:query — Query latency over a dataset of 10 million raw points (8 double channels ×
// 1.25 M rows at 20 kHz, loaded through StreamSubmit so that ingest builds the rollups), against a
// server in a child process; and in the same run the baseline: a naive M4 over the raw rows in SQL.
// Options: BENCH_RUNS (50).
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { TelemetryService } from '@sortie/contracts';
import pg from 'pg';
import { wideTableName } from '../src/datasets/wide-table.ts';
import { createTestDatabase } from '../src/testing/test-database.ts';
import { api, createOrgAndKey, ownCpuMs, percentile, postgresCpuMs, processCpuMs, registerWideDataset, startServerProcess } from './bench-env.ts';
import { loadWideFlight, ROW_COUNT as ROWS, SAMPLE_US, START_US } from './wide-flight.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 50);
const CHANNELS = 8;

/** CPU of the server, of Postgres's backends and of this client, so a latency can be read as where it went. */
let cpuProbe: (() => { server: number; postgres: number; client: number }) | undefined;

async function timed<T>(runs: number, fn: () => Promise<T>): Promise<{ p50: number; p95: number; last: T; cpu?: string }> {
  const times: number[] = [];
  let last!: T;
  const before = cpuProbe?.();
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    last = await fn();
    times.push(performance.now() - started);
  }
  const after = cpuProbe?.();
  times.sort((a, b) => a - b);
  const cpu = before && after
    ? `CPU per query: server ${((after.server - before.server) / runs).toFixed(1)}, Postgres ${((after.postgres - before.postgres) / runs).toFixed(1)}, client ${((after.client - before.client) / runs).toFixed(1)} ms`
    : undefined;
  return { p50: percentile(times, 50), p95: percentile(times, 95), last, cpu };
}

const database = await createTestDatabase();
const server = await startServerProcess(database.url);
const { apiKey, handle } = await createOrgAndKey(database.url);
try {
  const experiment = await api(server.httpUrl, apiKey, '/api/experiments/create', { name: 'query bench' });
  const datasetId = await registerWideDataset(server.httpUrl, apiKey, experiment.id, 'ten million', CHANNELS);
  const loadStarted = performance.now();
  await loadWideFlight(server.grpcPort, apiKey, experiment.id, datasetId, CHANNELS);
  const loadSeconds = (performance.now() - loadStarted) / 1000;
  const direct = new pg.Client({ connectionString: database.url });
  direct.on('error', (error) => console.error(`baseline connection lost: ${error.message}`));
  await direct.connect();
  await direct.query('vacuum analyze');
  console.log(`bench:query — ${(ROWS * CHANNELS).toLocaleString('en-US')} raw points (${CHANNELS} channels × ${ROWS.toLocaleString('en-US')} rows at 20 kHz), loaded in ${loadSeconds.toFixed(1)} s through StreamSubmit`);

  const client = createClient(TelemetryService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${server.grpcPort}` }));
  const headers = { 'x-api-key': apiKey };
  const query = (channelIds: string[], max: number, from?: number, to?: number) =>
    client.query(
      {
        datasetId,
        channelIds,
        maxPointsPerChannel: max,
        ...(from !== undefined && { from: { seconds: BigInt(Math.floor(from / 1e6)), nanos: (from % 1e6) * 1000 } }),
        ...(to !== undefined && { to: { seconds: BigInt(Math.floor(to / 1e6)), nanos: (to % 1e6) * 1000 } }),
      },
      { headers },
    );
  await timed(5, () => query(['3'], 2000)); // warm-up
  const databaseName = new URL(database.url).pathname.slice(1);
  cpuProbe = () => ({ server: processCpuMs(server.child.pid!), postgres: postgresCpuMs(databaseName), client: ownCpuMs() });

  const whole = await timed(RUNS, () => query(['3'], 2000));
  const series = whole.last.series[0]!;
  if (series.points.length > 2000 || series.rawPoints !== BigInt(ROWS)) throw new Error(`unexpected answer: ${series.points.length} points, ${series.rawPoints} raw`);
  const eight = await timed(Math.ceil(RUNS / 5), () => query(['0', '1', '2', '3', '4', '5', '6', '7'], 2000));
  const mid = START_US + 20_000_123;
  const window10s = await timed(RUNS, () => query(['3'], 2000, mid, mid + 10_000_000));
  const window2s = await timed(RUNS, () => query(['3'], 2000, mid, mid + 2_000_000));
  const window200ms = await timed(RUNS, () => query(['3'], 2000, mid, mid + 200_000));

  cpuProbe = undefined;
  // Baseline: what the query costs without rollups — a one-pass M4 over every raw row of the channel.
  const table = wideTableName(datasetId);
  const naive = await timed(5, () =>
    direct.query(`
      select floor((t - $1) / $2) as b, count(*), min(array[v, t]), max(array[v, -t]), min(array[t, v]), max(array[t, v])
      from (select round(date_part('epoch', time) * 1e6) as t, ch_3 as v from ${table} where ch_3 is not null) raw
      group by 1`, [START_US, Math.ceil((ROWS * SAMPLE_US) / 999)]),
  );
  const count = await timed(5, () => direct.query(`select count(ch_3) from ${table}`));
  await direct.end();

  const fmt = (t: { p50: number; p95: number; cpu?: string }) => `p50 ${t.p50.toFixed(1)} ms, p95 ${t.p95.toFixed(1)} ms${t.cpu ? `; ${t.cpu}` : ''}`;
  console.log(`whole range, 1 channel, max 2,000 points : ${fmt(whole)}  (${series.points.length} points, total_raw_points ${whole.last.totalRawPoints}, ${RUNS} runs)`);
  console.log(`whole range, 8 channels, max 2,000 each  : ${fmt(eight)}`);
  console.log(`10 s window, 1 channel (10 ms rollups)   : ${fmt(window10s)}  (${window10s.last.totalRawPoints} raw points)`);
  console.log(`2 s window, 1 channel (raw rows)         : ${fmt(window2s)}  (${window2s.last.totalRawPoints} raw points)`);
  console.log(`200 ms window, 1 channel (raw rows)      : ${fmt(window200ms)}  (${window200ms.last.totalRawPoints} raw points)`);
  console.log(`baseline: naive M4 over raw rows in SQL  : ${fmt(naive)}  (count(*) alone: ${fmt(count)})`);
  console.log(`target p50 ≤ 100 ms                      : ${whole.p50 <= 100 ? 'met' : 'MISSED'}`);
  const ratio = eight.p50 / whole.p50;
  console.log(`8 channels / 1 channel                   : ${ratio.toFixed(2)}× (target ≤ 2× and ≤ 50 ms: ${ratio <= 2 && eight.p50 <= 50 ? 'met' : 'MISSED'})`);
  console.log(`2 s raw window ≤ 15 ms p50               : ${window2s.p50 <= 15 ? 'met' : 'MISSED'}; every shape against ClickHouse's whole-range p50: run ../shared/peers/clickhouse-ingest.mjs in the same session`);
} finally {
  await server.stop();
  await handle.close();
  await database.drop();
}
