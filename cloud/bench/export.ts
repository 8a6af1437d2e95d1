// npm run bench:export — GET /api/datasets/export of a long wide flight (8 double channels × 1.25 M rows
// at 20 kHz, loaded through StreamSubmit) as CSV and MCAP, and of a long MAVLink flight (the SITL capture
// replayed 28 times into one 97-minute boot, 669,000 frames, as bench:mavlink) as CSV and MCAP, from a
// server in a child process: wall time, rows (frames) and MB per second, and how far the server's resident
// memory rose while the file streamed (its peak is reset before each export; the largest rise of the
// measured runs, after one unmeasured export of each kind has grown the heap), next to the file's size.
// Baselines in the same run: the rows read straight from PostgreSQL in one query (no HTTP, no formatting)
// for the wide flight; for the MAVLink flight, every message table read whole in one query each (no order
// across tables, no HTTP, no JSON), and Query of every numeric signal at a budget that returns raw samples.
// Options: BENCH_ROWS (1250000), BENCH_MAVLINK_REPLAYS (28), BENCH_RUNS (3).
import { writeFileSync } from 'node:fs';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { TelemetryService } from '@sortie/contracts';
import pg from 'pg';
import { wideTableName } from '../src/datasets/wide-table.ts';
import { fixtureFrames, framePoint } from '../src/telemetry/narrow/fixture-frames.ts';
import { replayFrames } from '../src/telemetry/narrow/long-flight.ts';
import { createTestDatabase } from '../src/testing/test-database.ts';
import { api, createOrgAndKey, registerWideDataset, startServerProcess, type BenchServer } from './bench-env.ts';
import { loadWideFlight, ROW_COUNT } from './wide-flight.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? ROW_COUNT);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const REPLAYS = Number(process.env.BENCH_MAVLINK_REPLAYS ?? 28);
const CHANNELS = 8;

/** Reset the server's peak resident set (Linux: `5` into clear_refs), so the next peak is the export's own. */
function resetPeak(server: BenchServer): number {
  writeFileSync(`/proc/${server.child.pid}/clear_refs`, '5');
  return server.peakRssMb();
}

interface Download {
  ms: number;
  bytes: number;
  lines: number;
  riseMb: number;
}

/** One export, read to the end as the bytes come, counting lines (CSV) without keeping the file. */
async function download(server: BenchServer, apiKey: string, query: string): Promise<Download> {
  const before = resetPeak(server);
  if (process.env.BENCH_TRACE) console.log(`before ${before.toFixed(0)} MB`);
  const started = performance.now();
  const response = await fetch(`${server.httpUrl}/api/datasets/export?${query}`, { headers: { 'x-api-key': apiKey } });
  if (response.status !== 200) throw new Error(`export answered ${response.status}: ${await response.text()}`);
  let bytes = 0;
  let lines = 0;
  for await (const chunk of response.body!) {
    bytes += chunk.byteLength;
    for (let i = 0; i < chunk.byteLength; i++) if (chunk[i] === 10) lines++;
  }
  const result = { ms: performance.now() - started, bytes, lines, riseMb: server.peakRssMb() - before };
  if (process.env.BENCH_TRACE) console.log(`${query}: ${result.ms.toFixed(0)} ms, rise ${result.riseMb.toFixed(0)} MB`);
  return result;
}

/** The median run by time; with `riseMb`, the largest rise of any run. */
async function median<T extends { ms: number; riseMb?: number }>(runs: number, fn: () => Promise<T>): Promise<T> {
  const all: T[] = [];
  for (let i = 0; i < runs; i++) all.push(await fn());
  const rise = Math.max(...all.map((r) => r.riseMb ?? 0));
  all.sort((a, b) => a.ms - b.ms);
  const middle = all[Math.min(all.length - 1, Math.ceil(all.length / 2) - 1)]!;
  return middle.riseMb === undefined ? middle : { ...middle, riseMb: rise };
}

