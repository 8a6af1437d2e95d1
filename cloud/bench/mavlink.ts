// npm run bench:mavlink — server-side MAVLink decode + store through gRPC StreamSubmit (mavlink-raw-v1),
// the real server in a child process, replaying arduplane-sitl-vtol.tlog over and over as one long
// flight: each replay's frame_seq, receive times and vehicle sample clocks moved on (long-flight.ts), so
// the replays join into one boot and one aligned timeline. From the same run:
//   - frames/s decoded and stored (gRPC), and the stored shape's Postgres bytes per frame: total
//     relation sizes (heap, TOAST, indexes) of the datasets' message tables plus the sessions and the
//     message-table list, divided by the frames stored;
//   - Query of one numeric signal (mavlink.ATTITUDE.roll) over a whole flight of BENCH_QUERY_FRAMES
//     frames (a dataset of its own, streamed untimed after the ingest phase; ≥ 1 hour of flight) to
//     2,000 points: p50 and p99 over BENCH_QUERY_RUNS calls through the server's gRPC Query;
//   - baselines: decode only (frame check + decode, this process, no database), and plain insert: the
//     same rows (one per frame) written straight into copies of the message tables, each stream into
//     copies of its own dataset's, with the writer's own insert statement, prepared as the writer
//     prepares its own (no gRPC, no decoding, no boot sessions, no table bookkeeping).
// And the edge agent's side (edge-agent/bench/), with the agent's own code and defaults, printed after:
//   - spool append (run first, while the database is quiet): the real Spool fed the capture's frames as
//     the pipeline feeds it, group commit, for BENCH_SPOOL_SECONDS; baseline in the same run: one fsync
//     per frame (appendDurable, awaited);
//   - catch-up: the real gRPC uplink, the cloud down while the spool fills with BENCH_CATCHUP_REPLAYS
//     replays, then a cloud child process on the ports the agent was given; timed from the first frame
//     sent to the last acknowledged, the stored samples checked against the decoder's count.
// Options: BENCH_SECONDS (25), BENCH_STREAMS (2: one per vehicle, each its own dataset), BENCH_BATCH
// (500 frames per StreamSubmit message), BENCH_QUERY_FRAMES (430,000: 18 replays, 62 minutes of flight),
// BENCH_QUERY_RUNS (40), BENCH_PHASES (server,spool,catchup: any of them), BENCH_SPOOL_SECONDS
// (BENCH_SECONDS, at most 6), BENCH_SPOOL_BASELINE_SECONDS (2), BENCH_SPOOL_DIR (the OS temp dir: the
// disk measured), BENCH_CATCHUP_REPLAYS (8, 191,152 frames), BENCH_CATCHUP_RETRY_MAX_SECONDS (1: the
// agent's --retry-max-seconds, only shortens the wait after the outage, which is not timed),
// BENCH_AGENT_LOG_LEVEL (error).
import http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { fromBinary } from '@bufbuild/protobuf';
import { StreamSubmitRequestSchema } from '@sortie/contracts';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { TelemetryService, varintLength, writeVarint } from '@sortie/contracts';
import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import { BootSessions } from '../src/telemetry/narrow/boot-sessions.ts';
import { fixtureFrames } from '../src/telemetry/narrow/fixture-frames.ts';
import { NarrowBatch } from '../src/telemetry/narrow/narrow-batch.ts';
import { insertGroup, PREPARED_SHAPES_MAX, type NarrowTarget } from '../src/telemetry/narrow/narrow-writer.ts';
import { replayFrames } from '../src/telemetry/narrow/long-flight.ts';
import { narrowStorage } from '../src/telemetry/narrow/storage-size.ts';
import { binaryArrays } from '../src/telemetry/sql/sql-arrays.ts';
import type { DatabaseHandle } from '../src/db/connect.ts';
import type { Database } from '../src/db/schema.ts';
import { createTestDatabase } from '../src/testing/test-database.ts';
import type { TestDatabase } from '../src/testing/test-database.ts';
import { catchUpPhase } from '@sortie/edge-agent/bench/catch-up';
import type { CatchUpResult } from '@sortie/edge-agent/bench/catch-up';
import { spoolAppendPhase } from '@sortie/edge-agent/bench/spool-append';
import type { SpoolAppendResult } from '@sortie/edge-agent/bench/spool-append';
import { api, createOrgAndKey, freePort, measureServerLoad, ownCpuMs, postgresCpuMs, processCpuMs, startServerProcess } from './bench-env.ts';
import type { BenchServer } from './bench-env.ts';
import { allocBatchFrame, encodeHeaderFrame, filledFrame, openStreamSubmit, timestampLength, writeTimestampField } from './grpc-wire.ts';

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
const QUERY_FRAMES = Number(process.env.BENCH_QUERY_FRAMES ?? 430_000);
const QUERY_RUNS = Number(process.env.BENCH_QUERY_RUNS ?? 40);

