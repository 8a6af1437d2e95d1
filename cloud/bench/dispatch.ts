/**
 * npm run bench:dispatch — the command path under load, all on this machine:
 *   this process: the load driver and a local HTTPS receiver (certificate made for the run);
 *   a child process: the cloud (Postgres + JetStream, as deployed).
 *
 * Phase 1, latency: dispatches at a steady 200/s (open loop) → dispatch request latency and
 *   dispatch-to-receipt latency (dispatch sent → the receiver has the POST), p50/p99.
 * Phase 1's floor, same run: the same load on the least any dispatch service does (dispatch-floor.ts:
 *   one durable statement, the answer, the POST, a batched attempt row, in a process of its own), so
 *   the cloud's CPU per dispatch can be read against what this machine charges today for that much.
 * Phase 2, throughput: commands fanned out to 10 endpoints, dispatched as fast as the API takes them →
 *   sustained deliveries/s at the receiver.
 * Baseline, same run: a bare undici POST loop (keep-alive, same concurrency, same body size) to the
 *   same receiver: what the receiver and TLS allow at all.
 * Floor, same run: phase 2's dispatches served and delivered the least any implementation of the spec
 *   does: the dispatch floor fanned out (one durable statement moving the command and writing its outbox
 *   rows, the answer, a JetStream publish per row), then delivery-floor.ts (pull, POST, attempt row, ack)
 *   — no engine logic. The ratio is taken against it. Printed beside it, delivery alone: the same jobs
 *   written in bulk from here, with no dispatch served (what the ratio was taken against until the
 *   floor was found to leave out the 2,500 dispatch requests the cloud serves in the same phase).
 *
 * CPU time of each party (/proc) is read around every phase and printed per delivery: where a
 * 2-core machine's time goes, and what that allows at most.
 *
 * The cloud child counts its statements (count-statements.ts, preloaded), printed per dispatch and per
 * delivery by shape: the round-trip budget.
 *
 * Targets: dispatch p99 ≤ 10 ms; receipt p50 ≤ 15 ms, p99 ≤ 50 ms at 200/s; CPU per dispatch with its
 * delivery ≤ 1.5 ms across all parties; deliveries sustained ≥ 70 % of the same run's durable floor.
 * Env: BENCH_SECONDS (phase 1 length, default 15), BENCH_FLOOR_BATCH (64) and BENCH_FLOOR_WORKERS (4):
 * the floor's pull size and concurrent pullers; BENCH_CHILD_NODE_OPTIONS: node flags for the cloud child
 * only (e.g. "--cpu-prof --cpu-prof-dir=.tmp/prof"); BENCH_DISPATCH_CONCURRENCY (16): phase 2's dispatches
 * in flight at once (1 or 2 keep the dispatch rate near what the engine delivers, so few jobs spill to
 * JetStream: what the queue path costs on top, by difference).
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { SCOPES } from '@sortie/contracts';
import { Agent, Pool, request } from 'undici';
import { issueApiKey } from '../src/auth/api-keys.ts';
import { createOrganization } from '../src/auth/organizations.ts';
import { writeCommandWebhooksEnabled } from '../src/commands/settings.ts';
import { mapLimit } from '../src/platform/map-limit.ts';
import { startChildCloudFixture } from '../src/testing/child-cloud-fixture.ts';
import { RECEIVER_HOST } from '../src/testing/delivery-fixture.ts';
import { TEST_NATS_URL } from '../src/testing/nats-server.ts';
import { startServiceChild } from '../src/testing/service-child.ts';
import { deliveryFloorSubject, runDeliveryFloor } from './delivery-floor.ts';
import { startDispatchFloor } from './dispatch-floor.ts';
import { ownCpuMs, processCpuMs, startFlags } from './bench-env.ts';
import { PostgresCpuMeter } from './postgres-cpu.ts';

const PHASE1_SECONDS = Number(process.env.BENCH_SECONDS ?? 15);
const PHASE1_RATE = 200;
const FANOUT = 10;
const PHASE2_COMMANDS = 2500;
const DISPATCH_CONCURRENCY = Number(process.env.BENCH_DISPATCH_CONCURRENCY ?? 16);
const BASELINE_SECONDS = 10;
const FLOOR_BATCH = Number(process.env.BENCH_FLOOR_BATCH ?? 64);
const FLOOR_WORKERS = Number(process.env.BENCH_FLOOR_WORKERS ?? 4);

const now = () => performance.timeOrigin + performance.now();
const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const ms = (x: number) => `${x.toFixed(2)} ms`;
const log = (...a: unknown[]) => console.error('[bench:dispatch]', ...a);

// A database, NATS namespace, certificate and data dir of the run's own, as the child-process tests use.
const fixture = await startChildCloudFixture();
const { cert, testDb, namespace } = fixture;

// ---- receiver -----------------------------------------------------------------------------------
const receipts = new Map<string, number>(); // command id → first receipt time
let received = 0;
const receiver = createServer({ cert: cert.cert, key: cert.key }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    received += 1;
    if (req.url !== '/baseline') {
      const id = (JSON.parse(Buffer.concat(chunks).toString()) as { command: { id: string } }).command.id;
      if (!receipts.has(id)) receipts.set(id, now());
    }
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
  });
});
await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
const receiverPort = (receiver.address() as AddressInfo).port;

// ---- the cloud in a child process ------------------------------------------------------------------
// The child counts its statements (count-statements.ts, preloaded); BENCH_CHILD_NODE_OPTIONS adds
// flags for it alone, e.g. "--cpu-prof --cpu-prof-dir=.tmp/prof".
const statementsFile = path.join(tmpdir(), `sortie-bench-statements-${process.pid}.json`);
const child = await startServiceChild(
  fixture.env({
    SORTIE_LOG_LEVEL: 'warn',
    BENCH_STATEMENTS_FILE: statementsFile,
    // npm start's flags first (bench-env.ts startFlags): the cloud measured as it is run.
    NODE_OPTIONS: [...startFlags(), `--import=${path.join(import.meta.dirname, 'count-statements.ts')}`, process.env.BENCH_CHILD_NODE_OPTIONS ?? ''].join(' '),
  }),
);
const apiPort = child.port;
const api = new Pool(`http://127.0.0.1:${apiPort}`, { connections: 64 });

async function cleanup() {
  rmSync(statementsFile, { force: true });
  child.process.kill('SIGTERM');
  await child.exited;
  await api.close();
  receiver.closeAllConnections();
  receiver.close();
  await fixture.close();
}

// ---- setup through the API and the database ---------------------------------------------------------
const db = fixture.database.db;
await writeCommandWebhooksEnabled(db, true, new Date());

async function post(key: string, p: string, body: unknown) {
  const r = await api.request({ method: 'POST', path: p, headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const json = (await r.body.json()) as any;
  if (r.statusCode >= 300) throw new Error(`${p}: ${r.statusCode} ${JSON.stringify(json)}`);
  return json;
}

async function setupOrg(endpoints: number) {
  const { organizationId, ownerUserId } = await createOrganization(db, 'bench');
  const { apiKey } = await issueApiKey(db, { organizationId, userId: ownerUserId, scopes: [...SCOPES] });
  for (let i = 0; i < endpoints; i++) {
    await post(apiKey, '/api/webhooks/create', { label: `r${i}`, url: `https://${RECEIVER_HOST}:${receiverPort}/hook/${i}` });
  }
  const exp = await post(apiKey, '/api/experiments/create', { name: 'bench' });
  const reg = await post(apiKey, '/api/streams/register', { experimentId: exp.id, datasetName: 'vehicle', channels: [{ name: 'alt' }] });
  await post(apiKey, '/api/datasets/arm', { datasetId: reg.datasetId, ttlSeconds: 43200 });
  return { organizationId, apiKey, experimentId: exp.id as string, datasetId: reg.datasetId as string };
}

/** Commands logged straight into the table: the bench measures dispatch and delivery, not create. */
async function logCommands(org: Awaited<ReturnType<typeof setupOrg>>, count: number): Promise<string[]> {
  const ids = Array.from({ length: count }, () => crypto.randomUUID());
  for (let i = 0; i < ids.length; i += 1000) {
    await db
      .insertInto('commands')
      .values(
        ids.slice(i, i + 1000).map((id, j) => ({
          id,
          organization_id: org.organizationId,
          experiment_id: org.experimentId,
          dataset_id: org.datasetId,
          command_text: 'SET_MODE',
          description: '',
          args: JSON.stringify({ mode: 'LOITER', seq: i + j }),
          template_key: '',
          category: 'flight',
          rel_time: i + j,
          issued_at: new Date(),
          issued_by_name: '',
          issued_by_email: '',
          status: 'logged',
          status_detail: '',
        })),
      )
      .execute();
  }
  return ids;
}

