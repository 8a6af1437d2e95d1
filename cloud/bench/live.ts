// npm run bench:live — following a flight live while it streams, against the real server in a child
// process (a database of its own on the real PostgreSQL, the live bus on the real NATS), in phases:
//
//   mavlink  the SITL capture (arduplane-sitl-vtol.tlog, 115 frames/s) replayed at 1× through gRPC
//            StreamSubmit (mavlink-raw-v1) as the edge agent sends it: one session a second
//            (BENCH_SESSION_MS, the agent's sessionMaxMs), its frames those received in that second;
//   wide     8 double channels at 50 Hz through Submit (Connect, /api/rpc), each row sent when it is due
//            (BENCH_WIDE_HZ), one call after the other, as a test rig streams;
//
// each in three intervals of BENCH_SECONDS: no followers, then BENCH_FOLLOWERS followers (@sortie/client's
// telemetry.follow, Connect on /api/rpc, each following 4 channels), then none again. From each phase:
//   1. commit → follower delivery, p50/p99 over every (batch, follower) of the followed interval: from
//      the ingest call's answer (the batch committed) to the first update whose newest sample (`head`)
//      reaches the batch's newest sample of the followed channels (narrow: read back from storage
//      afterwards, on the aligned time followers see). Same-run floor: the live bus's announcement of
//      the same batch, heard by a plain NATS subscriber in this process;
//   2. frame receipt → pixel drawn (pixel phase, BENCH_PIXEL_SECONDS, followers still on): the console in
//      real Chromium open on the live dataset, from the batch sent (the server's receipt; on loopback)
//      to the page's draw of the update reaching it (window.__sortieLive, console/src/follow.ts);
//      baseline: the Node followers' latency from the same send times;
//   4. CPU per follower: the cloud process (and this database's PostgreSQL backends) over the followed
//      interval, minus the mean of the two unfollowed ones, as % of one core.
//   limits   (3.) ingest at full rate as bench:ingest drives it (BENCH_INGEST_STREAMS StreamSubmit streams of
//            1,000-row × 8-channel batches) into an experiment without limit rules and into one with 20
//            (created through POST /api/limits/create), in the order none, rules, rules, none
//            (BENCH_INGEST_SECONDS each, fresh datasets each): points/s with rules ÷ without.
//
// Options: BENCH_PHASES (mavlink,wide,limits), BENCH_SECONDS (40), BENCH_FOLLOWERS (20), BENCH_PIXEL_SECONDS
// (45; 0 skips the browser), BENCH_WARMUP_SECONDS (5), BENCH_SESSION_MS (1000), BENCH_WIDE_HZ (50),
// BENCH_INGEST_SECONDS (15), BENCH_INGEST_STREAMS (4), BENCH_NATS_URL (nats://127.0.0.1:4222),
// BENCH_SERVER_NODE_OPTIONS (e.g. --cpu-prof). Prints a human summary and one JSON line (`BENCH_LIVE_JSON {...}`).
import http2 from 'node:http2';
import os from 'node:os';
import { fromBinary } from '@bufbuild/protobuf';
import { sql } from 'kysely';
import { connect as natsConnect, type NatsConnection } from '@nats-io/transport-node';
import { createSortieClient, type SortieClient } from '@sortie/client';
import { createStreamSubmitClient } from '@sortie/client/node';
import { FollowRequestSchema } from '@sortie/contracts';
import type { Browser, Page } from 'playwright-core';
import { CHROMIUM, launchChromium } from '../../test/console/browser.ts';
import type { DatabaseHandle } from '../src/db/connect.ts';
import { sessionShift } from '../src/telemetry/narrow/alignment.ts';
import { fixtureFrames, framePoint } from '../src/telemetry/narrow/fixture-frames.ts';
import { replayFrames } from '../src/telemetry/narrow/long-flight.ts';
import { loadMessageTables } from '../src/telemetry/narrow/message-tables.ts';
import { messageTableTail } from '../src/telemetry/narrow/query.ts';
import { loadBootSessions } from '../src/telemetry/narrow/session-store.ts';
import { signalColumn } from '../src/telemetry/narrow/message-tables.ts';
import { dropDeliveryStream } from '../src/testing/nats-server.ts';
import { createTestDatabase } from '../src/testing/test-database.ts';
import { api, createOrgAndKey, percentile, processCpuMs, registerWideDataset, startServerProcess, type BenchServer } from './bench-env.ts';
import { encodeBatchFrame, encodeHeaderFrame, openStreamSubmit, type BenchRows } from './grpc-wire.ts';
import { PostgresCpuMeter } from './postgres-cpu.ts';

