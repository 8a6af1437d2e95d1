// npm run bench:mavlink — server-side MAVLink decode + store through gRPC StreamSubmit (mavlink-raw-v1),
// the real server in a child process, replaying arduplane-sitl-vtol.tlog over and over (new frame_seq
// per replay, so every frame is new). In the same run, two baselines:
//   - decode only: the server's frame check + decode into narrow rows, in this process, no database;
//   - plain insert: the same rows written straight to a copy of narrow_samples (same columns and key)
//     with the same unnest statement: no gRPC, no decoding, no boot sessions, no dictionary.
// And the edge agent's side (edge-agent/bench/), with the agent's own code and defaults, printed after:
//   - spool append (run first, while the database is quiet): the real Spool fed the capture's frames as
//     the pipeline feeds it, group commit, for BENCH_SPOOL_SECONDS; baseline in the same run: one fsync
//     per frame (appendDurable, awaited);
//   - catch-up: the real gRPC uplink, the cloud down while the spool fills with BENCH_CATCHUP_REPLAYS
//     replays, then a cloud child process on the ports the agent was given; timed from the first frame
//     sent to the last acknowledged, the rows in narrow_samples checked against the decoder's count.
// Options: BENCH_SECONDS (25), BENCH_STREAMS (2: one per vehicle, each its own dataset), BENCH_BATCH
// (500 frames per StreamSubmit message), BENCH_INDEX_COMPARE=1 (one more plain-insert phase into a table
// that also has an index on (dataset_id, signal_id, time): what a second index would cost),
// BENCH_PHASES (server,spool,catchup: any of them), BENCH_SPOOL_SECONDS (BENCH_SECONDS, at most 6),
// BENCH_SPOOL_BASELINE_SECONDS (2), BENCH_SPOOL_DIR (the OS temp dir: the disk measured),
// BENCH_CATCHUP_REPLAYS (8, 191,152 frames), BENCH_CATCHUP_RETRY_MAX_SECONDS (1: the agent's
// --retry-max-seconds, only shortens the wait after the outage, which is not timed), BENCH_AGENT_LOG_LEVEL (error).
import http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { fromBinary } from '@bufbuild/protobuf';
import { StreamSubmitRequestSchema } from '@sortie/contracts';
import { sql } from 'kysely';
import pg from 'pg';
import { BootSessions } from '../src/telemetry/narrow/boot-sessions.ts';
import { fixtureFrames } from '../src/telemetry/narrow/fixture-frames.ts';
import { NarrowBatch } from '../src/telemetry/narrow/narrow-batch.ts';
import { rowColumns } from '../src/telemetry/narrow/narrow-writer.ts';
import { binaryArrays, binaryTimestamptzArray } from '../src/telemetry/sql/sql-arrays.ts';
import type { DatabaseHandle } from '../src/db/connect.ts';
import { createTestDatabase } from '../src/testing/test-database.ts';
import type { TestDatabase } from '../src/testing/test-database.ts';
import { catchUpPhase } from '@sortie/edge-agent/bench/catch-up';
import type { CatchUpResult } from '@sortie/edge-agent/bench/catch-up';
import { spoolAppendPhase } from '@sortie/edge-agent/bench/spool-append';
import type { SpoolAppendResult } from '@sortie/edge-agent/bench/spool-append';
import { api, createOrgAndKey, freePort, measureServerLoad, ownCpuMs, postgresCpuMs, processCpuMs, startServerProcess } from './bench-env.ts';
import type { BenchServer } from './bench-env.ts';
import { allocBatchFrame, encodeHeaderFrame, filledFrame, openStreamSubmit, timestampLength, varintLength, writeTimestampField, writeVarint } from './grpc-wire.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 25);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 2);
const BATCH = Number(process.env.BENCH_BATCH ?? 500);
const PHASE_NAMES = ['server', 'spool', 'catchup'] as const;
const PHASES = new Set((process.env.BENCH_PHASES ?? PHASE_NAMES.join(',')).split(',').map((p) => p.trim()));
for (const p of PHASES) if (!(PHASE_NAMES as readonly string[]).includes(p)) throw new Error(`BENCH_PHASES: unknown phase ${p} (use ${PHASE_NAMES.join(',')})`);
// At ~1 M frames/s × 60 bytes, 6 s stays well inside the agent's 1 GiB bound (beyond it, drop-oldest would delete segments).
const SPOOL_SECONDS = Number(process.env.BENCH_SPOOL_SECONDS ?? Math.min(SECONDS, 6));
const SPOOL_BASELINE_SECONDS = Number(process.env.BENCH_SPOOL_BASELINE_SECONDS ?? 2);
const SPOOL_PARENT = process.env.BENCH_SPOOL_DIR ?? tmpdir();
const CATCHUP_REPLAYS = Number(process.env.BENCH_CATCHUP_REPLAYS ?? 8);
const CATCHUP_RETRY_MAX_SECONDS = Number(process.env.BENCH_CATCHUP_RETRY_MAX_SECONDS ?? 1);
const CATCHUP_TIMEOUT_SECONDS = 600;

