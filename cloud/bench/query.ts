// npm run bench:query — Query latency over a dataset of 10 million raw points (8 double channels ×
// 1.25 M rows at 20 kHz, loaded through StreamSubmit so that ingest builds the rollups), against a
// server in a child process; and in the same run the baseline: a naive M4 over the raw rows in SQL.
// Each whole-range read is timed in both answer layouts (points, and columns as the console asks), and
// the floors of its shapes are measured beside them: the fixed cost of any Query (a 1 ms window), the
// 2 s window's cheapest grouping in SQL and its rows by binary COPY (one channel, and all eight), and
// eight channels' rollup rows fetched and grouped in SQL.
// Queries go through Sortie's own client (`@sortie/client/node`, over gRPC), which reads a Series from its
// bytes by hand and asks for brotli answers; the eight-channel points shape is timed once more through a
// generic connect-es client (protobuf-es builds an object per point and per Timestamp; gzip answers).
// Options: BENCH_RUNS (50).
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { createGrpcTelemetryClient } from '@sortie/client/node';
import { TelemetryService } from '@sortie/contracts';
import pg from 'pg';
import { wideTableName } from '../src/datasets/wide-table.ts';
import { planQuery } from '../src/telemetry/wide/query-plan.ts';
import { bucketsForBudget } from '../src/telemetry/series/series.ts';
import { createTestDatabase } from '../src/testing/test-database.ts';
import { copyRowsOut, type CopyRow } from '../src/db/copy-out.ts';
import { api, createOrgAndKey, ownCpuMs, percentile, postgresCpuMs, processCpuMs, registerWideDataset, startServerProcess } from './bench-env.ts';
import { loadWideFlight, ROW_COUNT as ROWS, SAMPLE_US, START_US } from './wide-flight.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 50);
const CHANNELS = 8;