const PHASE_NAMES = ['mavlink', 'wide', 'limits'] as const;
const PHASES = new Set((process.env.BENCH_PHASES ?? PHASE_NAMES.join(',')).split(',').map((p) => p.trim()));
for (const p of PHASES) if (!(PHASE_NAMES as readonly string[]).includes(p)) throw new Error(`BENCH_PHASES: unknown phase ${p} (use ${PHASE_NAMES.join(',')})`);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 40);
const FOLLOWERS = Number(process.env.BENCH_FOLLOWERS ?? 20);
const PIXEL_SECONDS = Number(process.env.BENCH_PIXEL_SECONDS ?? 45);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 5);
const SESSION_MS = Number(process.env.BENCH_SESSION_MS ?? 1000);
const WIDE_HZ = Number(process.env.BENCH_WIDE_HZ ?? 50);
const INGEST_SECONDS = Number(process.env.BENCH_INGEST_SECONDS ?? 15);
const INGEST_STREAMS = Number(process.env.BENCH_INGEST_STREAMS ?? 4);
const NATS_URL = process.env.BENCH_NATS_URL ?? 'nats://127.0.0.1:4222';
const NAMESPACE = `benchlive${process.pid}`;
/** After an interval's last batch, how long followers get to deliver it before they are stopped. */
const GRACE_MS = 3000;
const WIDE_CHANNELS = 8;
const LIMIT_RULES = 20;

// The issue's targets.
const TARGET_P50_MS = 100;
const TARGET_P99_MS = 250;
const TARGET_PIXEL_P99_MS = 500;
const TARGET_LIMITS_RATIO = 0.9;
const TARGET_CORE_PERCENT = 10;

/** Wall clock, ms, with performance.now()'s resolution (the page's clock is read the same way). */
const wallMs = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const f1 = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : '—');

/** Followed channels: each follower takes one of two sets of 4 (so the feed reads the union of 8). */
const MAVLINK_SETS = [
  ['mavlink.ATTITUDE.roll', 'mavlink.ATTITUDE.pitch', 'mavlink.GLOBAL_POSITION_INT.relative_alt', 'mavlink.SCALED_PRESSURE.press_abs'],
  ['mavlink.ATTITUDE.yaw', 'mavlink.GLOBAL_POSITION_INT.vz', 'mavlink.LOCAL_POSITION_NED.z', 'mavlink.RC_CHANNELS.chan3_raw'],
];
const WIDE_SETS = [
  ['0', '1', '2', '3'],
  ['4', '5', '6', '7'],
];

// ---- Ingest: one record per committed batch ----------------------------------------------------------------

interface Batch {
  /** Wall ms when the call was sent (the server's receipt, on loopback) and when its answer came (committed). */
  sentAt: number;
  committedAt: number;
  /** Wide: the batch's newest sample time, µs. Narrow: its frame_seq range, resolved to times afterwards. */
  maxUs: number;
  seqFrom: number;
  seqTo: number;
}

interface Stream {
  batches: Batch[];
  /** Stops sending; resolves when the call in flight has answered. */
  stop(): Promise<void>;
  failure(): unknown;
}

/** Sends `send(now)` every `periodMs` on a fixed schedule, one call at a time (a late call makes the next one late, never two at once). */
function scheduled(periodMs: number, send: (dueAt: number) => Promise<Batch | undefined>): Stream {
  const batches: Batch[] = [];
  let stopped = false;
  let failure: unknown;
  const done = (async () => {
    const start = wallMs();
    for (let k = 1; !stopped; k++) {
      await sleep(start + k * periodMs - wallMs());
      if (stopped) break;
      try {
        const batch = await send(start + k * periodMs);
        if (batch) batches.push(batch);
      } catch (error) {
        failure = error;
        return;
      }
    }
  })();
  return {
    batches,
    stop: async () => {
      stopped = true;
      await done;
    },
    failure: () => failure,
  };
}

/**
 * The SITL capture at 1×, as the agent uplinks it: every `SESSION_MS` one StreamSubmit session holding the
 * frames whose (replayed) receive time has come. Receive times start now; vehicle clocks move on per
 * replay (long-flight.ts), so a longer run is one continuous flight.
 */
function mavlinkStream(client: ReturnType<typeof createStreamSubmitClient>, experimentId: string, datasetId: string): Stream {
  const frames = fixtureFrames('arduplane-sitl-vtol.tlog');
  const first = frames[0]!.receivedUs;
  const spanUs = frames[frames.length - 1]!.receivedUs - first + 1_000_000;
  const startUs = Math.round(wallMs() * 1000);
  let replay = 0;
  let replayed = replayFrames(frames, 0, spanUs);
  let next = 0;
  let seq = 1;
  return scheduled(SESSION_MS, async (dueAt) => {
    const points = [];
    const seqFrom = seq;
    const dueUs = dueAt * 1000;
    for (;;) {
      if (next === replayed.length) {
        replayed = replayFrames(frames, ++replay, spanUs);
        next = 0;
      }
      const f = replayed[next]!;
      const us = f.receivedUs - first + startUs;
      if (us > dueUs) break;
      points.push(framePoint(f.bytes, us, seq++));
      next++;
    }
    if (points.length === 0) return undefined;
    const sentAt = wallMs();
    const answer = await client.streamSubmit({ experimentId, datasetId, format: 'mavlink-raw-v1' }, [{ points }]);
    const committedAt = wallMs();
    if (Number(answer.written) + Number(answer.duplicates) !== points.length) throw new Error(`mavlink session: ${points.length} frames sent, ${answer.written} written`);
    return { sentAt, committedAt, maxUs: NaN, seqFrom, seqTo: seq - 1 };
  });
}