/** One JSON POST that must answer 200; resolves to its latency in ms. */
async function timedPost(pool: Pool, path: string, body: unknown, headers: Record<string, string> = {}): Promise<number> {
  const started = now();
  const r = await pool.request({ method: 'POST', path, headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  await r.body.dump();
  if (r.statusCode !== 200) throw new Error(`POST ${path} answered ${r.statusCode}`);
  return now() - started;
}

/** Phase 2's way of dispatching, the cloud's and its floor's alike: DISPATCH_CONCURRENCY at once, in order. */
function dispatchAll<R>(ids: readonly string[], send: (id: string) => Promise<R>): Promise<R[]> {
  return mapLimit(ids, DISPATCH_CONCURRENCY, send);
}

function dispatch(key: string, commandId: string): Promise<number> {
  return timedPost(api, '/api/commands/dispatch', { commandId, ackTimeoutSeconds: 600 }, { 'x-api-key': key });
}

/**
 * CPU ms of each nats-server process now, by pid. A phase counts only the servers alive at both its
 * ends: the long-lived one the cloud uses; other tests on a shared machine start and stop servers of
 * their own, whose CPU would otherwise come and go from the sum (and could make it negative).
 */
function natsCpuByPid(): Map<string, number> {
  const byPid = new Map<string, number>();
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'nats-server') byPid.set(pid, processCpuMs(Number(pid)));
    } catch {
      // ended while we looked
    }
  }
  return byPid;
}
const natsDelta = (before: Map<string, number>, after: Map<string, number>) =>
  [...after].reduce((sum, [pid, ms]) => sum + (before.has(pid) ? ms - before.get(pid)! : 0), 0);