/** A row of the eight-channel window's floor walked: its time and every value, folded into nothing. */
function walkEight(row: CopyRow): void {
  row.timestampUs();
  for (let i = 0; i < CHANNELS; i++) row.float8();
}

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

  const grpcUrl = `http://127.0.0.1:${server.grpcPort}`;
  const client = createGrpcTelemetryClient({ grpcUrl, apiKey });
  const generic = createClient(TelemetryService, createGrpcTransport({ baseUrl: grpcUrl }));
  const request = (channelIds: string[], max: number, from?: number, to?: number, columns = false) => ({
    datasetId,
    channelIds,
    maxPointsPerChannel: max,
    columns,
    ...(from !== undefined && { from: { seconds: BigInt(Math.floor(from / 1e6)), nanos: (from % 1e6) * 1000 } }),
    ...(to !== undefined && { to: { seconds: BigInt(Math.floor(to / 1e6)), nanos: (to % 1e6) * 1000 } }),
  });
  const query = (channelIds: string[], max: number, from?: number, to?: number, columns = false) => client.query(request(channelIds, max, from, to, columns));
  await timed(5, () => query(['3'], 2000)); // warm-up
  const databaseName = new URL(database.url).pathname.slice(1);
  cpuProbe = () => ({ server: processCpuMs(server.child.pid!), postgres: postgresCpuMs(databaseName), client: ownCpuMs() });

  const whole = await timed(RUNS, () => query(['3'], 2000));
  const series = whole.last.series[0]!;
  if (series.points.length > 2000 || series.rawPoints !== ROWS) throw new Error(`unexpected answer: ${series.points.length} points, ${series.rawPoints} raw`);
  const eight = await timed(RUNS, () => query(['0', '1', '2', '3', '4', '5', '6', '7'], 2000));
  const eightGeneric = await timed(RUNS, () => generic.query(request(['0', '1', '2', '3', '4', '5', '6', '7'], 2000), { headers: { 'x-api-key': apiKey } }));
  // The same two reads with the answer as columns (times and values as packed arrays), as the console asks.
  const wholeColumns = await timed(RUNS, () => query(['3'], 2000, undefined, undefined, true));
  const eightColumns = await timed(RUNS, () => query(['0', '1', '2', '3', '4', '5', '6', '7'], 2000, undefined, undefined, true));
  const mid = START_US + 20_000_123;
  const window10s = await timed(RUNS, () => query(['3'], 2000, mid, mid + 10_000_000));
  const window2s = await timed(RUNS, () => query(['3'], 2000, mid, mid + 2_000_000));
  const window2sColumns = await timed(RUNS, () => query(['3'], 2000, mid, mid + 2_000_000, true));
  const window2s8 = await timed(RUNS, () => query(['0', '1', '2', '3', '4', '5', '6', '7'], 2000, mid, mid + 2_000_000));
  const window200ms = await timed(RUNS, () => query(['3'], 2000, mid, mid + 200_000));
  // The floor under every Query: a 1 ms window (20 raw points), so little data that what remains is the
  // request itself (authentication, the dataset and its columns, the extent, one bucket statement, gRPC).
  const window1ms = await timed(RUNS, () => query(['3'], 2000, mid, mid + 1_000));

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
  // Floors of the 2 s window in SQL, same rows as the Query reads: the range scan alone, and the cheapest
  // grouping of it into the Query's buckets (count, min and max per bucket: less than an exact M4, which
  // also needs each extreme's time and the first and last values).
  const range = `time >= timestamptz 'epoch' + $1::int8 * interval '1 microsecond' and time < timestamptz 'epoch' + $2::int8 * interval '1 microsecond'`;
  // The plans the server makes for the channel (its density as the extent gives it): the 2 s window's
  // bucket width, and the whole range's rollup rows.
  const density = ROWS / ((ROWS - 1) * SAMPLE_US + 1);
  const rawBucketUs = planQuery(mid, mid + 2_000_000, bucketsForBudget(2000), density).width;
  // Where eight channels' time goes in SQL: the rollup packs the whole-range plan reads for them (one
  // row per bucket, the eight channels' slots side by side), fetched alone.
  const wholePlan = planQuery(START_US, START_US + (ROWS - 1) * SAMPLE_US + 1, bucketsForBudget(2000), density);
  const block = wholePlan.blocks.reduce((a, b) => (b.to - b.from > a.to - a.from ? b : a));
  const packRows = `from telemetry_rollup_packs where dataset_id = $1::uuid and channel_group = 0 and width_ms = $2::int4 and bucket >= $3::int8 and bucket < $4::int8`;
  const fetch8 = await timed(RUNS, () => direct.query(`select sum(length(data)), count(*) ${packRows}`, [datasetId, block.widthMs, block.from, block.to]));
  const scan2s = await timed(RUNS, () => direct.query(`select sum(ch_3) from ${table} where ${range}`, [mid, mid + 2_000_000]));
  const group2s = await timed(RUNS, () =>
    direct.query(
      `select count(g.*) from (select date_bin($3::int8 * interval '1 microsecond', time, timestamptz 'epoch' + $1::int8 * interval '1 microsecond') as b,
              count(ch_3), min(ch_3), max(ch_3), min(time), max(time) from ${table} where ${range} group by 1) g`,
      [mid, mid + 2_000_000, rawBucketUs],
    ),
  );
  // The raw path's own floor: the 2 s window's rows out by binary COPY and walked by the same reader the
  // server uses, grouped into nothing (what any fold of them in the server costs at least).
  const copyPool = new pg.Pool({ connectionString: database.url, max: 1 });
  // COPY takes no parameters: a range of the table's rows with its bounds inlined.
  const timeRange = (from: number, to: number) => `time >= timestamptz 'epoch' + (${from})::int8 * interval '1 microsecond' and time < timestamptz 'epoch' + (${to})::int8 * interval '1 microsecond'`;
  const copyRange = timeRange(mid, mid + 2_000_000);
  const copy2s = await timed(RUNS, () => copyRowsOut(copyPool, `select time, ch_3::float8 from ${table} where ${copyRange} and ch_3 is not null`, (row) => {
    row.timestampUs();
    row.float8();
  }));
  // The same floor for eight channels: the window's rows with all eight values, walked; as one COPY and
  // as two halves at once on two connections (how the server reads a window this size, query-plan.ts
  // RAW_ROWS_PER_SPLIT). The lower of the two is the floor.
  const eightValues = Array.from({ length: CHANNELS }, (_, i) => `ch_${i}::float8`).join(', ');
  const copy2s8 = await timed(RUNS, () => copyRowsOut(copyPool, `select time, ${eightValues} from ${table} where ${copyRange}`, walkEight));
  const halvesPool = new pg.Pool({ connectionString: database.url, max: 2 });
  const half = mid + 1_000_000;
  const copy2s8Halves = await timed(RUNS, () => Promise.all([
    copyRowsOut(halvesPool, `select time, ${eightValues} from ${table} where ${timeRange(mid, half)}`, walkEight),
    copyRowsOut(halvesPool, `select time, ${eightValues} from ${table} where ${timeRange(half, mid + 2_000_000)}`, walkEight),
  ]));
  await halvesPool.end();
  // The eight-channel whole range's own floor: the plan's rollup packs out by binary COPY as the Query
  // reads them (bucket and the eight slots), walked and grouped into nothing.
  const packPool = new pg.Pool({ connectionString: database.url, max: 1 });
  const rollupBlocks = wholePlan.blocks.map((b) => `(width_ms = ${b.widthMs} and bucket >= ${b.from} and bucket < ${b.to})`).join(' or ');
  let rollupRowsRead = 0;
  const copyRollups = await timed(RUNS, async () => {
    rollupRowsRead = await copyRowsOut(
      packPool,
      `select bucket, substring(data from 1 for ${8 * 72}) from telemetry_rollup_packs where dataset_id = '${datasetId}'::uuid and channel_group = 0 and (${rollupBlocks})`,
      (row) => {
        row.int8();
        row.bytea();
      },
    );
  });
  await packPool.end();
  await copyPool.end();
  await direct.end();

  const fmt = (t: { p50: number; p95: number; cpu?: string }) => `p50 ${t.p50.toFixed(1)} ms, p95 ${t.p95.toFixed(1)} ms${t.cpu ? `; ${t.cpu}` : ''}`;
  console.log(`whole range, 1 channel, max 2,000 points : ${fmt(whole)}  (${series.points.length} points, total_raw_points ${whole.last.totalRawPoints}, ${RUNS} runs)`);
  console.log(`whole range, 8 channels, max 2,000 each  : ${fmt(eight)}`);
  console.log(`  the same, a generic connect-es client   : ${fmt(eightGeneric)}`);
  console.log(`  as columns, 1 channel                  : ${fmt(wholeColumns)}`);
  console.log(`  as columns, 8 channels                 : ${fmt(eightColumns)}`);
  console.log(`10 s window, 1 channel (10 ms rollups)   : ${fmt(window10s)}  (${window10s.last.totalRawPoints} raw points)`);
  console.log(`2 s window, 1 channel (raw rows)         : ${fmt(window2s)}  (${window2s.last.totalRawPoints} raw points)`);
  console.log(`  as columns, as the console asks         : ${fmt(window2sColumns)}`);
  console.log(`2 s window, 8 channels (raw rows)        : ${fmt(window2s8)}  (${window2s8.last.totalRawPoints} raw points)`);
  console.log(`200 ms window, 1 channel (raw rows)      : ${fmt(window200ms)}  (${window200ms.last.totalRawPoints} raw points)`);
  console.log(`1 ms window, 1 channel (the fixed cost)  : ${fmt(window1ms)}  (${window1ms.last.totalRawPoints} raw points)`);
  console.log(`baseline: naive M4 over raw rows in SQL  : ${fmt(naive)}  (count(*) alone: ${fmt(count)})`);
  console.log(`floor of the 2 s window in SQL           : range scan ${fmt(scan2s)}; count/min/max per ${rawBucketUs / 1000} ms bucket ${fmt(group2s)}`);
  console.log(`floor of the 2 s window by binary COPY   : rows out and walked, grouped into nothing: ${fmt(copy2s)}`);
  const floor2s8 = copy2s8.p50 <= copy2s8Halves.p50 ? copy2s8 : copy2s8Halves;
  console.log(`floor of the 8-channel 2 s window, COPY : rows out and walked, grouped into nothing: one COPY ${fmt(copy2s8)}; two halves at once ${fmt(copy2s8Halves)}`);
  console.log(`8-channel 2 s window's floor, fixed cost + the faster: ${(window1ms.p50 + floor2s8.p50).toFixed(1)} ms p50`);
  console.log(`8 channels' rollup packs in SQL           : fetched ${fmt(fetch8)} (the widest block, ${block.widthMs} ms)`);
  console.log(`2 s window's floor, fixed cost + grouping: ${(window1ms.p50 + group2s.p50).toFixed(1)} ms p50 (before the exact M4's times and first/last values)`);
  console.log(`8 channels' rollup packs by binary COPY  : ${rollupRowsRead.toLocaleString('en-US')} packs out and walked, grouped into nothing: ${fmt(copyRollups)}`);
  console.log(`8 channels' floor, fixed cost + that COPY: ${(window1ms.p50 + copyRollups.p50).toFixed(1)} ms p50, against 2× one channel (as columns) ${(2 * wholeColumns.p50).toFixed(1)} ms and 50 ms`);
  console.log(`target p50 ≤ 100 ms                      : ${whole.p50 <= 100 ? 'met' : 'MISSED'}`);
  const ratio = eight.p50 / whole.p50;
  console.log(`8 channels / 1 channel                   : ${ratio.toFixed(2)}× (target ≤ 2× and ≤ 50 ms: ${ratio <= 2 && eight.p50 <= 50 ? 'met' : 'MISSED'})`);
  const columnsRatio = eightColumns.p50 / wholeColumns.p50;
  console.log(`  as columns                             : ${columnsRatio.toFixed(2)}× (${columnsRatio <= 2 && eightColumns.p50 <= 50 ? 'met' : 'MISSED'})`);
  console.log(`2 s raw window ≤ 15 ms p50               : ${window2s.p50 <= 15 ? 'met' : 'MISSED'}; every shape against ClickHouse's whole-range p50: run ../shared/peers/clickhouse-ingest.mjs in the same session`);
} finally {
  await server.stop();
  await handle.close();
  await database.drop();
}