/** 8 double channels at WIDE_HZ through Submit: each tick, the rows due (one, unless a call ran late). */
function wideStream(client: SortieClient, experimentId: string, datasetId: string): Stream {
  const periodMs = 1000 / WIDE_HZ;
  const startUs = Math.round(wallMs() * 1000);
  let row = 0;
  return scheduled(periodMs, async (dueAt) => {
    const points = [];
    let maxUs = 0;
    while (startUs + row * periodMs * 1000 <= dueAt * 1000) {
      const us = startUs + Math.round(row * periodMs * 1000);
      const seconds = Math.floor(us / 1e6);
      const timestamp = { seconds: BigInt(seconds), nanos: (us - seconds * 1e6) * 1000 };
      for (let c = 0; c < WIDE_CHANNELS; c++) points.push({ channelId: String(c), timestamp, type: { case: 'double' as const, value: Math.sin(row / 50 + c) * 10 + c } });
      maxUs = us;
      row++;
    }
    if (points.length === 0) return undefined;
    const sentAt = wallMs();
    const answer = await client.telemetry.submit({ experimentId, datasetId, points });
    const committedAt = wallMs();
    if (Number(answer.written) !== points.length) throw new Error(`wide submit: ${points.length} points sent, ${answer.written} written`);
    return { sentAt, committedAt, maxUs, seqFrom: 0, seqTo: 0 };
  });
}

// ---- Followers --------------------------------------------------------------------------------------------

interface Arrival {
  at: number;
  /** The update's head, µs; NaN when unset. */
  headUs: number;
}

interface BenchFollower {
  arrivals: Arrival[];
  opened: Promise<void>;
  resets: number;
  stop(): Promise<void>;
  failure(): unknown;
}

/** µs of a time as the client gives it: RFC 3339 text (to the µs or finer) or a protobuf Timestamp. */
function usOf(t: string | { seconds: bigint; nanos: number } | undefined | null): number {
  if (!t) return NaN;
  if (typeof t !== 'string') return Number(t.seconds) * 1e6 + Math.round(t.nanos / 1000);
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(t);
  if (!m) return NaN;
  return Date.parse(m[1]! + m[3]!) * 1000 + Math.round(Number(`0.${m[2] ?? '0'}`) * 1e6);
}

function follower(client: SortieClient, datasetId: string, channelIds: string[]): BenchFollower {
  const abort = new AbortController();
  const arrivals: Arrival[] = [];
  let failure: unknown;
  let resets = 0;
  let markOpened: () => void = () => {};
  const opened = new Promise<void>((r) => (markOpened = r));
  const done = (async () => {
    try {
      for await (const update of client.telemetry.follow({ datasetId, channelIds, windowMs: 60_000, maxPointsPerWindow: 1000 }, { signal: abort.signal })) {
        const at = wallMs();
        if (update.reset) {
          resets++;
          if (resets === 1) markOpened();
        }
        arrivals.push({ at, headUs: usOf(update.head as Parameters<typeof usOf>[0]) });
      }
    } catch (error) {
      failure = error;
      markOpened();
    }
  })();
  return {
    arrivals,
    opened,
    get resets() {
      return resets;
    },
    stop: async () => {
      abort.abort();
      await done;
    },
    failure: () => failure,
  };
}

/**
 * For each batch, when each follower had it: the first arrival whose head reaches the batch's newest
 * followed sample. Arrivals are scanned by their running maximum head (heads only grow, but a reset may
 * carry an older one).
 */
function deliveries(arrivals: readonly Arrival[], batches: ReadonlyArray<{ maxUs: number }>): number[] {
  const prefixMax: number[] = [];
  let max = -Infinity;
  for (const a of arrivals) prefixMax.push((max = Math.max(max, Number.isNaN(a.headUs) ? -Infinity : a.headUs)));
  return batches.map((b) => {
    let lo = 0;
    let hi = prefixMax.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      // Within 2 µs: the page reads heads as float seconds (samples are ≥ 20 ms apart, so nothing else is that close).
      if (prefixMax[mid]! >= b.maxUs - 2) hi = mid;
      else lo = mid + 1;
    }
    return lo < arrivals.length ? arrivals[lo]!.at : NaN;
  });
}

/** Live-bus announcements of a dataset's telemetry as a plain NATS subscriber hears them: the floor of any follower. */
async function announcements(nc: NatsConnection, datasetId: string) {
  const heard: number[] = [];
  const sub = nc.subscribe(`${NAMESPACE}.live.dataset.${datasetId}`, {
    callback: (err, msg) => {
      if (!err && msg.string() === 'telemetry') heard.push(wallMs());
    },
  });
  await nc.flush();
  return { heard, stop: () => sub.unsubscribe() };
}

// ---- CPU ----------------------------------------------------------------------------------------------------

interface Cpu {
  /** % of one core over the interval. */
  server: number;
  postgres: number;
  seconds: number;
}

function cpuInterval(server: BenchServer, databaseName: string) {
  const meter = new PostgresCpuMeter(databaseName);
  meter.start();
  const started = performance.now();
  const server0 = processCpuMs(server.child.pid!);
  return (): Cpu => {
    const ms = performance.now() - started;
    const serverMs = processCpuMs(server.child.pid!) - server0;
    const pg = meter.stop();
    return { server: (serverMs / ms) * 100, postgres: (pg.database / ms) * 100, seconds: ms / 1000 };
  };
}