const frames = fixtureFrames('arduplane-sitl-vtol.tlog');
const REPLAY_SPAN_US = frames[frames.length - 1]!.receivedUs - frames[0]!.receivedUs + 1_000_000;

// ---- Hand encoding of mavlink-raw-v1 messages (checked against protobuf-es below) --------------------

/** Replays of the capture as one continuous flight (clocks moved on); a few kept, the streams share them. */
const replays = new Map<number, Array<{ bytes: Uint8Array; receivedUs: number }>>();
function replayOf(replay: number) {
  let found = replays.get(replay);
  if (!found) {
    found = replayFrames(frames, replay, REPLAY_SPAN_US);
    replays.set(replay, found);
    for (const k of replays.keys()) if (k < replay - 2) replays.delete(k);
  }
  return found;
}

/** StreamSubmitRequest{batch} of frames [from, to) of replay `replay` (frame_seq, receive time and clocks moved on). */
function batchFrame(from: number, to: number, replay: number): Buffer {
  const frameList = replayOf(replay);
  const seqBase = replay * frames.length + 1;
  const parts: Array<{ seconds: number; nanos: number; ts: number; bytes: Uint8Array; seq: number; len: number }> = [];
  let batchLen = 0;
  for (let i = from; i < to; i++) {
    const us = frameList[i]!.receivedUs;
    const seconds = Math.floor(us / 1e6);
    const nanos = (us - seconds * 1e6) * 1000;
    const ts = timestampLength(seconds, nanos);
    const bytes = frameList[i]!.bytes;
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
  const f = replayOf(3)[104]!;
  if (p.frameSeq !== BigInt(3 * frames.length + 105) || us !== frames[104]!.receivedUs + 3 * REPLAY_SPAN_US || p.type.case !== 'bytes' || Buffer.compare(p.type.value, f.bytes) !== 0) {
    throw new Error('encoder: point 104 does not decode to what was encoded');
  }
}

// ---- Baseline 1: decode only ----------------------------------------------------------------------------

function decodeOnly(seconds: number): { frames: number; samples: number; elapsed: number } {
  const started = performance.now();
  let n = 0;
  let samples = 0;
  const locate = () => '';
  while (performance.now() - started < seconds * 1000) {
    for (let b = 0; b < frames.length; b += BATCH) {
      const batch = new NarrowBatch();
      const end = Math.min(frames.length, b + BATCH);
      for (let i = b; i < end; i++) batch.add(frames[i]!.frame.bytes, frames[i]!.receivedUs, n + i + 1, 0, locate, i);
      samples += batch.samples;
    }
    n += frames.length;
  }
  return { frames: n, samples, elapsed: (performance.now() - started) / 1000 };
}

// ---- Baseline 2: the same rows inserted directly ---------------------------------------------------------

interface PreparedBatch {
  frames: number;
  sql: string;
  params: unknown[];
  /** Per message id of the batch: which parameter is its row array, and the capture index of each row. */
  seqs: Array<{ param: number; rows: Float64Array }>;
}

const BASELINE_TARGET: NarrowTarget = { datasetId: '00000000-0000-0000-0000-000000000000', arrays: binaryArrays };

/** The capture decoded once into the writer's own insert statement (one insert per message id, one statement per batch) into `<prefix>m_<msgid>`. */
function prepareBaseline(db: Kysely<Database>, rowTypes: ReadonlyMap<number, number>, prefix: string): PreparedBatch[] {
  const sessions = new BootSessions([]);
  const out: PreparedBatch[] = [];
  for (let b = 0; b < frames.length; b += BATCH) {
    const batch = new NarrowBatch();
    const end = Math.min(frames.length, b + BATCH);
    for (let i = b; i < end; i++) batch.add(frames[i]!.frame.bytes, frames[i]!.receivedUs, i + 1, 0, () => '', i);
    const sessionOf = batch.frameSeq.map((seq, f) =>
      sessions.assign({ frameSeq: seq, compid: batch.compid[f]!, receivedUs: batch.receivedUs[f]!, ...(Number.isFinite(batch.bootUs[f]!) && { bootUs: batch.bootUs[f]! }) }),
    );
    // As the writer builds its statement: every table of the dataset in msgid order, an empty array for a
    // message type the batch does not carry, so every batch has the same text.
    const msgids = [...rowTypes.keys()].sort((a, b) => a - b);
    const inserts = msgids.map((msgid, i) => {
      const group = batch.groups.get(msgid);
      const table = `${prefix}m_${msgid}`;
      const insert = group
        ? insertGroup(BASELINE_TARGET, { table, rowType: rowTypes.get(msgid)! }, batch, group, sessionOf, false)
        : sql`insert into ${sql.table(table)} select * from unnest(${'{}'}::${sql.table(table)}[])`;
      return sql`${sql.raw(`i${i}`)} as (${insert})`;
    });
    const compiled = sql`with ${sql.join(inserts)} select 1`.compile(db);
    const params = [...compiled.parameters];
    // Each insert's one parameter is its rows as an array of the table's row type, in msgid order.
    const seqs: PreparedBatch['seqs'] = [];
    if (params.length !== msgids.length) throw new Error(`baseline: ${params.length} parameters for ${msgids.length} tables`);
    msgids.forEach((msgid, i) => {
      const group = batch.groups.get(msgid);
      if (!group) return;
      const rows = new Float64Array(group.frames.length);
      group.frames.forEach((f, r) => (rows[r] = b + f));
      seqs.push({ param: i, rows });
    });
    out.push({ frames: batch.frames, sql: compiled.sql, params, seqs });
  }
  return out;
}

/**
 * A copy of a binary row array (column-arrays.ts binaryRowArray) with row r's frame_seq set to
 * `base + rows[r]`: frame_seq is each record's first column, 16 bytes into the record.
 */
function withFrameSeqs(rowArray: Buffer, rows: Float64Array, base: number): Buffer {
  const buf = Buffer.from(rowArray);
  let pos = 20;
  for (let r = 0; r < rows.length; r++) {
    const length = buf.readInt32BE(pos);
    const seq = base + rows[r]!;
    const hi = Math.floor(seq / 4294967296);
    buf.writeInt32BE(hi, pos + 16);
    buf.writeUInt32BE(seq - hi * 4294967296, pos + 20);
    pos += 4 + length;
  }
  return buf;
}

/** Each stream its own batches (prepared[s], into its own copies), as fast as they are taken. */
async function baselinePhase(databaseUrl: string, databaseName: string, prepared: PreparedBatch[][]) {
  const streams = prepared.length;
  const pool = new pg.Pool({ connectionString: databaseUrl, max: streams });
  // Connect first, so the backends exist (and are counted) from the first CPU reading to the last.
  const clients = await Promise.all(Array.from({ length: streams }, () => pool.connect()));
  const cpu0 = { postgres: postgresCpuMs(databaseName), client: ownCpuMs() };
  const started = performance.now();
  const deadline = started + SECONDS * 1000;
  // The writer's policy for prepared statements (narrow-writer.ts): a statement text runs prepared from the
  // second time it is seen, and at most PREPARED_SHAPES_MAX texts ever are.
  const seen = new Map<string, number>();
  const names = new Map<string, string>();
  const results = await Promise.all(
    clients.map(async (client, s) => {
      let framesDone = 0;
      let batches = 0;
      for (let replay = 0; performance.now() < deadline; replay++) {
        for (const batch of prepared[s]!) {
          if (performance.now() >= deadline) break;
          const params = [...batch.params];
          for (const { param, rows } of batch.seqs) params[param] = withFrameSeqs(params[param] as Buffer, rows, replay * frames.length + 1);
          const times = (seen.get(batch.sql) ?? 0) + 1;
          seen.set(batch.sql, times);
          if (times >= 2 && !names.has(batch.sql) && names.size < PREPARED_SHAPES_MAX) names.set(batch.sql, `baseline_${names.size}`);
          const name = names.get(batch.sql);
          await (name ? client.query({ name, text: batch.sql, values: params }) : client.query(batch.sql, params));
          framesDone += batch.frames;
          batches++;
        }
      }
      return { frames: framesDone, batches };
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const batches = results.reduce((n, r) => n + r.batches, 0);
  const cpu = { postgres: (postgresCpuMs(databaseName) - cpu0.postgres) / batches, client: (ownCpuMs() - cpu0.client) / batches };
  for (const client of clients) client.release();
  await pool.end();
  return { frames: results.reduce((n, r) => n + r.frames, 0), elapsed, cpu };
}

// ---- gRPC phase ------------------------------------------------------------------------------------------

/** Replays sent so far per dataset: a stream continues the flight where the last one stopped. */
const nextReplay = new Map<string, number>();

async function grpcPhase(grpcPort: number, apiKey: string, experimentId: string, datasetIds: string[], server: BenchServer | null, databaseName: string, until: { seconds?: number; frames?: number }) {
  const session = http2.connect(`http://127.0.0.1:${grpcPort}`);
  const load = server && (await measureServerLoad(server, databaseName));
  const started = performance.now();
  const deadline = until.seconds === undefined ? Infinity : started + until.seconds * 1000;
  const results = await Promise.all(
    datasetIds.map(async (datasetId) => {
      const stream = openStreamSubmit(session, apiKey);
      await stream.write(encodeHeaderFrame(experimentId, datasetId, 'mavlink-raw-v1'));
      let sent = 0;
      let expectedSamples = 0;
      let batches = 0;
      const more = () => performance.now() < deadline && (until.frames === undefined || sent < until.frames);
      for (let replay = nextReplay.get(datasetId) ?? 0; more(); replay++) {
        for (let b = 0; b < frames.length && more(); b += BATCH) {
          const end = Math.min(frames.length, b + BATCH);
          await stream.write(batchFrame(b, end, replay));
          sent += end - b;
          expectedSamples += samplesBefore[end]! - samplesBefore[b]!;
          batches++;
        }
        nextReplay.set(datasetId, replay + 1);
      }
      const response = await stream.finish();
      if (Number(response.accepted) !== sent || Number(response.written) !== sent) {
        throw new Error(`stream of ${datasetId}: sent ${sent} frames, server says accepted ${response.accepted}, written ${response.written}`);
      }
      return { sent, batches, expectedSamples };
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const batches = results.reduce((n, r) => n + r.batches, 0);
  const measured = await load?.finish(batches);
  session.close();
  return { frames: results.reduce((n, r) => n + r.sent, 0), expectedSamples: results.reduce((n, r) => n + r.expectedSamples, 0), elapsed, batches, measured };
}

// ---- Storage: rows and bytes --------------------------------------------------------------------------------

/** Rows (= frames) in the datasets' message tables, and the bytes of everything narrow storage holds for them (narrow/storage-size.ts, as bench:short-flight). */
async function storageOf(db: Kysely<Database>, datasetIds: readonly string[]) {
  const s = await narrowStorage(db, datasetIds);
  return { rows: s.frames, bytes: s.bytes, tables: s.tables };
}

// ---- Query phase ----------------------------------------------------------------------------------------

async function queryPhase(grpcUrl: string, apiKey: string, datasetId: string) {
  const client = createClient(TelemetryService, createGrpcTransport({ baseUrl: grpcUrl }));
  const headers = { 'x-api-key': apiKey };
  const request = { datasetId, channelIds: ['mavlink.ATTITUDE.roll'], maxPointsPerChannel: 2000 };
  const first = await client.query(request, { headers });
  const points = first.series[0]!.points;
  const us = (p: (typeof points)[number]) => Number(p.timestamp!.seconds) * 1e6 + p.timestamp!.nanos / 1000;
  const spanMinutes = (us(points[points.length - 1]!) - us(points[0]!)) / 60e6;
  const times: number[] = [];
  for (let i = 0; i < QUERY_RUNS; i++) {
    const started = performance.now();
    await client.query(request, { headers });
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(times.length / 2)]!, p99: times[Math.min(times.length - 1, Math.floor(times.length * 0.99))]!, points: points.length, rawPoints: Number(first.series[0]!.rawPoints), spanMinutes };
}

// ---- Server phases: gRPC decode + store, storage, Query, and the baselines ---------------------------------

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
  const grpc = await grpcPhase(server.grpcPort, apiKey, experiment.id, datasetIds, server, database.name, { seconds: SECONDS });
  const rss = server.peakRssMb();

  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  // The tables are the authority on what was stored (the server's log lines may trail its responses).
  const stored = await storageOf(handle.db, datasetIds);
  if (stored.rows !== grpc.frames) throw new Error(`sent ${grpc.frames} frames, but the message tables hold ${stored.rows} rows`);
  const sessions = await admin.query<{ n: number }>('select count(*)::int as n from narrow_boot_sessions where dataset_id = any($1::uuid[])', [datasetIds]);

  // Query: a dataset of its own holding QUERY_FRAMES frames of one continuous flight (streamed untimed),
  // so the figure is for the flight length the target names, whatever the ingest phase stored.
  const queried = (
    await api(server.httpUrl, apiKey, '/api/streams/register', {
      experimentId: experiment.id,
      datasetName: 'queried flight',
      storageShape: 'narrow',
      codec: 'mavlink',
      dialect: 'ardupilotmega',
      format: 'mavlink-raw-v1',
    })
  ).datasetId as string;
  if (QUERY_FRAMES > 0) await grpcPhase(server.grpcPort, apiKey, experiment.id, [queried], null, database.name, { frames: QUERY_FRAMES });
  const queriedFrames = (await storageOf(handle.db, [queried])).rows;
  await admin.query('vacuum analyze');
  // BENCH_QUERY_FRAMES=0 skips the Query figure (a quick ingest-only run).
  const query = QUERY_FRAMES > 0 ? await queryPhase(`http://127.0.0.1:${server.grpcPort}`, apiKey, queried) : null;
  await server.stop();

  // Baseline: copies of each dataset's message tables (same columns, same key), emptied; a fresh
  // checkpoint. Each stream writes its own copies, as each gRPC stream wrote its own dataset's tables: the
  // same tables, rows and statement shapes (so as many shapes to prepare) as the writer had.
  const copies: Array<Array<{ msgid: number; copy: string }>> = [];
  for (let s = 0; s < STREAMS; s++) {
    const tables = await admin.query<{ msgid: number; table_name: string }>('select msgid, table_name from narrow_message_tables where dataset_id = $1::uuid and msgid >= 0', [datasetIds[s]]);
    copies.push(tables.rows.map((t) => ({ msgid: t.msgid, copy: `baseline_${s}_m_${t.msgid}` })));
    for (const t of tables.rows) await admin.query(`create table "baseline_${s}_m_${t.msgid}" (like "${t.table_name}" including all)`);
  }
  const all = await admin.query<{ table_name: string }>('select table_name from narrow_message_tables');
  for (const t of all.rows) await admin.query(`truncate "${t.table_name}"`);
  await admin.query('checkpoint');
  const prepared: PreparedBatch[][] = [];
  for (const [s, tables] of copies.entries()) {
    const rowTypes = new Map<number, number>();
    for (const t of tables) rowTypes.set(t.msgid, (await admin.query<{ o: number }>(`select '"${t.copy}"'::regtype::oid::int8::float8 as o`)).rows[0]!.o);
    prepared.push(prepareBaseline(handle.db, rowTypes, `baseline_${s}_`));
  }
  const base = await baselinePhase(database.url, database.name, prepared);
  for (const t of copies.flat()) await admin.query(`drop table "${t.copy}"`);
  await admin.end();

  const grpcFps = grpc.frames / grpc.elapsed;
  const baseFps = base.frames / base.elapsed;
  const bytesPerFrame = stored.bytes / stored.rows;
  const m = grpc.measured!;
  console.log(`gRPC StreamSubmit : ${fmt(grpcFps)} frames/s, ${fmt(grpc.expectedSamples / grpc.elapsed)} samples/s (${fmt(grpc.frames)} frames in ${grpc.elapsed.toFixed(1)} s), decoded and stored, one row per frame`);
  console.log(`  batch latency   : p50 ${m.p50.toFixed(1)} ms, p99 ${m.p99.toFixed(1)} ms over ${grpc.batches} messages (server's histogram: decoded batch handed to the writer → committed)`);
  console.log(`  server peak RSS : ${rss.toFixed(0)} MB; boot sessions: ${sessions.rows[0]!.n} for ${STREAMS} dataset(s) (one continuous flight each)`);
  console.log(`storage           : ${bytesPerFrame.toFixed(1)} bytes per stored frame (${(stored.bytes / 2 ** 20).toFixed(1)} MiB total relation size of ${stored.tables} message tables incl. indexes and TOAST, + sessions and table list; ${fmt(stored.rows)} frames)`);
  console.log(`baseline, decode  : ${fmt(decode.frames / decode.elapsed)} frames/s, ${fmt(decode.samples / decode.elapsed)} samples/s (frame check + decode, one core, no database)`);
  console.log(`baseline, insert  : ${fmt(baseFps)} frames/s (same rows, the writer's insert statement, prepared as the writer does, into copies of the message tables, pg direct)`);
  console.log(`ratio             : ${((grpcFps / baseFps) * 100).toFixed(0)} % of the plain insert's frames/s`);
  if (query) {
    console.log(`Query             : mavlink.ATTITUDE.roll to 2,000 points over ${query.spanMinutes.toFixed(1)} min of flight (${fmt(queriedFrames)} frames, ${fmt(query.rawPoints)} samples): p50 ${query.p50.toFixed(1)} ms, p99 ${query.p99.toFixed(1)} ms over ${QUERY_RUNS} calls (${query.points} points)`);
  }
  console.log(`CPU per message   : gRPC run: server ${m.cpu.server.toFixed(2)} ms, Postgres ${m.cpu.postgres.toFixed(2)} ms, client ${m.cpu.client.toFixed(2)} ms`);
  console.log(`                    baseline: Postgres ${base.cpu.postgres.toFixed(2)} ms, client ${base.cpu.client.toFixed(2)} ms`);
  const met = (ok: boolean) => (ok ? 'met' : 'MISSED');
  console.log(
    `targets           : ≥ 100,000 frames/s ${met(grpcFps >= 100_000)}; ≥ 70 % of baseline ${met(grpcFps >= 0.7 * baseFps)}; ≤ 150 B/frame ${met(bytesPerFrame <= 150)}; ` +
      `Query p50 ≤ 50 ms over ≥ 1 h and ≥ 400,000 frames ${query ? met(query.p50 <= 50 && query.spanMinutes >= 60 && queriedFrames >= 400_000) : 'not run'}`,
  );
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
  // Like every phase: empty tables and a fresh checkpoint.
  const admin = new pg.Client({ connectionString: database.url });
  await admin.connect();
  for (const t of (await admin.query<{ table_name: string }>('select table_name from narrow_message_tables')).rows) await admin.query(`truncate "${t.table_name}"`);
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
  const tables = await admin2.query<{ table_name: string }>(
    'select t.table_name from narrow_message_tables t join datasets d on d.id = t.dataset_id where d.experiment_id = $1',
    [experimentId],
  );
  const got = { rows: 0, min: Infinity, max: -Infinity };
  for (const { table_name } of tables.rows) {
    const r = await admin2.query<{ n: number; min: number | null; max: number | null }>(`select count(*)::float8 as n, min(frame_seq)::float8 as min, max(frame_seq)::float8 as max from "${table_name}"`);
    got.rows += r.rows[0]!.n;
    got.min = Math.min(got.min, r.rows[0]!.min ?? Infinity);
    got.max = Math.max(got.max, r.rows[0]!.max ?? -Infinity);
  }
  await admin2.end();
  // The tables are the authority: every spooled frame stored once, one row each, frame_seq 1..frames.
  if (got.rows !== result.frames || got.min !== 1 || got.max !== result.frames) {
    throw new Error(`catch-up: ${fmt(result.frames)} frames (frame_seq 1..${result.frames}) sent, but the message tables hold ${fmt(got.rows)} rows (frame_seq ${got.min}..${got.max})`);
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
        `(${fmt(r.frames)} frames spooled during the outage = ${CATCHUP_REPLAYS} replay(s), ${fmt(catchUp.rows)} rows in the message tables, one per frame, ` +
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
/** samplesBefore[i]: samples (fields) the capture's frames before frame i decode into. */
const samplesBefore = (() => {
  const batch = new NarrowBatch();
  const out = new Float64Array(frames.length + 1);
  frames.forEach((f, i) => {
    batch.add(f.frame.bytes, f.receivedUs, i + 1, 0, () => '', i);
    out[i + 1] = batch.samples;
  });
  return out;
})();
const samplesPerFrame = samplesBefore[frames.length]! / frames.length;
console.log(
  `bench:mavlink — arduplane-sitl-vtol.tlog (${fmt(frames.length)} frames, ${samplesPerFrame.toFixed(2)} samples/frame, one row per frame) replayed as one continuous flight through StreamSubmit, ` +
    `${STREAMS} stream(s) × ${BATCH}-frame messages, ${SECONDS} s per phase, server in a child process; phases: ${[...PHASES].join(', ')}`,
);

const capture = { frames, replaySpanUs: REPLAY_SPAN_US };
// The disk first, while the database is quiet.
const spool = PHASES.has('spool') ? await spoolAppendPhase(capture, { seconds: SPOOL_SECONDS, baselineSeconds: SPOOL_BASELINE_SECONDS, parentDir: SPOOL_PARENT }) : null;

let catchUp: CatchUpRun | null = null;
if (PHASES.has('server') || PHASES.has('catchup')) {
  const database = await createTestDatabase();
  const server = await startServerProcess(database.url);
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