/** The cloud's statements so far, by shape (count-statements.ts writes them on SIGUSR2). */
async function statementsNow(): Promise<Record<string, number>> {
  const before = readStatements()?.at ?? 0;
  child.process.kill('SIGUSR2');
  for (let i = 0; i < 500; i++) {
    const now = readStatements();
    if (now && now.at > before) return now.counts;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('the cloud child did not write its statement counts');
}
function readStatements(): { at: number; counts: Record<string, number> } | undefined {
  try {
    return JSON.parse(readFileSync(statementsFile, 'utf8'));
  } catch {
    return undefined;
  }
}
/**
 * CPU of each party over a phase: the cloud, this database's Postgres backends (and all of Postgres),
 * the NATS server, this process (driver + receiver); and the cloud's statements (each one round trip).
 * `per(count)` ends the phase and divides by `count` (dispatches or deliveries).
 */
async function startMeasuring(service: { pid: number; countsStatements: boolean } = { pid: child.process.pid!, countsStatements: true }) {
  const postgres = new PostgresCpuMeter(testDb.name);
  const statementsNowIfCounted = async (): Promise<Record<string, number>> => (service.countsStatements ? statementsNow() : {});
  const statements = await statementsNowIfCounted();
  postgres.start();
  const cpu = { cloud: processCpuMs(service.pid), nats: natsCpuByPid(), bench: ownCpuMs() };
  return {
    async per(count: number) {
      const after = { cloud: processCpuMs(service.pid), nats: natsCpuByPid(), bench: ownCpuMs() };
      const pg = postgres.stop();
      const f = (x: number) => Number((x / count).toFixed(3));
      const r = { cloud: f(after.cloud - cpu.cloud), postgres: f(pg.database), nats: f(natsDelta(cpu.nats, after.nats)), bench: f(after.bench - cpu.bench) };
      const statementsAfter = await statementsNowIfCounted();
      const byShape = Object.entries(statementsAfter)
        .map(([shape, n]) => [shape, n - (statements[shape] ?? 0)] as const)
        .filter(([, n]) => n > 0)
        .sort((a, b) => b[1] - a[1])
        .map(([shape, n]) => ({ perItem: f(n), shape }));
      return {
        ...r,
        total: Number((r.cloud + r.postgres + r.nats + r.bench).toFixed(3)),
        postgresAllProcesses: f(pg.all),
        statements: f(byShape.reduce((sum, s) => sum + s.perItem * count, 0)),
        byShape,
      };
    },
  };
}

async function waitUntil(check: () => boolean, timeoutMs: number) {
  const until = Date.now() + timeoutMs;
  while (!check() && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
}

/** Sends one request per id at PHASE1_RATE, on schedule whatever the answers take (open loop). */
async function openLoop<T>(ids: string[], send: (id: string) => Promise<T>): Promise<T[]> {
  const start = now();
  const inflight: Promise<T>[] = [];
  for (let i = 0; i < ids.length; i++) {
    const wait = start + (i * 1000) / PHASE1_RATE - now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    inflight.push(send(ids[i]!));
  }
  return Promise.all(inflight);
}

/**
 * Dispatches the first ids.length − 200 of `ids` open-loop at PHASE1_RATE (the last 200 first, at the
 * same rate, as a warm-up), waits for every receipt, and returns the request and dispatch → receipt
 * latencies and every party's CPU per dispatch.
 */
async function latencyPhase(send: (commandId: string) => Promise<number>, ids: string[], measure: () => ReturnType<typeof startMeasuring>) {
  const total = ids.length - 200;
  const measured = ids.slice(0, total);
  const warmUp = ids.slice(total);
  // Warm-up at the phase's own rate, so the phase starts with the connections a steady 200/s keeps open
  // (the driver's to the service, the service's to PostgreSQL and its TLS connections to the receiver).
  // One request at a time left one of each, and the phase's first second measured their opening —
  // backends forked, statements prepared, TLS handshakes — as a burst of 30–600 ms requests.
  await openLoop(warmUp, send);
  await waitUntil(() => warmUp.every((id) => receipts.has(id)), 10_000);
  const sentAt = new Map<string, number>();
  const requestMs: number[] = [];
  const cpu = await measure();
  const start = now();
  await openLoop(measured, (id) => {
    sentAt.set(id, now());
    return send(id).then((t) => void requestMs.push(t));
  });
  await waitUntil(() => measured.every((id) => receipts.has(id)), 30_000);
  const monotonicSpan = `${process.hrtime.bigint() / 1000n - BigInt(Math.round((now() - start) * 1000))}–${process.hrtime.bigint() / 1000n} µs (monotonic)`;
  const receiptMs = measured.flatMap((id) => (receipts.has(id) ? [receipts.get(id)! - sentAt.get(id)!] : []));
  const rate = total / ((now() - start) / 1000);
  return { requestMs, receiptMs, rate, monotonicSpan, cpu: await cpu.per(total) };
}

/** What the report prints of a latency phase. */
function latencySummary(p: Awaited<ReturnType<typeof latencyPhase>>) {
  return {
    rate: Number(p.rate.toFixed(1)),
    dispatchRequestMs: { p50: pct(p.requestMs, 50), p99: pct(p.requestMs, 99) },
    dispatchToReceiptMs: { p50: pct(p.receiptMs, 50), p99: pct(p.receiptMs, 99) },
    receipts: p.receiptMs.length,
    cpuMsPerDispatch: p.cpu,
  };
}

try {
  // ---- phase 1: latency at 200 dispatches/s, the cloud and then the floor -------------------------
  const latencyOrg = await setupOrg(1);
  const total1 = PHASE1_SECONDS * PHASE1_RATE;
  const ids1 = await logCommands(latencyOrg, total1 + 200);
  log(`phase 1: ${total1} dispatches at ${PHASE1_RATE}/s`);
  const phase1 = await latencyPhase((id) => dispatch(latencyOrg.apiKey, id), ids1, () => startMeasuring());
  // The phase's span on the monotonic clock, in µs: what a --cpu-prof of the child is timed by.
  log(`phase 1 ran ${phase1.monotonicSpan}`);
  const cpuPerDispatch = phase1.cpu;

  const floorIds = await logCommands(latencyOrg, total1 + 200);
  const floor1 = await startDispatchFloor({
    db,
    databaseUrl: testDb.url,
    receiverUrl: `https://127.0.0.1:${receiverPort}/floor`,
    caFile: cert.certFile,
    organizationId: latencyOrg.organizationId,
    commandIds: floorIds,
  });
  const floorApi = new Pool(`http://127.0.0.1:${floor1.port}`, { connections: 64 });
  log(`phase 1, the dispatch floor: ${total1} dispatches at ${PHASE1_RATE}/s`);
  const phase1Floor = await latencyPhase((commandId) => timedPost(floorApi, '/', { commandId }), floorIds, () =>
    startMeasuring({ pid: floor1.pid, countsStatements: false }),
  );
  await floorApi.close();
  await floor1.close();

  // ---- phase 2: sustained deliveries/s ----------------------------------------------------------
  const fanOrg = await setupOrg(FANOUT);
  const ids2 = await logCommands(fanOrg, PHASE2_COMMANDS);
  const expected = PHASE2_COMMANDS * FANOUT;
  log(`phase 2: ${PHASE2_COMMANDS} dispatches × ${FANOUT} endpoints = ${expected} deliveries`);
  const receivedBefore = received;
  const cpu2 = await startMeasuring();
  const start2 = now();
  await dispatchAll(ids2, (id) => dispatch(fanOrg.apiKey, id));
  const dispatchedIn = (now() - start2) / 1000;
  await waitUntil(() => received - receivedBefore >= expected, 120_000);
  const deliveredIn = (now() - start2) / 1000;
  const delivered = received - receivedBefore;
  const cpuPerDelivery = await cpu2.per(delivered);
  const deliveriesPerSecond = delivered / deliveredIn;

  // ---- baseline: bare undici POSTs to the same receiver ------------------------------------------
  // Two readings of "a bare undici POST loop": one loop awaiting each POST, and 32 such loops at once
  // (as many connections as the engine may use). Both are printed; the ratio is given against each.
  const sampleBody = JSON.stringify({ eventType: 'command.dispatched', command: { id: crypto.randomUUID(), args: { mode: 'LOITER' } }, pad: 'x'.repeat(700) });
  const baselineAgent = new Agent({ connect: { ca: cert.cert }, connections: 32 });
  const postLoop = async (loops: number, seconds: number) => {
    const before = received;
    const start = now();
    const end = start + seconds * 1000;
    await Promise.all(
      Array.from({ length: loops }, async () => {
        while (now() < end) {
          const r = await request(`https://127.0.0.1:${receiverPort}/baseline`, {
            method: 'POST',
            body: sampleBody,
            headers: { 'content-type': 'application/json' },
            dispatcher: baselineAgent,
          });
          await r.body.dump();
        }
      }),
    );
    return (received - before) / ((now() - start) / 1000);
  };
  const baselineSequential = await postLoop(1, BASELINE_SECONDS);
  const cpu3 = await startMeasuring();
  const before3 = received;
  const baselinePerSecond = await postLoop(32, BASELINE_SECONDS);
  const cpuPerPost = await cpu3.per(received - before3);
  const deliveryFloor = {
    db,
    natsUrl: TEST_NATS_URL,
    namespace,
    url: `https://127.0.0.1:${receiverPort}/baseline`,
    dispatcher: baselineAgent,
    body: sampleBody,
    count: expected,
    batch: FLOOR_BATCH,
    workers: FLOOR_WORKERS,
  };
  const cpu4 = await startMeasuring();
  const floor = await runDeliveryFloor(deliveryFloor);
  const cpuPerFloorDelivery = await cpu4.per(floor.delivered);
  const floorPerSecond = floor.delivered / floor.seconds;

  // The floor of the phase as the cloud runs it: the same number of dispatches, sent the same way (16 at
  // once), each served the least way (the dispatch floor, fanned out: one durable statement moving the
  // command and writing an outbox row per endpoint, the answer, a JetStream publish per row), then
  // delivered as the floor above delivers. The floor above writes its outbox rows in bulk and serves
  // no dispatch at all, which the cloud's phase 2 does 2,500 times; the ratio is taken against this one.
  const dispatchFloorIds = await logCommands(fanOrg, PHASE2_COMMANDS);
  const fanFloor = await startDispatchFloor({
    db,
    databaseUrl: testDb.url,
    receiverUrl: `https://127.0.0.1:${receiverPort}/baseline`,
    caFile: cert.certFile,
    organizationId: fanOrg.organizationId,
    commandIds: dispatchFloorIds,
    fanOut: { endpointIds: Array.from({ length: FANOUT }, () => crypto.randomUUID()), natsUrl: TEST_NATS_URL, subject: deliveryFloorSubject(namespace) },
  });
  const fanFloorApi = new Pool(`http://127.0.0.1:${fanFloor.port}`, { connections: 64 });
  // Warm, as the cloud is by phase 2: its connections opened, its statement prepared on them, its
  // handler compiled. Dispatches of unknown commands run the statement, move nothing and answer 409.
  await dispatchAll(Array.from({ length: DISPATCH_CONCURRENCY * 20 }, () => crypto.randomUUID()), async (commandId) => {
    const r = await fanFloorApi.request({ method: 'POST', path: '/', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ commandId }) });
    await r.body.dump();
  });
  log(`phase 2, the dispatch floor fanned out: ${PHASE2_COMMANDS} dispatches × ${FANOUT} endpoints`);
  const cpu5 = await startMeasuring({ pid: fanFloor.pid, countsStatements: false });
  const phaseFloor = await runDeliveryFloor({
    ...deliveryFloor,
    feed: async () => {
      await dispatchAll(dispatchFloorIds, (commandId) => timedPost(fanFloorApi, '/', { commandId }));
    },
  });
  const cpuPerPhaseFloorDelivery = await cpu5.per(phaseFloor.delivered);
  const phaseFloorPerSecond = phaseFloor.delivered / phaseFloor.seconds;
  await fanFloorApi.close();
  await fanFloor.close();
  await baselineAgent.close();

  const result = {
    phase1: { dispatches: total1, ...latencySummary(phase1) },
    phase1Floor: latencySummary(phase1Floor),
    phase2: {
      dispatches: PHASE2_COMMANDS,
      endpoints: FANOUT,
      delivered,
      dispatchSeconds: Number(dispatchedIn.toFixed(2)),
      deliverySeconds: Number(deliveredIn.toFixed(2)),
      deliveriesPerSecond: Math.round(deliveriesPerSecond),
      cpuMsPerDelivery: cpuPerDelivery,
    },
    baseline: {
      sequentialPostsPerSecond: Math.round(baselineSequential),
      concurrentPostsPerSecond: Math.round(baselinePerSecond),
      cpuMsPerPost: cpuPerPost,
    },
    /** The phase's floor: its dispatches served and delivered the least way. */
    floor: { delivered: phaseFloor.delivered, deliveriesPerSecond: Math.round(phaseFloorPerSecond), cpuMsPerDelivery: cpuPerPhaseFloorDelivery },
    /** Delivery alone: outbox rows written in bulk, no dispatch served. */
    deliveryFloor: { delivered: floor.delivered, deliveriesPerSecond: Math.round(floorPerSecond), cpuMsPerDelivery: cpuPerFloorDelivery },
    ratio: {
      vsSequential: Number((deliveriesPerSecond / baselineSequential).toFixed(3)),
      vsConcurrent: Number((deliveriesPerSecond / baselinePerSecond).toFixed(3)),
      floorVsSequential: Number((phaseFloorPerSecond / baselineSequential).toFixed(3)),
      vsFloor: Number((deliveriesPerSecond / phaseFloorPerSecond).toFixed(3)),
      vsDeliveryFloor: Number((deliveriesPerSecond / floorPerSecond).toFixed(3)),
    },
  };
  console.log(JSON.stringify(result, null, 2));
  console.log(
    [
      '',
      `dispatch request        p50 ${ms(result.phase1.dispatchRequestMs.p50)}   p99 ${ms(result.phase1.dispatchRequestMs.p99)}   (target p99 ≤ 10 ms)`,
      `dispatch → receipt      p50 ${ms(result.phase1.dispatchToReceiptMs.p50)}   p99 ${ms(result.phase1.dispatchToReceiptMs.p99)}   at ${result.phase1.rate}/s (targets 15 / 50 ms)`,
      `deliveries sustained    ${result.phase2.deliveriesPerSecond}/s = ${(result.ratio.vsFloor * 100).toFixed(1)} % of the same run's durable floor ` +
        `(${result.floor.deliveriesPerSecond}/s, its dispatches served and delivered; target ≥ 70 %); ` +
        `${(result.ratio.vsDeliveryFloor * 100).toFixed(1)} % of delivery alone (${result.deliveryFloor.deliveriesPerSecond}/s, outbox rows written in bulk)`,
      `baseline undici POSTs   one loop ${result.baseline.sequentialPostsPerSecond}/s (ratio ${(result.ratio.vsSequential * 100).toFixed(1)} %), ` +
        `32 loops ${result.baseline.concurrentPostsPerSecond}/s (ratio ${(result.ratio.vsConcurrent * 100).toFixed(1)} %); ` +
        `the floor is ${(result.ratio.floorVsSequential * 100).toFixed(1)} % of one loop`,
      `CPU ms per dispatch     at ${result.phase1.rate}/s, with its delivery: cloud ${cpuPerDispatch.cloud}, Postgres ${cpuPerDispatch.postgres}, ` +
        `NATS ${cpuPerDispatch.nats}, driver+receiver ${cpuPerDispatch.bench}: ${cpuPerDispatch.total} in all (target ≤ 1.5 ms); ` +
        `all of Postgres ${cpuPerDispatch.postgresAllProcesses}`,
      `the dispatch floor      at ${result.phase1Floor.rate}/s: request p50 ${ms(result.phase1Floor.dispatchRequestMs.p50)} p99 ${ms(result.phase1Floor.dispatchRequestMs.p99)}, ` +
        `receipt p50 ${ms(result.phase1Floor.dispatchToReceiptMs.p50)} p99 ${ms(result.phase1Floor.dispatchToReceiptMs.p99)}; CPU ms per dispatch: ` +
        `floor service ${phase1Floor.cpu.cloud}, Postgres ${phase1Floor.cpu.postgres}, driver+receiver ${phase1Floor.cpu.bench}: ${phase1Floor.cpu.total} in all ` +
        `(the cloud takes ${(cpuPerDispatch.total / phase1Floor.cpu.total).toFixed(2)}× the floor)`,
      `statements per dispatch ${cpuPerDispatch.statements} (each one round trip):`,
      ...cpuPerDispatch.byShape.slice(0, 12).map((s) => `  ${s.perItem.toFixed(3).padStart(7)}  ${s.shape}`),
      `CPU ms per delivery     cloud ${cpuPerDelivery.cloud}, Postgres ${cpuPerDelivery.postgres}, NATS ${cpuPerDelivery.nats}, ` +
        `driver+receiver ${cpuPerDelivery.bench}: ${cpuPerDelivery.total} in all (2 cores: at most ${Math.round(2000 / cpuPerDelivery.total)}/s); ` +
        `all of Postgres ${cpuPerDelivery.postgresAllProcesses}`,
      `statements per delivery ${cpuPerDelivery.statements} (fan-out of ${FANOUT}, dispatched as fast as taken):`,
      ...cpuPerDelivery.byShape.slice(0, 12).map((s) => `  ${s.perItem.toFixed(3).padStart(7)}  ${s.shape}`),
      `CPU ms per bare POST    client+receiver ${cpuPerPost.bench} (2 cores: at most ${Math.round(2000 / cpuPerPost.total)}/s)`,
      `CPU ms per floor job    dispatched: floor service ${cpuPerPhaseFloorDelivery.cloud}, Postgres ${cpuPerPhaseFloorDelivery.postgres}, ` +
        `NATS ${cpuPerPhaseFloorDelivery.nats}, bench ${cpuPerPhaseFloorDelivery.bench}: ${cpuPerPhaseFloorDelivery.total} in all ` +
        `(2 cores: at most ${Math.round(2000 / cpuPerPhaseFloorDelivery.total)}/s); delivery alone: Postgres ${cpuPerFloorDelivery.postgres}, ` +
        `NATS ${cpuPerFloorDelivery.nats}, bench ${cpuPerFloorDelivery.bench}: ${cpuPerFloorDelivery.total} in all (at most ${Math.round(2000 / cpuPerFloorDelivery.total)}/s)`,
    ].join('\n'),
  );
} finally {
  await cleanup();
}