// ---- Browser -----------------------------------------------------------------------------------------------

interface PixelTiming {
  /** Unix ms of the update's head (its newest sample), as the page read it. */
  headMs: number | undefined;
  receivedAt: number;
  drawnAt: number;
}

/** The console signed in and open on the dataset, following it live; the channels it follows, from its Follow requests. */
async function openConsole(browser: Browser, server: BenchServer, apiKey: string, experimentId: string, datasetId: string, channels: readonly string[]) {
  const page = await (await browser.newContext({ viewport: { width: 1400, height: 1000 } })).newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(error.message));
  const followed = new Set<string>();
  page.on('request', (request) => {
    if (!request.url().endsWith('.TelemetryService/Follow')) return;
    const body = request.postDataBuffer();
    if (!body) return;
    // Connect streaming: a 5-byte envelope before the message (binary) — or JSON.
    try {
      const message = fromBinary(FollowRequestSchema, body.subarray(5, 5 + body.readUInt32BE(1)));
      for (const c of message.channelIds) followed.add(c);
    } catch {
      try {
        for (const c of (JSON.parse(body.subarray(5).toString()) as { channelIds?: string[] }).channelIds ?? []) followed.add(c);
      } catch {
        problems.push('a Follow request the bench could not read');
      }
    }
  });
  await page.goto(`${server.httpUrl}/`);
  await page.fill('#api-key', apiKey);
  await page.click('button[type=submit]');
  await page.waitForSelector('[data-testid=organization]');
  await page.goto(`${server.httpUrl}/?experiment=${experimentId}&dataset=${datasetId}${channels.map((c) => `&channel=${encodeURIComponent(c)}`).join('')}`);
  return { page, problems, followed };
}

async function pageTimings(page: Page): Promise<{ timeOrigin: number; timings: PixelTiming[] }> {
  return page.evaluate(() => {
    const live = (globalThis as unknown as { __sortieLive?: { timings: PixelTiming[] } }).__sortieLive;
    return { timeOrigin: performance.timeOrigin, timings: live ? [...live.timings] : [] };
  });
}

// ---- One streaming phase ------------------------------------------------------------------------------------

interface LatencyStats {
  p50: number;
  p99: number;
  n: number;
  missing: number;
}

function stats(values: number[], missing = 0): LatencyStats {
  const sorted = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), n: sorted.length, missing: missing + (values.length - sorted.length) };
}

interface PhaseResult {
  name: string;
  batchesPerSecond: number;
  samplesPerBatch: string;
  delivery: LatencyStats;
  /** From the batch sent. */
  deliveryFromSend: LatencyStats;
  announce: LatencyStats;
  /** Batches of the interval left out: no followed message in them, or nothing newer than an earlier batch. */
  skipped: number;
  /** Share of the followers' heads found among the stored samples' times (1: the matching is exact). */
  headsFound: number;
  pixel: (LatencyStats & { followed: string[]; updates: number; skipped: number; headsFound: number; node: LatencyStats }) | null;
  cpu: { idle1: Cpu; followed: Cpu; idle2: Cpu; perFollowerServer: number; perFollowerPostgres: number; followersServer: number; followersTotal: number };
  resets: number;
  /** Updates each follower received per second, on average, in the followed interval. */
  updatesPerSecond: number;
}

