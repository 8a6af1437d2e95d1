// npm run bench:memory — resident memory of the cloud process under each ingest path, sustained, then idle.
// Three phases, each against a fresh server process (node cloud/src/main.ts) so each peak is its own:
//   - HTTP append flood: BENCH_HTTP_CLIENTS clients posting append bodies of BENCH_HTTP_ROWS rows × 8
//     double channels (JSON) back to back;
//   - gRPC ingest: BENCH_STREAMS StreamSubmit streams of 1,000-row × 8-channel batches (as bench:ingest);
//   - MAVLink ingest: BENCH_STREAMS StreamSubmit streams of mavlink-raw-v1 batches of 500 frames,
//     replaying arduplane-sitl-vtol.tlog with a new frame_seq per replay (as bench:mavlink).
// Each phase loads for BENCH_SECONDS (75), then stays idle for BENCH_IDLE_SECONDS (20). Printed per phase:
// the process's peak RSS (VmHWM, the kernel's high-water mark, so no spike between samples is missed), its
// RSS after the load and after the idle time, and in the same run the baseline: the RSS of the same
// server started and idle before any load (the ratio is peak over that). Target: peak ≤ 300 MB per path.
// The server runs with npm start's flags (bench-env.ts startFlags: the young generation bounded to
// 2 × 16 MB, which V8 would otherwise grow to 2 × 64 MB under sustained allocation and keep), so the bench
// measures what ships. BENCH_PHASES picks phases (http,grpc,mavlink). BENCH_SERVER_NODE_OPTIONS adds flags
// for the server only (e.g. "--heapsnapshot-signal=SIGUSR2" to take heap snapshots while it runs).
import http2 from 'node:http2';
import { readFileSync } from 'node:fs';
import { create, toBinary } from '@bufbuild/protobuf';
import { StreamSubmitRequestSchema } from '@sortie/contracts';
import { heapFlags } from '../src/platform/heap.ts';
import { fixtureFrames } from '../src/telemetry/narrow/fixture-frames.ts';
import { createTestDatabase } from '../src/testing/test-database.ts';
import { api, BENCH_START_US, createOrgAndKey, isoMicros, registerWideDataset, startFlags, startServerProcess, type BenchServer } from './bench-env.ts';
import { encodeBatchFrame, encodeHeaderFrame, grpcFrame, openStreamSubmit, type BenchRows } from './grpc-wire.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 75);
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 20);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 4);
const HTTP_CLIENTS = Number(process.env.BENCH_HTTP_CLIENTS ?? 16);
const HTTP_ROWS = Number(process.env.BENCH_HTTP_ROWS ?? 2000);
const TARGET_MB = 300;
const CHANNELS = 8;
const GRPC_ROWS = 1000;
const MAVLINK_BATCH = 500;
const PHASE_NAMES = ['http', 'grpc', 'mavlink'] as const;
type PhaseName = (typeof PHASE_NAMES)[number];
const PHASES = (process.env.BENCH_PHASES ?? PHASE_NAMES.join(',')).split(',').map((p) => p.trim()) as PhaseName[];
for (const p of PHASES) if (!PHASE_NAMES.includes(p)) throw new Error(`BENCH_PHASES: unknown phase ${p} (use ${PHASE_NAMES.join(',')})`);
const START_US = BENCH_START_US;

/** Current and peak resident set of a process, MB. */
function rssOf(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) / 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

/** What the server's V8 holds (its /metrics: prom-client's process metrics), MB. */
interface HeapSample {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  newSpace: number;
}

async function heapOf(server: BenchServer): Promise<HeapSample | undefined> {
  try {
    const text = await (await fetch(`${server.httpUrl}/metrics`, { signal: AbortSignal.timeout(2000) })).text();
    const value = (name: string) => Number(new RegExp(`^${name.replace(/[{}"]/g, (c) => `\\${c}`)} ([0-9.e+]+)`, 'm').exec(text)?.[1] ?? NaN) / 2 ** 20;
    return {
      rss: rssOf(server.child.pid!).rss,
      heapTotal: value('sortie_nodejs_heap_size_total_bytes'),
      heapUsed: value('sortie_nodejs_heap_size_used_bytes'),
      external: value('sortie_nodejs_external_memory_bytes'),
      newSpace: value('sortie_nodejs_heap_space_size_total_bytes{space="new"}'),
    };
  } catch {
    return undefined; // the server too busy to answer within 2 s: no sample this time
  }
}

