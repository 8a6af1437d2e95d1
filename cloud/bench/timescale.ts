// npm run bench:timescale — the TimescaleDB path, measured in one run next to the plain one:
//   1. Storage before and after compression (compress_chunk on every chunk), on the TimescaleDB server:
//      - wide: the benches' flight (8 noisy double channels, 1.25 M rows at 20 kHz, bench:query's data),
//        Postgres bytes per stored point, the table alone and with the dataset's rollups;
//      - MAVLink: the SITL capture (23,894 frames) and the 430,000-frame bench flight (bench:mavlink's
//        Query flight), Postgres bytes per stored frame (message tables, their sessions and table list).
//   2. Query p50 on that data before and after compression: bench:query's shapes on the wide flight,
//      mavlink.ATTITUDE.roll → 2,000 points over the 430,000-frame flight.
//   3. bench:ingest and bench:query as they are, in child processes, once against the plain server
//      (SORTIE_TEST_DATABASE_URL, 127.0.0.1:5432) and once against the TimescaleDB one
//      (SORTIE_TEST_TIMESCALE_URL, 127.0.0.1:5433), their figures side by side.
// The TimescaleDB server comes from `bash scripts/timescale-cluster.sh`. Options: BENCH_RUNS (30 Query
// calls per shape), BENCH_QUERY_FRAMES (430,000), BENCH_SUBBENCHES=0 skips part 3, BENCH_SECONDS
// (bench:ingest's seconds, 20 here).
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { TelemetryService } from '@sortie/contracts';
import pg from 'pg';
import { wideTableName } from '../src/datasets/wide-table.ts';
import { fixtureFrames, framePoint, type PointInit } from '../src/telemetry/narrow/fixture-frames.ts';
import { replayFrames } from '../src/telemetry/narrow/long-flight.ts';
import { createTestDatabase, TEST_ADMIN_URL } from '../src/testing/test-database.ts';
import { requireTimescaleServer } from '../src/testing/timescale-server.ts';
import { api, createOrgAndKey, percentile, registerWideDataset, startServerProcess } from './bench-env.ts';
import { loadWideFlight, ROW_COUNT, START_US } from './wide-flight.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 30);
const QUERY_FRAMES = Number(process.env.BENCH_QUERY_FRAMES ?? 430_000);
const SUBBENCHES = process.env.BENCH_SUBBENCHES !== '0';
const CHANNELS = 8;
const root = resolve(import.meta.dirname, '../..');
const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function p50Of(runs: number, fn: () => Promise<unknown>): Promise<number> {
  await fn(); // warm-up: plans, caches
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    await fn();
    times.push(performance.now() - started);
  }
  return percentile(times.sort((a, b) => a - b), 50);
}

const { adminUrl } = await requireTimescaleServer();
const database = await createTestDatabase(adminUrl);
const server = await startServerProcess(database.url);
const { apiKey, handle } = await createOrgAndKey(database.url);
const admin = new pg.Client({ connectionString: database.url });
await admin.connect();

/** Bytes of a hypertable, compressed chunks, their TOAST and indexes included. */
const hypertableBytes = async (table: string) => Number((await admin.query<{ b: string }>(`select hypertable_size('"${table}"')::text as b`)).rows[0]!.b);
const relationBytes = async (relation: string) => Number((await admin.query<{ b: string }>(`select pg_total_relation_size('${relation}')::text as b`)).rows[0]!.b);

/** Every chunk of the tables compressed; the seconds it took. */
async function compressAll(tables: readonly string[]): Promise<number> {
  const started = performance.now();
  for (const table of tables) await admin.query(`select compress_chunk(c, if_not_compressed => true) from show_chunks('"${table}"') c`);
  return (performance.now() - started) / 1000;
}

/** The compression policy of a table made by registration would compress the bench's data whenever it runs: paused. */
async function pausePolicies(tables: readonly string[]): Promise<void> {
  await admin.query(`select alter_job(job_id, scheduled => false) from timescaledb_information.jobs where proc_name = 'policy_compression' and hypertable_name = any($1::text[])`, [tables]);
}