async function streamingPhase(
  name: 'mavlink' | 'wide',
  ctx: { server: BenchServer; database: { name: string }; apiKey: string; handle: DatabaseHandle; nc: NatsConnection; browser: Browser | null },
): Promise<PhaseResult> {
  const { server, apiKey } = ctx;
  const client = createSortieClient({ baseUrl: server.httpUrl, apiKey });
  const experiment = await api(server.httpUrl, apiKey, '/api/experiments/create', { name: `live bench ${name}` });
  const datasetId =
    name === 'mavlink'
      ? ((
          await api(server.httpUrl, apiKey, '/api/streams/register', {
            experimentId: experiment.id,
            datasetName: 'SITL flight, live',
            storageShape: 'narrow',
            codec: 'mavlink',
            dialect: 'ardupilotmega',
            format: 'mavlink-raw-v1',
          })
        ).datasetId as string)
      : await registerWideDataset(server.httpUrl, apiKey, experiment.id, 'rig, 8 channels at 50 Hz', WIDE_CHANNELS);
  const heard = await announcements(ctx.nc, datasetId);
  const stream =
    name === 'mavlink'
      ? mavlinkStream(createStreamSubmitClient({ grpcUrl: `http://127.0.0.1:${server.grpcPort}`, apiKey }), experiment.id, datasetId)
      : wideStream(client, experiment.id, datasetId);
  const sets = name === 'mavlink' ? MAVLINK_SETS : WIDE_SETS;
  const check = () => {
    if (stream.failure()) throw stream.failure();
  };

  await sleep(WARMUP_SECONDS * 1000);
  check();
  let cpu = cpuInterval(server, ctx.database.name);
  await sleep(SECONDS * 1000);
  const idle1 = cpu();
  check();

  const followers = Array.from({ length: FOLLOWERS }, (_, i) => follower(client, datasetId, sets[i % sets.length]!));
  await Promise.all(followers.map((f) => f.opened));
  for (const f of followers) if (f.failure()) throw f.failure();
  await sleep(1000);
  const measuredFrom = wallMs();
  cpu = cpuInterval(server, ctx.database.name);
  await sleep(SECONDS * 1000);
  const followed = cpu();
  const measuredTo = wallMs();
  check();

  // The console, with the followers still on.
  let pixelWindow: { from: number; to: number } | null = null;
  let pixelRaw: { timeOrigin: number; timings: PixelTiming[]; followed: Set<string>; problems: string[] } | null = null;
  if (ctx.browser && PIXEL_SECONDS > 0) {
    // Two plots of the first set; the page adds what its views need (a MAVLink flight's track and mode band).
    const shown = name === 'mavlink' ? sets[0]!.slice(0, 2) : sets[0]!.slice(0, 2).map((c) => `ch_${c}`);
    const opened = await openConsole(ctx.browser, server, apiKey, experiment.id, datasetId, shown);
    // Until the page follows live (its first update drawn), then the timed interval.
    const deadline = Date.now() + 30_000;
    while ((await pageTimings(opened.page)).timings.length === 0) {
      if (Date.now() > deadline) throw new Error(`${name}: the console drew no live update within 30 s of opening the dataset (window.__sortieLive)`);
      await sleep(200);
    }
    await sleep(1000);
    pixelWindow = { from: wallMs(), to: 0 };
    await sleep(PIXEL_SECONDS * 1000);
    pixelWindow.to = wallMs();
    await sleep(GRACE_MS);
    pixelRaw = { ...(await pageTimings(opened.page)), followed: opened.followed, problems: opened.problems };
    await opened.page.context().close();
  }
  await sleep(GRACE_MS);
  const resets = followers.reduce((n, f) => n + f.resets - 1, 0);
  await Promise.all(followers.map((f) => f.stop()));
  for (const f of followers) if (f.failure()) throw f.failure();
  await sleep(1000);

  cpu = cpuInterval(server, ctx.database.name);
  await sleep(SECONDS * 1000);
  const idle2 = cpu();
  await stream.stop();
  check();
  await sleep(500);
  heard.stop();

  // Each batch's newest sample among the messages the feed read (the union of what its subscribers
  // follow), which is the `head` of the update that carries it. Narrow: read back from storage on the
  // aligned time the feed computed; that the followers' heads are among those times is checked below.
  const batches = stream.batches;
  type Timing = { maxOf: (b: Batch) => number; times: Set<number> | null };
  const timingOf = async (signals: readonly string[]): Promise<Timing> => {
    if (name === 'wide') return { maxOf: (b) => b.maxUs, times: null };
    const tables = await loadMessageTables(ctx.handle.db, datasetId);
    const shifts = (await loadBootSessions(ctx.handle.db, datasetId)).map(sessionShift);
    const bySeq = new Map<number, number>();
    for (const msgid of new Set(signals.map((s) => signalColumn(s)!.msgid))) {
      const table = tables.get(msgid);
      if (!table) continue;
      for (const row of await messageTableTail(ctx.handle.db, table, [], shifts, '0', 10_000_000)) {
        bySeq.set(Number(row.seq), Math.max(bySeq.get(Number(row.seq)) ?? -Infinity, row.t));
      }
    }
    const seqs = [...bySeq.keys()].sort((a, b) => a - b);
    return {
      maxOf: (b) => {
        let max = NaN;
        for (const s of seqs) if (s >= b.seqFrom && s <= b.seqTo) max = Number.isNaN(max) ? bySeq.get(s)! : Math.max(max, bySeq.get(s)!);
        return max;
      },
      times: new Set(bySeq.values()),
    };
  };
  /**
   * The batches of `window` (by `at`) with their newest sample: those whose newest sample is newer than
   * every earlier batch's (else an earlier update's head would already reach it; none in a wide stream,
   * and in the capture only after a silence) and that hold a followed message at all.
   */
  const timedBatches = (timing: Timing, inWindow: (b: Batch) => boolean) => {
    let newest = -Infinity;
    const out: Batch[] = [];
    let skipped = 0;
    for (const b of batches) {
      const maxUs = timing.maxOf(b);
      const later = maxUs > newest;
      if (!Number.isNaN(maxUs)) newest = Math.max(newest, maxUs);
      if (!inWindow(b)) continue;
      if (Number.isNaN(maxUs) || !later) skipped++;
      else out.push({ ...b, maxUs });
    }
    return { timed: out, skipped };
  };
  /** Of the heads the followers saw, the share that are sample times in storage (narrow: the alignment did not move under them). */
  const headsFound = (timing: Timing, heads: number[]) => (timing.times ? heads.filter((h) => timing.times!.has(h) || timing.times!.has(h - 1) || timing.times!.has(h + 1)).length / Math.max(1, heads.length) : 1);

  // 1. commit → follower, over the batches committed in the followed interval.
  const followerTiming = await timingOf(sets.flat());
  const { timed, skipped } = timedBatches(followerTiming, (b) => b.committedAt >= measuredFrom && b.committedAt < measuredTo);
  const fromCommit: number[] = [];
  const fromSend: number[] = [];
  for (const f of followers) {
    deliveries(f.arrivals, timed).forEach((at, i) => {
      fromCommit.push(at - timed[i]!.committedAt);
      fromSend.push(at - timed[i]!.sentAt);
    });
  }
  const followerHeads = followers.flatMap((f) => f.arrivals.filter((a) => a.at >= measuredFrom && a.at < measuredTo && !Number.isNaN(a.headUs)).map((a) => a.headUs));
  const followerHeadsFound = headsFound(followerTiming, followerHeads);
  // The floor: the k-th telemetry announcement is the k-th committed batch's (one call, one commit, one announcement).
  const announce: number[] = [];
  if (heard.heard.length === batches.length) batches.forEach((b, k) => b.committedAt >= measuredFrom && b.committedAt < measuredTo && announce.push(heard.heard[k]! - b.committedAt));
  else console.warn(`${name}: ${heard.heard.length} announcements heard for ${batches.length} batches; no announcement floor`);

  // 2. frame receipt → pixel, over the batches sent in the pixel interval.
  let pixel: PhaseResult['pixel'] = null;
  if (pixelRaw && pixelWindow) {
    if (pixelRaw.problems.length > 0) throw new Error(`${name}: page errors: ${pixelRaw.problems.join('; ')}`);
    // While the page was open the feed read its channels too.
    const pageTiming = await timingOf([...new Set([...sets.flat(), ...[...pixelRaw.followed].filter((c) => signalColumn(c))])]);
    const window = pixelWindow;
    const page = timedBatches(pageTiming, (b) => b.sentAt >= window.from && b.sentAt < window.to);
    const drawn: Arrival[] = pixelRaw.timings.map((t) => ({ at: pixelRaw.timeOrigin + t.drawnAt, headUs: t.headMs === undefined ? NaN : Math.round(t.headMs * 1000) }));
    const pixels = deliveries(drawn, page.timed).map((at, i) => at - page.timed[i]!.sentAt);
    const heads = drawn.filter((d) => d.at >= window.from && !Number.isNaN(d.headUs)).map((d) => d.headUs);
    // Baseline: the Node followers (still following) for the same batches, from the same send.
    const node = followers.flatMap((f) => deliveries(f.arrivals, page.timed).map((at, i) => at - page.timed[i]!.sentAt));
    pixel = { ...stats(pixels), followed: [...pixelRaw.followed], updates: pixelRaw.timings.length, skipped: page.skipped, headsFound: headsFound(pageTiming, heads), node: stats(node) };
  }

  const updates = followers.reduce((n, f) => n + f.arrivals.filter((a) => a.at >= measuredFrom && a.at < measuredTo).length, 0);
  const updatesPerSecond = updates / FOLLOWERS / ((measuredTo - measuredFrom) / 1000);
  const idleServer = (idle1.server + idle2.server) / 2;
  const idlePostgres = (idle1.postgres + idle2.postgres) / 2;
  const samples = name === 'mavlink' ? batches.map((b) => b.seqTo - b.seqFrom + 1) : [WIDE_CHANNELS];
  const spanS = (batches.at(-1)!.committedAt - batches[0]!.committedAt) / 1000;
  return {
    name,
    batchesPerSecond: (batches.length - 1) / spanS,
    samplesPerBatch: name === 'mavlink' ? `${fmt(samples.reduce((a, b) => a + b, 0) / samples.length)} frames` : `${WIDE_CHANNELS} points (1 row)`,
    delivery: stats(fromCommit),
    skipped,
    headsFound: followerHeadsFound,
    deliveryFromSend: stats(fromSend),
    announce: stats(announce),
    pixel,
    cpu: {
      idle1,
      followed,
      idle2,
      followersServer: followed.server - idleServer,
      followersTotal: followed.server - idleServer + followed.postgres - idlePostgres,
      perFollowerServer: (followed.server - idleServer) / FOLLOWERS,
      perFollowerPostgres: (followed.postgres - idlePostgres) / FOLLOWERS,
    },
    resets,
    updatesPerSecond,
  };
}

