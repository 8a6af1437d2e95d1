// npm run bench:ingest — StreamSubmit throughput over loopback against a server in a child process,
// and in the same run the baseline: the same rows written straight to Postgres with the same bulk
// statement (unnest of binary arrays), no gRPC and no rollups. Options: BENCH_SECONDS (30), BENCH_STREAMS (4).
import http2 from 'node:http2';
import { fromBinary } from '@bufbuild/protobuf';
import { StreamSubmitRequestSchema } from '@sortie/contracts';
import pg from 'pg';
import { binaryArrays } from '../src/telemetry/sql/sql-arrays.ts';
import { createTestDatabase } from '../src/testing/test-database.ts';
import { api, BENCH_START_US, createOrgAndKey, measureServerLoad, ownCpuMs, postgresCpuMs, registerWideDataset, startServerProcess } from './bench-env.ts';
import type { BenchServer } from './bench-env.ts';
import { encodeBatchFrame, encodeHeaderFrame, openStreamSubmit, type BenchRows } from './grpc-wire.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 30);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 4);
const CHANNELS = 8;
const ROWS = 1000;
const SAMPLE_US = 50; // 20 kHz
const START_US = BENCH_START_US;
let DB_NAME = '';

/** Rows of batch `b` of stream `s`: 20 kHz timestamps, a noisy sine per channel. */
function rowsOf(s: number, b: number): BenchRows {
  const timesUs = new Float64Array(ROWS);
  const values = Array.from({ length: CHANNELS }, () => new Float64Array(ROWS));
  for (let r = 0; r < ROWS; r++) {
    const i = b * ROWS + r;
    timesUs[r] = START_US + i * SAMPLE_US;
    for (let c = 0; c < CHANNELS; c++) values[c]![r] = Math.sin(i / 2000 + c + s) * 100 + ((i * 7919 + c) % 101) / 100;
  }
  return { timesUs, values };
}

function checkEncoder(): void {
  const rows = rowsOf(0, 3);
  const frame = encodeBatchFrame(rows);
  const message = fromBinary(StreamSubmitRequestSchema, frame.subarray(5));
  if (message.message.case !== 'batch') throw new Error('encoder: not a batch');
  const p = message.message.value.points[CHANNELS * 17 + 5]!;
  const us = Number(p.timestamp!.seconds) * 1e6 + p.timestamp!.nanos / 1000;
  if (p.channelId !== '5' || us !== rows.timesUs[17] || p.type.case !== 'double' || p.type.value !== rows.values[5]![17]) {
    throw new Error('encoder: point 17/5 does not decode to what was encoded');
  }
}