const frames = fixtureFrames('arduplane-sitl-vtol.tlog');
const REPLAY_SPAN_US = frames[frames.length - 1]!.receivedUs - frames[0]!.receivedUs + 1_000_000;

// ---- Hand encoding of mavlink-raw-v1 messages (checked against protobuf-es below) --------------------

/** StreamSubmitRequest{batch} of frames [from, to) of the capture, replay `replay` (time and frame_seq moved on). */
function batchFrame(from: number, to: number, replay: number): Buffer {
  const shiftUs = replay * REPLAY_SPAN_US;
  const seqBase = replay * frames.length + 1;
  const parts: Array<{ seconds: number; nanos: number; ts: number; bytes: Uint8Array; seq: number; len: number }> = [];
  let batchLen = 0;
  for (let i = from; i < to; i++) {
    const us = frames[i]!.receivedUs + shiftUs;
    const seconds = Math.floor(us / 1e6);
    const nanos = (us - seconds * 1e6) * 1000;
    const ts = timestampLength(seconds, nanos);
    const bytes = frames[i]!.frame.bytes;
    const seq = seqBase + i;
    const len = 1 + varintLength(ts) + ts + 1 + varintLength(bytes.length) + bytes.length + 1 + varintLength(seq);
    parts.push({ seconds, nanos, ts, bytes, seq, len });
    batchLen += 1 + varintLength(len) + len;
  }
  const frame = allocBatchFrame(batchLen);
  const buf = frame.buf;
  let pos = frame.pos;
  for (const p of parts) {
    buf[pos++] = 0x0a; // PointBatch.points
    pos = writeVarint(buf, pos, p.len);
    pos = writeTimestampField(buf, pos, p.ts, p.seconds, p.nanos);
    buf[pos++] = 0x72; // TelemetryPoint.bytes = 14
    pos = writeVarint(buf, pos, p.bytes.length);
    buf.set(p.bytes, pos);
    pos += p.bytes.length;
    buf[pos++] = 0x78; // TelemetryPoint.frame_seq = 15
    pos = writeVarint(buf, pos, p.seq);
  }
  return filledFrame(buf, pos);
}

function checkEncoder(): void {
  const message = fromBinary(StreamSubmitRequestSchema, batchFrame(100, 110, 3).subarray(5));
  if (message.message.case !== 'batch') throw new Error('encoder: not a batch');
  const p = message.message.value.points[4]!;
  const us = Number(p.timestamp!.seconds) * 1e6 + p.timestamp!.nanos / 1000;
  const f = frames[104]!;
  if (p.frameSeq !== BigInt(3 * frames.length + 105) || us !== f.receivedUs + 3 * REPLAY_SPAN_US || p.type.case !== 'bytes' || Buffer.compare(p.type.value, f.frame.bytes) !== 0) {
    throw new Error('encoder: point 104 does not decode to what was encoded');
  }
}

// ---- Baseline 1: decode only ----------------------------------------------------------------------------

function decodeOnly(seconds: number): { frames: number; rows: number; elapsed: number } {
  const started = performance.now();
  let n = 0;
  let rows = 0;
  const locate = () => '';
  while (performance.now() - started < seconds * 1000) {
    for (let b = 0; b < frames.length; b += BATCH) {
      const batch = new NarrowBatch();
      const end = Math.min(frames.length, b + BATCH);
      for (let i = b; i < end; i++) batch.add(frames[i]!.frame.bytes, frames[i]!.receivedUs, n + i + 1, 0, locate, i);
      rows += batch.rows;
    }
    n += frames.length;
  }
  return { frames: n, rows, elapsed: (performance.now() - started) / 1000 };
}

// ---- Baseline 2: the same rows inserted directly ---------------------------------------------------------