// ---- Limits: full-rate ingest with and without 20 rules --------------------------------------------------------

const INGEST_ROWS = 1000;

function ingestRows(s: number, b: number): BenchRows {
  const timesUs = new Float64Array(INGEST_ROWS);
  const values = Array.from({ length: WIDE_CHANNELS }, () => new Float64Array(INGEST_ROWS));
  const startUs = (Math.floor(Date.now() / 86_400_000) - 1) * 86_400_000_000;
  for (let r = 0; r < INGEST_ROWS; r++) {
    const i = b * INGEST_ROWS + r;
    timesUs[r] = startUs + i * 50;
    for (let c = 0; c < WIDE_CHANNELS; c++) values[c]![r] = Math.sin(i / 2000 + c + s) * 100 + ((i * 7919 + c) % 101) / 100;
  }
  return { timesUs, values };
}

/** The 20 rules: every channel watched, none crossed by the data (|value| ≤ 101), so each costs its evaluation only. */
function limitRules(experimentId: string) {
  return Array.from({ length: LIMIT_RULES }, (_, i) => {
    const signal = String(i % WIDE_CHANNELS);
    const kind = i % 3;
    const bounds = kind === 0 ? { condition: 'above', high: 150 + i } : kind === 1 ? { condition: 'below', low: -150 - i } : { condition: 'outside', low: -200 - i, high: 200 + i };
    return { experimentId, name: `bench rule ${i}`, signal, ...bounds, holdMs: (i % 4) * 100, severity: i % 2 ? 'warning' : 'critical' };
  });
}