async function grpcPhase(grpcPort: number, apiKey: string, experimentId: string, datasets: string[], server: BenchServer) {
  const session = http2.connect(`http://127.0.0.1:${grpcPort}`);
  const load = await measureServerLoad(server, DB_NAME);
  const started = performance.now();
  const deadline = started + SECONDS * 1000;
  const results = await Promise.all(
    datasets.map(async (datasetId, s) => {
      const stream = openStreamSubmit(session, apiKey);
      await stream.write(encodeHeaderFrame(experimentId, datasetId));
      let batches = 0;
      while (performance.now() < deadline) await stream.write(encodeBatchFrame(rowsOf(s, batches++)));
      const response = await stream.finish();
      if (Number(response.accepted) !== batches * ROWS * CHANNELS || Number(response.written) !== batches * ROWS * CHANNELS) {
        throw new Error(`stream ${s}: sent ${batches * ROWS * CHANNELS} points, server says accepted ${response.accepted}, written ${response.written}`);
      }
      return batches;
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const batches = results.reduce((n, b) => n + b, 0);
  const { cpu, p50, p99, latencyCount } = await load.finish(batches);
  session.close();
  const points = batches * ROWS * CHANNELS;
  return { points, elapsed, rate: points / elapsed, p50, p99, batches: latencyCount, cpu };
}

async function baselinePhase(databaseUrl: string, tables: string[]) {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: tables.length });
  const columns = Array.from({ length: CHANNELS }, (_, c) => `ch_${c}`);
  const cpu0 = { postgres: postgresCpuMs(DB_NAME), client: ownCpuMs() };
  const started = performance.now();
  const deadline = started + SECONDS * 1000;
  const counts = await Promise.all(
    tables.map(async (table, s) => {
      const client = await pool.connect();
      let batches = 0;
      try {
        while (performance.now() < deadline) {
          const rows = rowsOf(s, batches++);
          await client.query(
            `insert into ${table} (time, ${columns.join(', ')})
             select timestamptz 'epoch' + u.t * interval '1 microsecond', ${columns.map((_, c) => `u.c${c}`).join(', ')}
             from unnest($1::int8[], ${columns.map((_, c) => `$${c + 2}::double precision[]`).join(', ')}) as u(t, ${columns.map((_, c) => `c${c}`).join(', ')})`,
            [binaryArrays.int8(rows.timesUs), ...rows.values.map((v) => binaryArrays.float8(v))],
          );
        }
      } finally {
        client.release();
      }
      return batches;
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const batches = counts.reduce((n, b) => n + b, 0);
  const cpu = { postgres: (postgresCpuMs(DB_NAME) - cpu0.postgres) / batches, client: (ownCpuMs() - cpu0.client) / batches };
  await pool.end();
  const points = batches * ROWS * CHANNELS;
  return { points, elapsed, rate: points / elapsed, cpu };
}

checkEncoder();
const database = await createTestDatabase();
DB_NAME = database.name;
const server = await startServerProcess(database.url);
const { apiKey, handle } = await createOrgAndKey(database.url);
try {
  const experiment = await api(server.httpUrl, apiKey, '/api/experiments/create', { name: 'ingest bench' });
  const datasets: string[] = [];
  for (let s = 0; s < STREAMS; s++) datasets.push(await registerWideDataset(server.httpUrl, apiKey, experiment.id, `stream ${s}`, CHANNELS));
  console.log(`bench:ingest — ${STREAMS} StreamSubmit streams × ${ROWS}-row batches × ${CHANNELS} double channels, ${SECONDS} s, server in a child process`);

  const grpc = await grpcPhase(server.grpcPort, apiKey, experiment.id, datasets, server);
  const rss = server.peakRssMb();
  await server.stop();

  // Baseline tables: same columns, same primary key, no rollups.
  const baseTables: string[] = [];
  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  for (let s = 0; s < STREAMS; s++) {
    baseTables.push(`baseline_${s}`);
    await admin.query(`create table baseline_${s} (time timestamptz not null primary key, ${Array.from({ length: CHANNELS }, (_, c) => `ch_${c} double precision`).join(', ')})`);
  }
  await admin.end();
  const base = await baselinePhase(database.url, baseTables);

  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  console.log(`gRPC StreamSubmit : ${fmt(grpc.rate)} points/s (${fmt(grpc.points)} points in ${grpc.elapsed.toFixed(1)} s)`);
  console.log(`  batch latency   : p50 ${grpc.p50.toFixed(1)} ms, p99 ${grpc.p99.toFixed(1)} ms over ${grpc.batches} batches (server's histogram: decoded batch handed to the writer → committed)`);
  console.log(`  server peak RSS : ${rss.toFixed(0)} MB`);
  console.log(`baseline (pg)     : ${fmt(base.rate)} points/s (${fmt(base.points)} points in ${base.elapsed.toFixed(1)} s, unnest insert of binary arrays, no rollups)`);
  console.log(`ratio             : ${((grpc.rate / base.rate) * 100).toFixed(0)} % of baseline`);
  console.log(`CPU per batch     : gRPC run: server ${grpc.cpu.server.toFixed(2)} ms, Postgres ${grpc.cpu.postgres.toFixed(2)} ms, client ${grpc.cpu.client.toFixed(2)} ms`);
  console.log(`                    baseline: Postgres ${base.cpu.postgres.toFixed(2)} ms, client ${base.cpu.client.toFixed(2)} ms (2 cores: ${(2000 / (grpc.cpu.server + grpc.cpu.postgres + grpc.cpu.client)).toFixed(0)} vs ${(2000 / (base.cpu.postgres + base.cpu.client)).toFixed(0)} batches/s at most)`);
  console.log(`targets           : ≥ 500,000 points/s ${grpc.rate >= 500_000 ? 'met' : 'MISSED'}; ≥ 70 % of baseline ${grpc.rate >= 0.7 * base.rate ? 'met' : 'MISSED'}; RSS ≤ 300 MB ${rss <= 300 ? 'met' : 'MISSED'}`);
} finally {
  await server.stop();
  await handle.close();
  await database.drop();
}
