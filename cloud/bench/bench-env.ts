import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { issueApiKey } from '../src/auth/api-keys.ts';
import { createOrganization } from '../src/auth/organizations.ts';
import { openDatabase, type DatabaseHandle } from '../src/db/connect.ts';

/** Shared set-up of the benchmarks: a database of their own, the real server in a child process, an org and a key. */

const root = resolve(import.meta.dirname, '../..');

/**
 * Where the benches' data starts: the start of yesterday (UTC). Recent, so that on the TimescaleDB
 * path no compression policy (7 days for wide tables) compresses a bench's chunks in the middle of its
 * run; on a day boundary, so every rollup bucket lines up the same way on every day.
 */
export const BENCH_START_US = (Math.floor(Date.now() / 86_400_000) - 1) * 86_400_000_000;

/**
 * The Node flags `npm start` runs the server with (package.json's start script: `node <flags>
 * cloud/src/main.ts`), so a bench measures the server as it is run. They matter: the young
 * generation's cap changes the server's CPU per message by a fifth (docs/PERFORMANCE.md).
 */
export function startFlags(): string[] {
  const start = (JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start!;
  const words = start.split(/\s+/);
  const main = words.indexOf('cloud/src/main.ts');
  if (words[0] !== 'node' || main < 0) throw new Error(`package.json start script is not "node <flags> cloud/src/main.ts": ${start}`);
  return words.slice(1, main);
}

/** RFC 3339 text of a time in µs since the epoch, to the microsecond (toISOString stops at the millisecond). */
export function isoMicros(us: number): string {
  const ms = Math.floor(us / 1000);
  return `${new Date(ms).toISOString().slice(0, 23)}${String(us - ms * 1000).padStart(3, '0')}Z`;
}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

/** CPU time (user + system, ms) of one process, from /proc. */
export function processCpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** CPU time (ms) summed over the processes `matches` picks by pid; a process that ends meanwhile is skipped. */
function matchingProcessesCpuMs(matches: (pid: string) => boolean): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (matches(entry)) total += processCpuMs(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return total;
}

/**
 * CPU time (ms) of the PostgreSQL backends serving `database` (their command line names it). Other
 * databases' backends — other work on a shared machine — are left out.
 */
export function postgresCpuMs(database: string): number {
  return matchingProcessesCpuMs((pid) => {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline.startsWith('postgres:') && cmdline.includes(` ${database} `);
  });
}

/** CPU time (ms) of every process whose executable's name is `name` (e.g. `nats-server`). */
export function namedProcessCpuMs(name: string): number {
  return matchingProcessesCpuMs((pid) => readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === name);
}

/** CPU time (ms) of this process. */
export function ownCpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

export interface BenchServer {
  child: ChildProcess;
  httpUrl: string;
  grpcPort: number;
  /** Peak resident set of the server process so far (VmHWM), in MB. */
  peakRssMb(): number;
  stop(): Promise<void>;
}

/**
 * Start `node cloud/src/main.ts` against `databaseUrl` and wait until both ports listen; on `ports`
 * when given (a client configured before the server exists), else on free ones. `env` adds SORTIE_*
 * settings (e.g. SORTIE_NATS_URL).
 */
export async function startServerProcess(databaseUrl: string, logLevel = 'info', ports?: { http: number; grpc: number }, env: Record<string, string> = {}): Promise<BenchServer> {
  const [httpPort, grpcPort] = ports ? [ports.http, ports.grpc] : [await freePort(), await freePort()];
  const child = spawn(process.execPath, [...startFlags(), resolve(root, 'cloud/src/main.ts')], {
    env: {
      ...process.env,
      SORTIE_DATABASE_URL: databaseUrl,
      SORTIE_SECRET_KEY: Buffer.alloc(32, 3).toString('base64'),
      SORTIE_HTTP_PORT: String(httpPort),
      SORTIE_GRPC_PORT: String(grpcPort),
      SORTIE_LOG_LEVEL: logLevel,
      ...env,
      // Profiling hook: BENCH_SERVER_NODE_OPTIONS="--cpu-prof --cpu-prof-dir=.tmp/prof" profiles the server only.
      NODE_OPTIONS: process.env.BENCH_SERVER_NODE_OPTIONS ?? '',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const server: BenchServer = {
    child,
    httpUrl: `http://127.0.0.1:${httpPort}`,
    grpcPort,
    peakRssMb: () => {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
    },
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
  let listening = 0;
  const ready = new Promise<void>((resolveReady, reject) => {
    child.once('exit', (code) => reject(new Error(`server exited with ${code} before listening`)));
    createInterface({ input: child.stdout! }).on('line', (text) => {
      let line: Record<string, unknown>;
      try {
        line = JSON.parse(text);
      } catch {
        return;
      }
      if (typeof line.msg === 'string' && line.msg.includes('listening') && ++listening === 2) resolveReady();
    });
  });
  await ready;
  return server;
}

/** An organization and a key, written straight to the (already migrated) database. */
export async function createOrgAndKey(databaseUrl: string): Promise<{ apiKey: string; handle: DatabaseHandle }> {
  const handle = await openDatabase({ url: databaseUrl, dataDir: '.', poolSize: 4 });
  const { organizationId, ownerUserId } = await createOrganization(handle.db, 'Bench');
  const { apiKey } = await issueApiKey(handle.db, {
    organizationId,
    userId: ownerUserId,
    scopes: ['datasets:read', 'datasets:write', 'telemetry:read', 'telemetry:write'],
  });
  return { apiKey, handle };
}

export async function api(base: string, key: string, path: string, body: unknown): Promise<any> {
  const response = await fetch(base + path, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const json = await response.json();
  if (response.status >= 300) throw new Error(`${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

/** A wide dataset with `channels` double channels ch_0..ch_{n-1}. */
export async function registerWideDataset(base: string, key: string, experimentId: string, name: string, channels: number) {
  const body = await api(base, key, '/api/streams/register', {
    experimentId,
    datasetName: name,
    channels: Array.from({ length: channels }, (_, i) => ({ name: `channel ${i}`, unit: 'V', dataType: 'double' })),
  });
  return body.datasetId as string;
}

/**
 * Watches one timed phase of gRPC load on `server`: its batch latencies (decoded batch handed to the
 * writer → committed) from the server's own histogram, sortie_ingest_batch_duration_seconds, read from
 * /metrics at both ends; and the CPU of the server, of its Postgres backends and of this process (the
 * client). The server runs at its default log level: nothing is logged per batch.
 */
export async function measureServerLoad(server: BenchServer, databaseName: string) {
  const buckets0 = await batchDurationBuckets(server);
  const cpu0 = { server: processCpuMs(server.child.pid!), postgres: postgresCpuMs(databaseName), client: ownCpuMs() };
  return {
    /** Ends the phase: CPU per batch (ms) over its `batches`, and the latency percentiles (ms). */
    async finish(batches: number) {
      const cpu = {
        server: (processCpuMs(server.child.pid!) - cpu0.server) / batches,
        postgres: (postgresCpuMs(databaseName) - cpu0.postgres) / batches,
        client: (ownCpuMs() - cpu0.client) / batches,
      };
      const buckets = await batchDurationBuckets(server);
      const phase = buckets.map((b, i) => ({ le: b.le, count: b.count - (buckets0[i]?.count ?? 0) }));
      const count = phase.at(-1)?.count ?? 0;
      return { cpu, p50: histogramPercentile(phase, 50), p99: histogramPercentile(phase, 99), latencyCount: count };
    },
  };
}

/** The cumulative buckets (upper bound in ms, count) of the server's batch-duration histogram, all shapes summed. */
async function batchDurationBuckets(server: BenchServer): Promise<Array<{ le: number; count: number }>> {
  const text = await (await fetch(`${server.httpUrl}/metrics`)).text();
  const byLe = new Map<number, number>();
  for (const m of text.matchAll(/^sortie_ingest_batch_duration_seconds_bucket\{([^}]*)\} (\S+)$/gm)) {
    const le = /le="([^"]+)"/.exec(m[1]!)![1]!;
    const ms = le === '+Inf' ? Infinity : Number(le) * 1000;
    byLe.set(ms, (byLe.get(ms) ?? 0) + Number(m[2]));
  }
  return [...byLe].map(([le, count]) => ({ le, count })).sort((a, b) => a.le - b.le);
}

/**
 * The p-th percentile (ms) of cumulative histogram buckets, interpolated linearly within its bucket (as
 * Prometheus's histogram_quantile does): exact to the bucket, which the histogram's bounds keep to
 * 2.5 ms or finer up to 20 ms.
 */
export function histogramPercentile(buckets: ReadonlyArray<{ le: number; count: number }>, p: number): number {
  const total = buckets.at(-1)?.count ?? 0;
  if (total === 0) return NaN;
  const rank = (p / 100) * total;
  let lower = 0;
  let below = 0;
  for (const b of buckets) {
    if (b.count >= rank) {
      if (!Number.isFinite(b.le)) return lower;
      return lower + ((b.le - lower) * (rank - below)) / Math.max(1, b.count - below);
    }
    lower = b.le;
    below = b.count;
  }
  return lower;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}