async function ingestInterval(server: BenchServer, apiKey: string, experimentId: string, datasets: string[]) {
  const session = http2.connect(`http://127.0.0.1:${server.grpcPort}`);
  const started = performance.now();
  const deadline = started + INGEST_SECONDS * 1000;
  const counts = await Promise.all(
    datasets.map(async (datasetId, s) => {
      const stream = openStreamSubmit(session, apiKey);
      await stream.write(encodeHeaderFrame(experimentId, datasetId));
      let batches = 0;
      while (performance.now() < deadline) await stream.write(encodeBatchFrame(ingestRows(s, batches++)));
      const response = await stream.finish();
      if (Number(response.written) !== batches * INGEST_ROWS * WIDE_CHANNELS) throw new Error(`ingest stream ${s}: sent ${batches * INGEST_ROWS * WIDE_CHANNELS} points, written ${response.written}`);
      return batches;
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  session.close();
  return (counts.reduce((a, b) => a + b, 0) * INGEST_ROWS * WIDE_CHANNELS) / elapsed;
}

async function limitsPhase(server: BenchServer, apiKey: string, handle: DatabaseHandle) {
  const without = await api(server.httpUrl, apiKey, '/api/experiments/create', { name: 'ingest without limit rules' });
  const withRules = await api(server.httpUrl, apiKey, '/api/experiments/create', { name: 'ingest with 20 limit rules' });
  for (const rule of limitRules(withRules.id)) await api(server.httpUrl, apiKey, '/api/limits/create', rule);
  const listed = await fetch(`${server.httpUrl}/api/limits/list?experimentId=${withRules.id}`, { headers: { 'x-api-key': apiKey } });
  const ruleCount = ((await listed.json()) as unknown[]).length;
  if (ruleCount !== LIMIT_RULES) throw new Error(`${ruleCount} limit rules listed, ${LIMIT_RULES} created`);
  const runs: Array<{ rules: boolean; rate: number }> = [];
  let round = 0;
  for (const rules of [false, true, true, false]) {
    const experiment = rules ? withRules : without;
    const datasets: string[] = [];
    for (let s = 0; s < INGEST_STREAMS; s++) datasets.push(await registerWideDataset(server.httpUrl, apiKey, experiment.id, `round ${round} stream ${s}`, WIDE_CHANNELS));
    round++;
    runs.push({ rules, rate: await ingestInterval(server, apiKey, experiment.id, datasets) });
  }
  const mean = (rules: boolean) => runs.filter((r) => r.rules === rules).reduce((a, r) => a + r.rate, 0) / 2;
  // Nothing crossed: the rules cost their evaluation only (checked: no LIMIT event stored).
  const events = await sql<{ n: number }>`select count(*)::int as n from events where kind = 'LIMIT'`.execute(handle.db);
  return { runs, without: mean(false), with: mean(true), ratio: mean(true) / mean(false), ruleCount, limitEvents: events.rows[0]!.n };
}

// ---- Run ---------------------------------------------------------------------------------------------------------

const database = await createTestDatabase();
const server = await startServerProcess(database.url, 'info', undefined, { SORTIE_NATS_URL: NATS_URL, SORTIE_NATS_NAMESPACE: NAMESPACE });
const { apiKey, handle } = await createOrgAndKey(database.url);
const nc = await natsConnect({ servers: NATS_URL, name: 'bench-live' });
const wantPixel = PIXEL_SECONDS > 0 && (PHASES.has('mavlink') || PHASES.has('wide'));
const browser = wantPixel ? await launchChromium() : null;
console.log(
  `bench:live — server in a child process (PostgreSQL ${new URL(database.url).host}, NATS ${NATS_URL}); ${os.cpus().length} CPUs, load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}; ` +
    `${FOLLOWERS} followers × 4 channels; ${SECONDS} s per interval; phases ${[...PHASES].join(', ')}` +
    (browser ? `; ${browser.version()} at ${CHROMIUM}` : ''),
);
const results: Record<string, unknown> = {};
// Other work on the machine: the 1-minute load average, every 5 s.
const loads: number[] = [os.loadavg()[0]!];
const loadTimer = setInterval(() => loads.push(os.loadavg()[0]!), 5000);
try {
  const phaseResults: PhaseResult[] = [];
  for (const name of ['mavlink', 'wide'] as const) {
    if (!PHASES.has(name)) continue;
    const r = await streamingPhase(name, { server, database, apiKey, handle, nc, browser });
    phaseResults.push(r);
    results[name] = r;
    const c = r.cpu;
    console.log(`${name === 'mavlink' ? 'SITL capture at 1× (StreamSubmit sessions)' : `8 channels at ${WIDE_HZ} Hz (Submit)`}: ${r.batchesPerSecond.toFixed(1)} commits/s, ${r.samplesPerBatch} each`);
    console.log(`  commit → follower   : p50 ${f1(r.delivery.p50)} ms, p99 ${f1(r.delivery.p99)} ms over ${fmt(r.delivery.n)} (batch, follower) pairs${r.delivery.missing ? `, ${r.delivery.missing} never delivered` : ''}${r.resets ? `, ${r.resets} resets` : ''}; ${r.updatesPerSecond.toFixed(1)} updates/s per follower${r.skipped ? `; ${r.skipped} batches not timed (no followed message, or none newer)` : ''}${r.headsFound < 1 ? `; only ${(r.headsFound * 100).toFixed(1)} % of heads are stored times` : ''}`);
    console.log(`  floor: commit → announcement heard on NATS: p50 ${f1(r.announce.p50)} ms, p99 ${f1(r.announce.p99)} ms (follow adds p50 ${f1(r.delivery.p50 - r.announce.p50)} ms)`);
    if (r.pixel) {
      console.log(
        `  receipt → pixel     : p99 ${f1(r.pixel.p99)} ms, p50 ${f1(r.pixel.p50)} ms over ${fmt(r.pixel.n)} batches${r.pixel.missing ? ` (${r.pixel.missing} never drawn)` : ''} (${r.pixel.updates} updates drawn; page follows ${r.pixel.followed.join(', ') || '—'}${r.pixel.skipped ? `; ${r.pixel.skipped} batches not timed` : ''}${r.pixel.headsFound < 1 ? `; ${(r.pixel.headsFound * 100).toFixed(1)} % of heads stored times` : ''})` +
          `; baseline, the Node followers' updates carrying the same batches, from the same send: p99 ${f1(r.pixel.node.p99)} ms, p50 ${f1(r.pixel.node.p50)} ms (ratio ${(r.pixel.p99 / r.pixel.node.p99).toFixed(1)}×)`,
      );
    }
    console.log(
      `  CPU, % of one core  : server ${f1(c.idle1.server)} / ${f1(c.followed.server)} / ${f1(c.idle2.server)}, PostgreSQL ${f1(c.idle1.postgres)} / ${f1(c.followed.postgres)} / ${f1(c.idle2.postgres)} (no followers / ${FOLLOWERS} / none)`,
    );
    console.log(
      `  ${FOLLOWERS} followers cost  : server ${f1(c.followersServer)} %, with PostgreSQL ${f1(c.followersTotal)} % of one core (per follower ${c.perFollowerServer.toFixed(2)} + ${c.perFollowerPostgres.toFixed(2)} %)`,
    );
  }
  if (PHASES.has('limits')) {
    const l = await limitsPhase(server, apiKey, handle);
    results.limits = l;
    console.log(
      `ingest, ${INGEST_STREAMS} StreamSubmit streams at full rate: without rules ${fmt(l.without)} points/s, with ${l.ruleCount} rules ${fmt(l.with)} points/s → ${(l.ratio * 100).toFixed(0)} % ` +
        `(rounds ${l.runs.map((r) => `${r.rules ? 'rules' : 'none'} ${fmt(r.rate)}`).join(', ')})`,
    );
  }
  const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
  for (const r of phaseResults) {
    console.log(
      `targets (${r.name}): commit → follower p50 ≤ ${TARGET_P50_MS} ms ${verdict(r.delivery.p50 <= TARGET_P50_MS)}, p99 ≤ ${TARGET_P99_MS} ms ${verdict(r.delivery.p99 <= TARGET_P99_MS)}; ` +
        (r.pixel ? `receipt → pixel p99 ≤ ${TARGET_PIXEL_P99_MS} ms ${verdict(r.pixel.p99 <= TARGET_PIXEL_P99_MS)}; ` : '') +
        `${FOLLOWERS} followers ≤ ${TARGET_CORE_PERCENT} % of one core ${verdict(r.cpu.followersTotal <= TARGET_CORE_PERCENT)}`,
    );
  }
  if (results.limits) console.log(`targets (limits): ingest with ${LIMIT_RULES} rules ≥ ${TARGET_LIMITS_RATIO * 100} % of without ${verdict((results.limits as { ratio: number }).ratio >= TARGET_LIMITS_RATIO)}`);
  const load = { min: Math.min(...loads), max: Math.max(...loads), mean: loads.reduce((a, b) => a + b, 0) / loads.length };
  console.log(`load average (1 min) during the run: ${load.min.toFixed(2)}–${load.max.toFixed(2)}, mean ${load.mean.toFixed(2)} (2 cores)`);
  console.log(`BENCH_LIVE_JSON ${JSON.stringify({ followers: FOLLOWERS, seconds: SECONDS, load, ...results })}`);
} finally {
  clearInterval(loadTimer);
  await browser?.close();
  await nc.close();
  await server.stop();
  // The server made a delivery stream in its namespace: the shared NATS keeps none of a bench's.
  await dropDeliveryStream(NATS_URL, NAMESPACE);
  await handle.close();
  await database.drop();
}