const database = await createTestDatabase();
const server = await startServerProcess(database.url);
const { apiKey, handle } = await createOrgAndKey(database.url);
try {
  const experiment = await api(server.httpUrl, apiKey, '/api/experiments/create', { name: 'export bench' });
  const wideId = await registerWideDataset(server.httpUrl, apiKey, experiment.id, 'long flight', CHANNELS);
  const loadStarted = performance.now();
  await loadWideFlight(server.grpcPort, apiKey, experiment.id, wideId, CHANNELS, ROWS);
  const narrow = await api(server.httpUrl, apiKey, '/api/streams/register', {
    experimentId: experiment.id,
    datasetName: 'sitl',
    storageShape: 'narrow',
    codec: 'mavlink',
    dialect: 'ardupilotmega',
    format: 'mavlink-raw-v1',
  });
  const client = createClient(TelemetryService, createGrpcTransport({ baseUrl: `http://127.0.0.1:${server.grpcPort}` }));
  const headers = { 'x-api-key': apiKey };
  const capture = fixtureFrames('arduplane-sitl-vtol.tlog');
  // Replays joined into one boot: the capture's span plus a second between replays.
  const spanUs = capture[capture.length - 1]!.receivedUs - capture[0]!.receivedUs + 1_000_000;
  const frameCount = capture.length * REPLAYS;
  await client.streamSubmit(
    (async function* () {
      yield { message: { case: 'header' as const, value: { experimentId: experiment.id, datasetId: narrow.datasetId, format: 'mavlink-raw-v1' } } };
      for (let r = 0; r < REPLAYS; r++) {
        const points = replayFrames(capture, r, spanUs).map((f, i) => framePoint(f.bytes, f.receivedUs, r * capture.length + i + 1));
        for (let i = 0; i < points.length; i += 500) yield { message: { case: 'batch' as const, value: { points: points.slice(i, i + 500) } } };
      }
    })(),
    { headers },
  );
  const direct = new pg.Client({ connectionString: database.url });
  direct.on('error', (error) => console.error(`baseline connection lost: ${error.message}`));
  await direct.connect();
  await direct.query('vacuum analyze');
  console.log(
    `bench:export — wide: ${ROWS.toLocaleString('en-US')} rows × ${CHANNELS} channels (${(ROWS * CHANNELS).toLocaleString('en-US')} values); ` +
      `MAVLink: arduplane-sitl-vtol.tlog × ${REPLAYS} (${frameCount.toLocaleString('en-US')} frames, ${((spanUs * REPLAYS) / 60e6).toFixed(0)} min); loaded in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s; median of ${RUNS} runs`,
  );

  // One unmeasured export of each kind first: the first grows the server's heap, which later ones reuse.
  for (const q of [`datasetId=${wideId}&format=csv`, `datasetId=${wideId}&format=mcap`, `datasetId=${narrow.datasetId}&format=csv`, `datasetId=${narrow.datasetId}&format=mcap`]) {
    await download(server, apiKey, q);
  }
  const csv = await median(RUNS, () => download(server, apiKey, `datasetId=${wideId}&format=csv`));
  if (csv.lines !== ROWS + 1) throw new Error(`CSV has ${csv.lines} lines, expected ${ROWS + 1}`);
  const mcap = await median(RUNS, () => download(server, apiKey, `datasetId=${wideId}&format=mcap`));
  const table = wideTableName(wideId);
  const columns = Array.from({ length: CHANNELS }, (_, c) => `ch_${c}`).join(', ');
  const baseline = await median(RUNS, async () => {
    const started = performance.now();
    const result = await direct.query({ text: `select time, ${columns} from ${table} order by time`, rowMode: 'array' });
    return { ms: performance.now() - started, rows: result.rows.length };
  });

  const channels = (await (await fetch(`${server.httpUrl}/api/datasets/channels?datasetId=${narrow.datasetId}&experimentId=${experiment.id}`, { headers })).json()) as {
    hypertableColName: string;
    dataType: string;
  }[];
  const signals = channels.filter((c) => c.dataType !== 'string' && c.dataType !== 'bytes').map((c) => c.hypertableColName);
  const narrowCsv = await median(RUNS, () => download(server, apiKey, `datasetId=${narrow.datasetId}&format=csv`));
  const narrowMcap = await median(RUNS, () => download(server, apiKey, `datasetId=${narrow.datasetId}&format=mcap`));
  const messageTables = (await direct.query<{ table_name: string }>('select table_name from narrow_message_tables where dataset_id = $1', [narrow.datasetId])).rows.map((r) => r.table_name);
  const tablesWhole = await median(RUNS, async () => {
    const started = performance.now();
    let frames = 0;
    for (const table of messageTables) frames += (await direct.query({ text: `select * from "${table}"`, rowMode: 'array' })).rows.length;
    if (frames !== frameCount) throw new Error(`the message tables hold ${frames} frames, expected ${frameCount}`);
    return { ms: performance.now() - started, frames };
  });
  const queryAll = await median(RUNS, async () => {
    const started = performance.now();
    let samples = 0;
    // 16 signals a call: Query reads a call's signals in parallel, and 256 at once on a long flight wait out the pool.
    for (let i = 0; i < signals.length; i += 16) {
      const answer = await client.query({ datasetId: narrow.datasetId, channelIds: signals.slice(i, i + 16), maxPointsPerChannel: 100_000 }, { headers });
      samples += answer.series.reduce((n, s) => n + s.points.length, 0);
    }
    return { ms: performance.now() - started, samples };
  });
  await direct.end();

  const mb = (bytes: number) => bytes / 1024 / 1024;
  const line = (label: string, d: Download, rowsOut: number) =>
    `${label}: ${(d.ms / 1000).toFixed(2)} s, ${mb(d.bytes).toFixed(1)} MB, ${Math.round(rowsOut / (d.ms / 1000)).toLocaleString('en-US')} rows/s, ` +
    `${(mb(d.bytes) / (d.ms / 1000)).toFixed(1)} MB/s; server memory rose ${d.riseMb.toFixed(0)} MB while streaming it`;
  console.log(line('wide CSV    ', csv, ROWS));
  console.log(line('wide MCAP   ', mcap, ROWS));
  console.log(`baseline: the same rows in one SQL query, no HTTP, no formatting: ${(baseline.ms / 1000).toFixed(2)} s (CSV export / baseline = ${(csv.ms / baseline.ms).toFixed(2)}×, MCAP / baseline = ${(mcap.ms / baseline.ms).toFixed(2)}×)`);
  console.log(line('MAVLink CSV ', narrowCsv, narrowCsv.lines - 1));
  console.log(line('MAVLink MCAP', narrowMcap, frameCount).replace('rows/s', 'frames/s'));
  console.log(`baseline: the ${messageTables.length} message tables read whole, one query each, no order, no HTTP, no JSON: ${(tablesWhole.ms / 1000).toFixed(2)} s (MCAP export / baseline = ${(narrowMcap.ms / tablesWhole.ms).toFixed(2)}×, CSV / baseline = ${(narrowCsv.ms / tablesWhole.ms).toFixed(2)}×)`);
  console.log(`baseline: Query of all ${signals.length} numeric signals, raw: ${(queryAll.ms / 1000).toFixed(2)} s, ${queryAll.samples.toLocaleString('en-US')} samples (CSV export / baseline = ${(narrowCsv.ms / queryAll.ms).toFixed(2)}×)`);
  console.log(`memory bound: the MAVLink MCAP is ${mb(narrowMcap.bytes).toFixed(0)} MB; the server's rise while streaming it, ${narrowMcap.riseMb.toFixed(0)} MB`);
  console.log(`memory bound: the wide CSV is ${mb(csv.bytes).toFixed(0)} MB; the server's rise while streaming it, ${csv.riseMb.toFixed(0)} MB, is ${((csv.riseMb / mb(csv.bytes)) * 100).toFixed(0)} % of it`);
} finally {
  await server.stop();
  await handle.close();
  await database.drop();
}