/** Samples RSS once a second while load runs, for the curve printed with the result, and V8's heap at the highest RSS seen. */
function sampler(server: BenchServer) {
  const samples: number[] = [];
  let atPeak: HeapSample | undefined;
  const timer = setInterval(() => {
    samples.push(rssOf(server.child.pid!).rss);
    void heapOf(server).then((h) => {
      if (h && (!atPeak || h.rss > atPeak.rss)) atPeak = h;
    });
  }, 1000);
  return {
    stop: () => {
      clearInterval(timer);
      return { samples, atPeak };
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---- Loads ------------------------------------------------------------------------------------------

async function httpAppendLoad(server: BenchServer, apiKey: string, experimentId: string, datasetId: string, deadline: number): Promise<{ units: number; unit: string }> {
  let next = 0;
  const counts = await Promise.all(
    Array.from({ length: HTTP_CLIENTS }, async () => {
      let written = 0;
      while (performance.now() < deadline) {
        const base = next;
        next += HTTP_ROWS;
        const rows = Array.from({ length: HTTP_ROWS }, (_, r) => {
          const values: Record<string, number> = {};
          for (let c = 0; c < CHANNELS; c++) values[`ch_${c}`] = Math.sin((base + r) / 500 + c) * 100;
          // To the microsecond: rows are 50 µs apart, and millisecond text would make twenty rows one.
          return { timestamp: isoMicros(START_US + (base + r) * 50), values };
        });
        const response = await fetch(`${server.httpUrl}/api/datasets/append`, {
          method: 'POST',
          headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
          body: JSON.stringify({ experimentId, datasetId, rows }),
        });
        const body = (await response.json()) as { valuesWritten?: number };
        if (response.status !== 200) throw new Error(`append: ${response.status} ${JSON.stringify(body)}`);
        written += body.valuesWritten ?? 0;
      }
      return written;
    }),
  );
  return { units: counts.reduce((a, b) => a + b, 0), unit: 'values' };
}

function wideRows(s: number, b: number): BenchRows {
  const timesUs = new Float64Array(GRPC_ROWS);
  const values = Array.from({ length: CHANNELS }, () => new Float64Array(GRPC_ROWS));
  for (let r = 0; r < GRPC_ROWS; r++) {
    const i = b * GRPC_ROWS + r;
    timesUs[r] = START_US + i * 50;
    for (let c = 0; c < CHANNELS; c++) values[c]![r] = Math.sin(i / 2000 + c + s) * 100;
  }
  return { timesUs, values };
}

async function grpcLoad(server: BenchServer, apiKey: string, experimentId: string, datasetIds: string[], deadline: number) {
  const session = http2.connect(`http://127.0.0.1:${server.grpcPort}`);
  try {
    const counts = await Promise.all(
      datasetIds.map(async (datasetId, s) => {
        const stream = openStreamSubmit(session, apiKey);
        await stream.write(encodeHeaderFrame(experimentId, datasetId));
        let batches = 0;
        while (performance.now() < deadline) await stream.write(encodeBatchFrame(wideRows(s, batches++)));
        const response = await stream.finish();
        return Number(response.written);
      }),
    );
    return { units: counts.reduce((a, b) => a + b, 0), unit: 'points' };
  } finally {
    session.close();
  }
}

async function mavlinkLoad(server: BenchServer, apiKey: string, experimentId: string, datasetIds: string[], deadline: number) {
  const frames = fixtureFrames('arduplane-sitl-vtol.tlog');
  const span = frames[frames.length - 1]!.receivedUs - frames[0]!.receivedUs + 1_000_000;
  const batch = (from: number, to: number, replay: number) =>
    grpcFrame(
      Buffer.from(
        toBinary(
          StreamSubmitRequestSchema,
          create(StreamSubmitRequestSchema, {
            message: {
              case: 'batch',
              value: {
                points: frames.slice(from, to).map((f, i) => {
                  const us = f.receivedUs + replay * span;
                  return {
                    timestamp: { seconds: BigInt(Math.floor(us / 1e6)), nanos: (us % 1e6) * 1000 },
                    type: { case: 'bytes' as const, value: f.frame.bytes },
                    frameSeq: BigInt(replay * frames.length + from + i + 1),
                  };
                }),
              },
            },
          }),
        ),
      ),
    );
  const session = http2.connect(`http://127.0.0.1:${server.grpcPort}`);
  try {
    const counts = await Promise.all(
      datasetIds.map(async (datasetId) => {
        const stream = openStreamSubmit(session, apiKey);
        await stream.write(encodeHeaderFrame(experimentId, datasetId, 'mavlink-raw-v1'));
        for (let replay = 0; performance.now() < deadline; replay++) {
          for (let b = 0; b < frames.length && performance.now() < deadline; b += MAVLINK_BATCH) await stream.write(batch(b, Math.min(frames.length, b + MAVLINK_BATCH), replay));
        }
        return Number((await stream.finish()).written);
      }),
    );
    return { units: counts.reduce((a, b) => a + b, 0), unit: 'frames' };
  } finally {
    session.close();
  }
}

// ---- One phase: fresh server, idle baseline, load, idle -----------------------------------------------

interface PhaseResult {
  name: string;
  idleBefore: number;
  peak: number;
  afterLoad: number;
  afterIdle: number;
  rate: string;
  curve: number[];
  atPeak: HeapSample | undefined;
}

async function phase(name: PhaseName, databaseUrl: string): Promise<PhaseResult> {
  // info: startServerProcess waits for the two 'listening' lines.
  const server = await startServerProcess(databaseUrl, 'info');
  const pid = server.child.pid!;
  try {
    const { apiKey, handle } = await createOrgAndKey(databaseUrl);
    await handle.close();
    const experiment = await api(server.httpUrl, apiKey, '/api/experiments/create', { name: `memory ${name}` });
    const datasets: string[] = [];
    for (let s = 0; s < (name === 'http' ? 1 : STREAMS); s++) {
      if (name === 'mavlink') {
        const body = await api(server.httpUrl, apiKey, '/api/streams/register', {
          experimentId: experiment.id,
          datasetName: `vehicle ${s + 1}`,
          storageShape: 'narrow',
          codec: 'mavlink',
          dialect: 'ardupilotmega',
          format: 'mavlink-raw-v1',
        });
        datasets.push(body.datasetId);
      } else datasets.push(await registerWideDataset(server.httpUrl, apiKey, experiment.id, `${name} ${s}`, CHANNELS));
    }
    // The baseline: this server, started and set up, before any load.
    await sleep(2000);
    const idleBefore = rssOf(pid).rss;
    const samples = sampler(server);
    const started = performance.now();
    const deadline = started + SECONDS * 1000;
    const done =
      name === 'http'
        ? await httpAppendLoad(server, apiKey, experiment.id, datasets[0]!, deadline)
        : name === 'grpc'
          ? await grpcLoad(server, apiKey, experiment.id, datasets, deadline)
          : await mavlinkLoad(server, apiKey, experiment.id, datasets, deadline);
    const elapsed = (performance.now() - started) / 1000;
    const afterLoad = rssOf(pid).rss;
    await sleep(IDLE_SECONDS * 1000);
    const { samples: curve, atPeak } = samples.stop();
    const { rss: afterIdle, peak } = rssOf(pid);
    return { name, idleBefore, peak, afterLoad, afterIdle, rate: `${Math.round(done.units / elapsed).toLocaleString('en-US')} ${done.unit}/s`, curve, atPeak };
  } finally {
    await server.stop();
  }
}

const LABEL: Record<PhaseName, string> = {
  http: `HTTP append flood (${HTTP_CLIENTS} clients × ${HTTP_ROWS} rows × ${CHANNELS} ch)`,
  grpc: `gRPC StreamSubmit (${STREAMS} streams × ${GRPC_ROWS} rows × ${CHANNELS} ch)`,
  mavlink: `MAVLink ingest (${STREAMS} streams × ${MAVLINK_BATCH} frames)`,
};

const database = await createTestDatabase();
try {
  console.log(
    `bench:memory — server RSS per ingest path: ${SECONDS} s of load, then ${IDLE_SECONDS} s idle; a fresh server process per phase; ` +
      `server flags "${[...startFlags(), process.env.BENCH_SERVER_NODE_OPTIONS ?? ''].join(' ').trim()}"; the server's entry point sets ${heapFlags().join(' ')} (cloud/src/platform/heap.ts)`,
  );
  const results: PhaseResult[] = [];
  for (const name of PHASES) {
    const r = await phase(name, database.url);
    results.push(r);
    const every = Math.max(1, Math.ceil(r.curve.length / 15));
    console.log(`${LABEL[name]}: ${r.rate}`);
    console.log(
      `  RSS MB: idle before ${r.idleBefore.toFixed(0)} | peak ${r.peak.toFixed(0)} (${(r.peak / r.idleBefore).toFixed(2)}× idle) | ` +
        `end of load ${r.afterLoad.toFixed(0)} | after ${IDLE_SECONDS} s idle ${r.afterIdle.toFixed(0)} | target peak ≤ ${TARGET_MB}: ${r.peak <= TARGET_MB ? 'met' : 'MISSED'}`,
    );
    console.log(`  RSS every ${every} s: ${r.curve.filter((_, i) => i % every === 0).map((v) => v.toFixed(0)).join(' ')}`);
    const h = r.atPeak;
    if (h) {
      console.log(
        `  at the highest sampled RSS (${h.rss.toFixed(0)} MB): V8 heap ${h.heapTotal.toFixed(0)} MB (used ${h.heapUsed.toFixed(0)}, new space ${h.newSpace.toFixed(0)}), ` +
          `external ${h.external.toFixed(0)} MB, the rest (code, native, allocator) ${(h.rss - h.heapTotal - h.external).toFixed(0)} MB`,
      );
    }
  }
  console.log(`targets: ${results.map((r) => `${r.name} peak ${r.peak.toFixed(0)} MB ${r.peak <= TARGET_MB ? 'met' : 'MISSED'}`).join('; ')}`);
} finally {
  await database.drop();
}