const client = createClient(TelemetryService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${server.grpcPort}` }));
const headers = { 'x-api-key': apiKey };
const ts = (us: number) => ({ seconds: BigInt(Math.floor(us / 1e6)), nanos: (us % 1e6) * 1000 });

async function streamFrames(experimentId: string, datasetId: string, points: readonly PointInit[]): Promise<void> {
  async function* messages() {
    yield { message: { case: 'header' as const, value: { experimentId, datasetId, format: 'mavlink-raw-v1' } } };
    for (let i = 0; i < points.length; i += 500) yield { message: { case: 'batch' as const, value: { points: points.slice(i, i + 500) } } };
  }
  const response = await client.streamSubmit(messages(), { headers });
  if (Number(response.written) !== points.length) throw new Error(`streamed ${points.length} frames, ${response.written} written`);
}

async function narrowTablesOf(datasetId: string): Promise<string[]> {
  return (await admin.query<{ table_name: string }>('select table_name from narrow_message_tables where dataset_id = $1', [datasetId])).rows.map((r) => r.table_name);
}

/** Bytes of a MAVLink dataset as bench:mavlink counts them: its message tables plus the sessions and table list. */
async function narrowBytes(datasetId: string): Promise<number> {
  let bytes = 0;
  for (const table of await narrowTablesOf(datasetId)) bytes += await hypertableBytes(table);
  for (const bookkeeping of ['narrow_boot_sessions', 'narrow_message_tables', 'narrow_datasets']) bytes += await relationBytes(bookkeeping);
  return bytes;
}

interface SubResult {
  lines: string[];
  figure(pattern: RegExp): number;
}

/** Run another bench as it is, with its test databases on the server at `url`. */
async function runBench(script: string, url: string, env: Record<string, string> = {}): Promise<SubResult> {
  const child = spawn(process.execPath, [resolve(root, 'cloud/bench', script)], { env: { ...process.env, ...env, SORTIE_TEST_DATABASE_URL: url }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  if (code !== 0) throw new Error(`${script} against ${url} exited with ${code}:\n${out}`);
  const lines = out.trim().split('\n');
  return {
    lines,
    figure: (pattern) => {
      const m = pattern.exec(out);
      if (!m) throw new Error(`${script}: no ${pattern} in its output`);
      return Number(m[1]!.replaceAll(',', ''));
    },
  };
}

try {
  const experiment = await api(server.httpUrl, apiKey, '/api/experiments/create', { name: 'timescale bench' });

  // ---- Wide: the benches' flight ----
  const wideId = await registerWideDataset(server.httpUrl, apiKey, experiment.id, 'wide flight', CHANNELS);
  const wideTable = wideTableName(wideId);
  await pausePolicies([wideTable]);
  await loadWideFlight(server.grpcPort, apiKey, experiment.id, wideId, CHANNELS);
  await admin.query('vacuum analyze');
  const points = ROW_COUNT * CHANNELS;
  const wideQuery = (channelIds: string[], from?: number, to?: number) => () =>
    client.query({ datasetId: wideId, channelIds, maxPointsPerChannel: 2000, ...(from !== undefined && { from: ts(from) }), ...(to !== undefined && { to: ts(to) }) }, { headers });
  const mid = START_US + 20_000_123;
  const shapes: Array<[string, () => Promise<unknown>, number]> = [
    ['whole range, 1 channel → 2,000', wideQuery(['3']), RUNS],
    ['whole range, 8 channels → 2,000 each', wideQuery(['0', '1', '2', '3', '4', '5', '6', '7']), Math.ceil(RUNS / 3)],
    ['10 s window (10 ms rollups)', wideQuery(['3'], mid, mid + 10_000_000), RUNS],
    ['2 s window (raw rows)', wideQuery(['3'], mid, mid + 2_000_000), RUNS],
    ['200 ms window (raw rows)', wideQuery(['3'], mid, mid + 200_000), RUNS],
  ];
  const wideBefore = { table: await hypertableBytes(wideTable), rollups: await relationBytes('telemetry_rollup_packs') };
  const queryBefore: number[] = [];
  for (const [, fn, runs] of shapes) queryBefore.push(await p50Of(runs, fn));

  // ---- MAVLink: the SITL capture, and the long flight ----
  const tlog = fixtureFrames('arduplane-sitl-vtol.tlog');
  const sitlId = (await api(server.httpUrl, apiKey, '/api/streams/register', { experimentId: experiment.id, datasetName: 'sitl', storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' })).datasetId as string;
  await streamFrames(experiment.id, sitlId, tlog.map((f, i) => framePoint(f.frame.bytes, f.receivedUs, i + 1)));
  const longId = (await api(server.httpUrl, apiKey, '/api/streams/register', { experimentId: experiment.id, datasetName: 'long flight', storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' })).datasetId as string;
  const spanUs = tlog[tlog.length - 1]!.receivedUs - tlog[0]!.receivedUs + 1_000_000;
  for (let replay = 0, sent = 0; sent < QUERY_FRAMES; replay++) {
    const frames = replayFrames(tlog, replay, spanUs).slice(0, QUERY_FRAMES - sent);
    await streamFrames(experiment.id, longId, frames.map((f, i) => framePoint(f.bytes, f.receivedUs, sent + i + 1)));
    sent += frames.length;
  }
  await admin.query('vacuum analyze');
  const narrowBefore = { sitl: await narrowBytes(sitlId), long: await narrowBytes(longId) };
  const roll = () => client.query({ datasetId: longId, channelIds: ['mavlink.ATTITUDE.roll'], maxPointsPerChannel: 2000 }, { headers });
  const rollBefore = await p50Of(RUNS, roll);

  // ---- Compress everything, then the same figures ----
  const narrowTables = [...(await narrowTablesOf(sitlId)), ...(await narrowTablesOf(longId))];
  const compressSeconds = await compressAll([wideTable, ...narrowTables]);
  const chunks = await admin.query<{ n: number; c: number }>(
    `select count(*)::int as n, count(*) filter (where is_compressed)::int as c from timescaledb_information.chunks where hypertable_name = any($1::text[])`,
    [[wideTable, ...narrowTables]],
  );
  const wideAfter = { table: await hypertableBytes(wideTable), rollups: await relationBytes('telemetry_rollup_packs') };
  const narrowAfter = { sitl: await narrowBytes(sitlId), long: await narrowBytes(longId) };
  const queryAfter: number[] = [];
  for (const [, fn, runs] of shapes) queryAfter.push(await p50Of(runs, fn));
  const rollAfter = await p50Of(RUNS, roll);
  // Then as autovacuum leaves it in its own time (a compressed chunk of under 50 batches it never
  // analyses): statistics of the compressed chunks, so the planner knows their size.
  for (const table of [wideTable, ...narrowTables]) await admin.query(`analyze "${table}"`);
  const queryAnalyzed: number[] = [];
  for (const [, fn, runs] of shapes) queryAnalyzed.push(await p50Of(runs, fn));
  const rollAnalyzed = await p50Of(RUNS, roll);

  const ratio = (after: number, before: number) => `${((after / before) * 100).toFixed(0)} %`;
  console.log(`bench:timescale — TimescaleDB ${(await admin.query<{ v: string }>("select extversion as v from pg_extension where extname = 'timescaledb'")).rows[0]!.v} at ${adminUrl}; ${chunks.rows[0]!.c} of ${chunks.rows[0]!.n} chunks compressed in ${compressSeconds.toFixed(1)} s (compress_chunk)`);
  console.log('storage, Postgres bytes            uncompressed    compressed   after/before');
  const perPoint = (b: number) => fmt(b / points, 2);
  console.log(`  wide, per point (table)          ${perPoint(wideBefore.table).padStart(12)}  ${perPoint(wideAfter.table).padStart(12)}   ${ratio(wideAfter.table, wideBefore.table)}`);
  console.log(
    `  wide, per point (with rollups)   ${perPoint(wideBefore.table + wideBefore.rollups).padStart(12)}  ${perPoint(wideAfter.table + wideAfter.rollups).padStart(12)}   ${ratio(wideAfter.table + wideAfter.rollups, wideBefore.table + wideBefore.rollups)}   (${fmt(points)} points; rollups ${fmt(wideBefore.rollups / points, 2)} B/point, a plain table, not compressed)`,
  );
  console.log(`  MAVLink SITL, per frame          ${fmt(narrowBefore.sitl / tlog.length, 1).padStart(12)}  ${fmt(narrowAfter.sitl / tlog.length, 1).padStart(12)}   ${ratio(narrowAfter.sitl, narrowBefore.sitl)}   (${fmt(tlog.length)} frames)`);
  console.log(`  MAVLink long flight, per frame   ${fmt(narrowBefore.long / QUERY_FRAMES, 1).padStart(12)}  ${fmt(narrowAfter.long / QUERY_FRAMES, 1).padStart(12)}   ${ratio(narrowAfter.long, narrowBefore.long)}   (${fmt(QUERY_FRAMES)} frames)`);
  console.log('Query p50, ms                                uncompressed  compressed  after/before  compressed+analyze  after/before');
  const row = (name: string, before: number, after: number, analyzed: number) =>
    console.log(`  ${name.padEnd(42)}${fmt(before, 1).padStart(8)}  ${fmt(after, 1).padStart(10)}  ${`${(after / before).toFixed(2)}×`.padStart(12)}  ${fmt(analyzed, 1).padStart(18)}  ${`${(analyzed / before).toFixed(2)}×`.padStart(12)}`);
  shapes.forEach(([name], i) => row(`wide: ${name}`, queryBefore[i]!, queryAfter[i]!, queryAnalyzed[i]!));
  row(`MAVLink: ATTITUDE.roll → 2,000 (${fmt(QUERY_FRAMES / 1000)}k fr.)`, rollBefore, rollAfter, rollAnalyzed);
} finally {
  await admin.end();
  await server.stop();
  await handle.close();
  await database.drop();
}

if (SUBBENCHES) {
  const seconds = process.env.BENCH_SECONDS ?? '20';
  console.log(`bench:ingest (${seconds} s) and bench:query, each against the plain server then the TimescaleDB one`);
  const paths: Array<[string, string]> = [
    ['plain PostgreSQL', TEST_ADMIN_URL],
    ['TimescaleDB', adminUrl],
  ];
  const ingest: number[] = [];
  const query: SubResult[] = [];
  for (const [, url] of paths) {
    const run = await runBench('ingest.ts', url, { BENCH_SECONDS: seconds });
    ingest.push(run.figure(/gRPC StreamSubmit : ([\d,]+) points\/s/));
  }
  for (const [, url] of paths) query.push(await runBench('query.ts', url, { BENCH_RUNS: String(RUNS) }));
  console.log(`                                       plain     TimescaleDB   ratio`);
  console.log(`  ingest, points/s               ${fmt(ingest[0]!).padStart(12)}  ${fmt(ingest[1]!).padStart(12)}   ${(ingest[1]! / ingest[0]!).toFixed(2)}`);
  const rows: Array<[string, RegExp]> = [
    ['Query whole range, 1 ch, p50 ms', /whole range, 1 channel, max 2,000 points : p50 ([\d.]+) ms/],
    ['Query whole range, 8 ch, p50 ms', /whole range, 8 channels, max 2,000 each  : p50 ([\d.]+) ms/],
    ['Query 10 s window, p50 ms', /10 s window, 1 channel \(10 ms rollups\)   : p50 ([\d.]+) ms/],
    ['Query 2 s window (raw), p50 ms', /2 s window, 1 channel \(raw rows\)         : p50 ([\d.]+) ms/],
    ['Query 200 ms window (raw), p50 ms', /200 ms window, 1 channel \(raw rows\)      : p50 ([\d.]+) ms/],
  ];
  for (const [name, pattern] of rows) {
    const [a, b] = [query[0]!.figure(pattern), query[1]!.figure(pattern)];
    console.log(`  ${name.padEnd(31)}${fmt(a, 1).padStart(12)}  ${fmt(b, 1).padStart(12)}   ${(b / a).toFixed(2)}`);
  }
}