interface PreparedBatch {
  frames: number;
  rows: number;
  /** frame index of each row within the capture (to move frame_seq per replay). */
  rowFrame: Float64Array;
  params: Array<Buffer | string>;
}

/** The capture decoded once into the writer's column arrays, per batch; signal ids from a local dictionary. */
function prepareBaseline(): PreparedBatch[] {
  const ids = new Map<string, number>();
  const sessions = new BootSessions([]);
  const out: PreparedBatch[] = [];
  for (let b = 0; b < frames.length; b += BATCH) {
    const batch = new NarrowBatch();
    const end = Math.min(frames.length, b + BATCH);
    for (let i = b; i < end; i++) batch.add(frames[i]!.frame.bytes, frames[i]!.receivedUs, i + 1, 0, () => '', i);
    const sessionOf = batch.frameSeq.map((seq, f) =>
      sessions.assign({ frameSeq: seq, compid: batch.compid[f]!, receivedUs: batch.receivedUs[f]!, ...(Number.isFinite(batch.bootUs[f]!) && { bootUs: batch.bootUs[f]! }) }),
    );
    const n = batch.rows;
    const rowFrame = new Float64Array(n);
    for (let r = 0; r < n; r++) rowFrame[r] = b + batch.rowFrame[r]!;
    const signalId = (name: string) => {
      let id = ids.get(name);
      if (id === undefined) ids.set(name, (id = ids.size + 1));
      return id;
    };
    const { signal: sig, time: t, source: src, boot, hasBoot, session: sess, received: rcv } = rowColumns(batch, signalId, sessionOf);
    const texts = batch.textRows.length > 0 ? `{${batch.textRows.map((r) => r + 1).join(',')}}` : '{}';
    const textValues = `{${batch.texts.map((s) => `"${s.replace(/["\\]/g, '\\$&')}"`).join(',')}}`;
    out.push({
      frames: batch.frames,
      rows: n,
      rowFrame,
      params: [
        binaryArrays.int4(sig),
        binaryTimestamptzArray(t),
        binaryArrays.int4(src),
        binaryArrays.float8(boot, hasBoot),
        binaryArrays.int4(sess),
        binaryTimestamptzArray(rcv),
        binaryArrays.float8(batch.value, batch.hasDouble, n),
        texts,
        textValues,
      ],
    });
  }
  return out;
}

const INDEX_COMPARE = process.env.BENCH_INDEX_COMPARE === '1';

const baselineSql = (table: string) => `
  insert into ${table} (dataset_id, frame_seq, time, received_at, boot_us, value_double, signal_id, boot_session, time_source, value_text, value_bytes)
  select $1::uuid, u.seq, u.t, u.rcv, u.boot::int8, u.v, u.sig, u.sess, (array['gps', 'boot', 'agent']::text[])[u.src], tx.val, null::bytea
  from unnest($2::int8[], $3::int4[], $4::timestamptz[], $5::int4[], $6::float8[], $7::int4[], $8::timestamptz[], $9::float8[]) with ordinality as u(seq, sig, t, src, boot, sess, rcv, v, ord)
  left join unnest($10::int4[], $11::text[]) as tx(ord, val) on tx.ord = u.ord`;

async function baselinePhase(databaseUrl: string, databaseName: string, datasetIds: string[], prepared: PreparedBatch[], table: string) {
  const text = baselineSql(table);
  const pool = new pg.Pool({ connectionString: databaseUrl, max: datasetIds.length });
  // Connect first, so the backends exist (and are counted) from the first CPU reading to the last.
  const clients = await Promise.all(datasetIds.map(() => pool.connect()));
  const cpu0 = { postgres: postgresCpuMs(databaseName), client: ownCpuMs() };
  const started = performance.now();
  const deadline = started + SECONDS * 1000;
  const results = await Promise.all(
    datasetIds.map(async (datasetId, s) => {
      const client = clients[s]!;
      let framesDone = 0;
      let rows = 0;
      let batches = 0;
      for (let replay = 0; performance.now() < deadline; replay++) {
        for (const batch of prepared) {
          if (performance.now() >= deadline) break;
          const seq = new Float64Array(batch.rows);
          for (let r = 0; r < batch.rows; r++) seq[r] = replay * frames.length + batch.rowFrame[r]! + 1;
          const result = await client.query(text, [datasetId, binaryArrays.int8(seq), ...batch.params]);
          rows += result.rowCount ?? 0;
          framesDone += batch.frames;
          batches++;
        }
      }
      return { frames: framesDone, rows, batches };
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const sum = (k: 'frames' | 'rows' | 'batches') => results.reduce((n, r) => n + r[k], 0);
  const batches = sum('batches');
  const cpu = { postgres: (postgresCpuMs(databaseName) - cpu0.postgres) / batches, client: (ownCpuMs() - cpu0.client) / batches };
  for (const client of clients) client.release();
  await pool.end();
  return { frames: sum('frames'), rows: sum('rows'), elapsed, cpu };
}

// ---- gRPC phase ------------------------------------------------------------------------------------------

async function grpcPhase(grpcPort: number, apiKey: string, experimentId: string, datasetIds: string[], server: BenchServer, databaseName: string) {
  const session = http2.connect(`http://127.0.0.1:${grpcPort}`);
  const load = measureServerLoad(server, databaseName);
  const started = performance.now();
  const deadline = started + SECONDS * 1000;
  const results = await Promise.all(
    datasetIds.map(async (datasetId) => {
      const stream = openStreamSubmit(session, apiKey);
      await stream.write(encodeHeaderFrame(experimentId, datasetId, 'mavlink-raw-v1'));
      let sent = 0;
      let expectedRows = 0;
      let batches = 0;
      for (let replay = 0; performance.now() < deadline; replay++) {
        for (let b = 0; b < frames.length && performance.now() < deadline; b += BATCH) {
          const end = Math.min(frames.length, b + BATCH);
          await stream.write(batchFrame(b, end, replay));
          sent += end - b;
          expectedRows += rowsBefore[end]! - rowsBefore[b]!;
          batches++;
        }
      }
      const response = await stream.finish();
      if (Number(response.accepted) !== sent || Number(response.written) !== sent) {
        throw new Error(`stream of ${datasetId}: sent ${sent} frames, server says accepted ${response.accepted}, written ${response.written}`);
      }
      return { sent, batches, expectedRows };
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const batches = results.reduce((n, r) => n + r.batches, 0);
  const { cpu, p50, p99 } = load.finish(batches);
  session.close();
  return { frames: results.reduce((n, r) => n + r.sent, 0), rows: 0, expectedRows: results.reduce((n, r) => n + r.expectedRows, 0), elapsed, p50, p99, batches, cpu };
}

// ---- Server phases: gRPC decode + store, and its baselines ------------------------------------------------

async function serverPhases(database: TestDatabase, server: BenchServer, apiKey: string, handle: DatabaseHandle): Promise<void> {
  const decode = decodeOnly(Math.min(5, SECONDS));
  const experiment = await api(server.httpUrl, apiKey, '/api/experiments/create', { name: 'mavlink bench' });
  const datasetIds: string[] = [];
  for (let s = 0; s < STREAMS; s++) {
    const body = await api(server.httpUrl, apiKey, '/api/streams/register', {
      experimentId: experiment.id,
      datasetName: `vehicle ${s + 1}`,
      storageShape: 'narrow',
      codec: 'mavlink',
      dialect: 'ardupilotmega',
      format: 'mavlink-raw-v1',
    });
    datasetIds.push(body.datasetId);
  }
  await handle.db.executeQuery(sql`checkpoint`.compile(handle.db));
  const grpc = await grpcPhase(server.grpcPort, apiKey, experiment.id, datasetIds, server, database.name);
  const rss = server.peakRssMb();
  await server.stop();

  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  const stored = await admin.query<{ rows: number }>('select count(*)::float8 as rows from narrow_samples');
  await admin.query('create table baseline_samples (like narrow_samples including all)');
  if (INDEX_COMPARE) {
    await admin.query('create table baseline_two_indexes (like narrow_samples including all)');
    await admin.query('create index on baseline_two_indexes (dataset_id, signal_id, time)');
  }
  await admin.end();
  // The table is the authority on rows written (the server's log lines may trail its responses).
  grpc.rows = Number(stored.rows[0]!.rows);
  if (grpc.rows !== grpc.expectedRows) throw new Error(`the frames sent decode into ${grpc.expectedRows} rows, but the table holds ${grpc.rows}`);
  // Each phase starts from an empty table and a fresh checkpoint, so none inherits the previous one's
  // dirty buffers and WAL.
  const reset = async (table: string) => {
    const c = new pg.Client({ connectionString: database.url });
    await c.connect();
    await c.query(`truncate ${table}`);
    await c.query('checkpoint');
    await c.end();
  };
  const prepared = prepareBaseline();
  await reset('narrow_samples');
  const base = await baselinePhase(database.url, database.name, datasetIds, prepared, 'baseline_samples');
  let twoIndexes;
  if (INDEX_COMPARE) {
    await reset('baseline_samples');
    twoIndexes = await baselinePhase(database.url, database.name, datasetIds, prepared, 'baseline_two_indexes');
  }

  const grpcFps = grpc.frames / grpc.elapsed;
  const grpcRps = grpc.rows / grpc.elapsed;
  const baseRps = base.rows / base.elapsed;
  console.log(`gRPC StreamSubmit : ${fmt(grpcFps)} frames/s, ${fmt(grpcRps)} rows/s (${fmt(grpc.frames)} frames, ${fmt(grpc.rows)} rows in ${grpc.elapsed.toFixed(1)} s), decoded and stored`);
  console.log(`  batch latency   : p50 ${grpc.p50.toFixed(1)} ms, p99 ${grpc.p99.toFixed(1)} ms over ${grpc.batches} messages (server: message decoded → committed)`);
  console.log(`  server peak RSS : ${rss.toFixed(0)} MB`);
  console.log(`baseline, decode  : ${fmt(decode.frames / decode.elapsed)} frames/s, ${fmt(decode.rows / decode.elapsed)} rows/s (frame check + decode into rows, one core, no database)`);
  console.log(`baseline, insert  : ${fmt(base.frames / base.elapsed)} frames/s, ${fmt(baseRps)} rows/s (same rows, same table shape, unnest of binary arrays, pg direct)`);
  if (twoIndexes) {
    console.log(`  + time index    : ${fmt(twoIndexes.frames / twoIndexes.elapsed)} frames/s, ${fmt(twoIndexes.rows / twoIndexes.elapsed)} rows/s (the same insert with a second index on (dataset_id, signal_id, time))`);
  }
  console.log(`ratio             : ${((grpcRps / baseRps) * 100).toFixed(0)} % of the plain insert's rows/s`);
  console.log(`CPU per message   : gRPC run: server ${grpc.cpu.server.toFixed(2)} ms, Postgres ${grpc.cpu.postgres.toFixed(2)} ms, client ${grpc.cpu.client.toFixed(2)} ms`);
  console.log(`                    baseline: Postgres ${base.cpu.postgres.toFixed(2)} ms, client ${base.cpu.client.toFixed(2)} ms`);
  console.log(`targets           : ≥ 50,000 frames/s decoded and stored ${grpcFps >= 50_000 ? 'met' : 'MISSED'}; a saturated 921,600-baud link is ~3,000–4,500 frames/s`);
}

// ---- Edge agent phases (edge-agent/bench/) ---------------------------------------------------------------

interface CatchUpRun {
  result: CatchUpResult;
  rows: number;
  /** CPU ms from the cloud listening again to the last frame acknowledged. */
  cpu: { agent: number; server: number; postgres: number };
}

/** The catch-up phase on `database`, into `experimentId`; the cloud it starts is kept in `afterOutage` (to stop it on failure). */
async function catchUpRun(database: TestDatabase, apiKey: string, experimentId: string, afterOutage: { server: BenchServer | null }): Promise<CatchUpRun> {
  // Like every phase: an empty table and a fresh checkpoint; the baselines' copies are dropped.
  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  await admin.query('drop table if exists baseline_samples, baseline_two_indexes');
  await admin.query('truncate narrow_samples');
  await admin.query('checkpoint');
  await admin.end();
  // The agent is configured for a cloud that is not there yet: these ports stay closed until bringCloudUp.
  const ports = { http: await freePort(), grpc: await freePort() };
  let cpu0 = { agent: 0, server: 0, postgres: 0 };
  const result = await catchUpPhase(capture, {
    replays: CATCHUP_REPLAYS,
    parentDir: SPOOL_PARENT,
    cloud: { httpUrl: `http://127.0.0.1:${ports.http}`, grpcUrl: `http://127.0.0.1:${ports.grpc}`, apiKey, experimentId },
    retryMaxSeconds: CATCHUP_RETRY_MAX_SECONDS,
    timeoutSeconds: CATCHUP_TIMEOUT_SECONDS,
    logLevel: process.env.BENCH_AGENT_LOG_LEVEL ?? 'error',
    bringCloudUp: async () => {
      const up = await startServerProcess(database.url, 'info', ports);
      afterOutage.server = up;
      cpu0 = { agent: ownCpuMs(), server: processCpuMs(up.child.pid!), postgres: postgresCpuMs(database.name) };
    },
  });
  const up = afterOutage.server!;
  const cpu = { agent: ownCpuMs() - cpu0.agent, server: processCpuMs(up.child.pid!) - cpu0.server, postgres: postgresCpuMs(database.name) - cpu0.postgres };
  await up.stop();
  const admin2 = new pg.Client({ connectionString: database.url });
  await admin2.connect();
  const stored = await admin2.query<{ rows: number; frames: number; min: number | null; max: number | null }>(
    `select count(*)::float8 as rows, count(distinct s.frame_seq)::float8 as frames, min(s.frame_seq)::float8 as min, max(s.frame_seq)::float8 as max
       from narrow_samples s join datasets d on d.id = s.dataset_id where d.experiment_id = $1`,
    [experimentId],
  );
  await admin2.end();
  // The table is the authority: every spooled frame stored once, as many rows as the decoder makes of them.
  const got = stored.rows[0]!;
  const expectedRows = CATCHUP_REPLAYS * rowsBefore[frames.length]!;
  if (got.rows !== expectedRows || got.frames !== result.frames || got.min !== 1 || got.max !== result.frames) {
    throw new Error(
      `catch-up: ${fmt(result.frames)} frames (frame_seq 1..${result.frames}) decode into ${fmt(expectedRows)} rows, ` +
        `but the table holds ${fmt(got.rows)} rows of ${fmt(got.frames)} frames (frame_seq ${got.min}..${got.max})`,
    );
  }
  return { result, rows: got.rows, cpu };
}

function printAgentPhases(spool: SpoolAppendResult | null, catchUp: CatchUpRun | null): void {
  if (!spool && !catchUp) return;
  console.log('edge agent (in this process; the cloud in a child process):');
  if (spool) {
    const g = spool.groupCommit;
    const b = spool.perFrame;
    const rate = g.frames / g.seconds;
    const baseRate = b.frames / b.seconds;
    console.log(
      `spool append      : ${fmt(rate)} frames/s, ${(g.frameBytes / g.seconds / 1e6).toFixed(1)} MB/s of frames, ${(g.recordBytes / g.seconds / 1e6).toFixed(1)} MB/s of spool records ` +
        `(${fmt(g.frames)} frames in ${g.seconds.toFixed(1)} s, ${(g.recordBytes / g.frames).toFixed(1)} bytes each on disk, every one durable when timed)`,
    );
    console.log(
      `  group commit    : ${fmt(g.fsyncs / g.seconds)} fsyncs/s, ${fmt(g.frames / g.batches)} frames per batch (${fmt(g.batches)} batches, ${fmt(g.fsyncs)} fsyncs); ` +
        `${g.cpuUsPerFrame.toFixed(2)} µs CPU per frame`,
    );
    console.log(
      `  spool           : ${spool.filesystem}, ${spool.settings.segmentBytes / 2 ** 20} MiB segments, bound ${spool.settings.maxBytes / 2 ** 30} GiB (${spool.settings.fullPolicy}), ` +
        `agent-record v1 payloads of the capture's frames, bursts of 64 KiB, a flush awaited every 4 MiB (as the pipeline)` +
        (g.dropped > 0 ? `; ${fmt(g.dropped)} frames dropped by the bound (still counted: they were durable)` : ''),
    );
    console.log(`baseline, 1 fsync : ${fmt(baseRate)} frames/s, ${fmt(b.fsyncs / b.seconds)} fsyncs/s (appendDurable awaited frame by frame, ${b.seconds.toFixed(1)} s)`);
    console.log(`ratio             : group commit appends ${(rate / baseRate).toFixed(0)}× as many frames/s as one fsync per frame`);
  }
  if (catchUp) {
    const r = catchUp.result;
    const c = r.counters;
    const u = r.config.uplink;
    console.log(
      `catch-up          : ${fmt(r.frames / r.catchUpSeconds)} frames/s, ${fmt(catchUp.rows / r.catchUpSeconds)} rows/s ` +
        `(${fmt(r.frames)} frames spooled during the outage = ${CATCHUP_REPLAYS} replay(s), ${fmt(catchUp.rows)} rows in narrow_samples = what the decoder makes of them, ` +
        `in ${r.catchUpSeconds.toFixed(1)} s from the first frame sent to the last acknowledged)`,
    );
    console.log(
      `  outage          : spool filled in ${r.fillSeconds.toFixed(1)} s (${fmt(r.frames / r.fillSeconds)} frames/s) while ${r.failuresDuringOutage} uplink attempt(s) failed; ` +
        `${r.reconnectSeconds.toFixed(2)} s from the cloud listening again to the first frame sent (back-off, dataset registration)`,
    );
    console.log(
      `  uplink          : agent defaults — sessions of ≤ ${fmt(u.sessionMaxFrames)} frames or ${u.sessionMaxMs} ms, ${u.batchPoints}-point batches, ` +
        `${u.maxSessionsInFlight} sessions awaiting their answer per system id, session deadline ${u.sessionTimeoutMs / 1000} s; ` +
        `--retry-max-seconds ${r.config.cloud.retryMaxMs / 1000}; ${r.systems.length} system id(s) → ${r.systems.length} dataset(s)`,
    );
    console.log(
      `  sessions        : ${fmt(c.sessions)} answered (${fmt(c.confirmed / Math.max(1, c.sessions))} frames each), ${fmt(c.sent)} frames sent, ` +
        `${fmt(c.written)} written, ${fmt(c.duplicates)} duplicates`,
    );
    const per = (ms: number) => ((ms / r.frames) * 1000).toFixed(1);
    console.log(`  CPU per 1,000 frames: agent ${per(catchUp.cpu.agent)} ms, server ${per(catchUp.cpu.server)} ms, Postgres ${per(catchUp.cpu.postgres)} ms (cloud up → all acknowledged)`);
  }
  if (spool) {
    const rate = spool.groupCommit.frames / spool.groupCommit.seconds;
    console.log(`targets (agent)   : spool append ≥ 100,000 frames/s ${rate >= 100_000 ? 'met' : 'MISSED'}`);
  }
}

// ---- Run -------------------------------------------------------------------------------------------------

checkEncoder();
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
/** rowsBefore[i]: rows the capture's frames before frame i decode into. */
const rowsBefore = (() => {
  const batch = new NarrowBatch();
  const out = new Float64Array(frames.length + 1);
  frames.forEach((f, i) => {
    batch.add(f.frame.bytes, f.receivedUs, i + 1, 0, () => '', i);
    out[i + 1] = batch.rows;
  });
  return out;
})();
const samplesPerFrame = rowsBefore[frames.length]! / frames.length;
console.log(
  `bench:mavlink — arduplane-sitl-vtol.tlog (${fmt(frames.length)} frames, ${samplesPerFrame.toFixed(2)} rows/frame) replayed through StreamSubmit, ` +
    `${STREAMS} stream(s) × ${BATCH}-frame messages, ${SECONDS} s per phase, server in a child process; phases: ${[...PHASES].join(', ')}`,
);

const capture = { frames, replaySpanUs: REPLAY_SPAN_US };
// The disk first, while the database is quiet.
const spool = PHASES.has('spool') ? await spoolAppendPhase(capture, { seconds: SPOOL_SECONDS, baselineSeconds: SPOOL_BASELINE_SECONDS, parentDir: SPOOL_PARENT }) : null;

let catchUp: CatchUpRun | null = null;
if (PHASES.has('server') || PHASES.has('catchup')) {
  const database = await createTestDatabase();
  const server = await startServerProcess(database.url, 'debug');
  const { apiKey, handle } = await createOrgAndKey(database.url);
  /** The cloud that comes back after the outage (set by the catch-up phase). */
  const afterOutage: { server: BenchServer | null } = { server: null };
  try {
    // Created while a cloud is up: the agent needs the experiment before the outage.
    const catchUpExperiment = PHASES.has('catchup') ? await api(server.httpUrl, apiKey, '/api/experiments/create', { name: 'agent catch-up bench' }) : null;
    if (PHASES.has('server')) await serverPhases(database, server, apiKey, handle);
    await server.stop();
    if (catchUpExperiment) catchUp = await catchUpRun(database, apiKey, catchUpExperiment.id, afterOutage);
  } finally {
    await server.stop();
    await afterOutage.server?.stop();
    await handle.close();
    await database.drop();
  }
}
printAgentPhases(spool, catchUp);
