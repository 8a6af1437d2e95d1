import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { TelemetryService } from '@sortie/contracts';

/**
 * CI smoke of the cloud under Deno (docs/deno.md), run by Node: `node cloud/src/testing/deno-smoke.ts`.
 * In a fresh embedded data dir it makes an organization and key with `deno task admin`, starts
 * `deno task start` on ephemeral ports, then checks HTTP (401 without a key, the create/register flow
 * with one), Connect JSON over HTTP/1.1, and gRPC over h2c (StreamSubmit, then Query reads it back), and
 * stops it with SIGTERM. Exits non-zero on the first thing that is wrong, or after SMOKE_SECONDS.
 */
const SMOKE_SECONDS = Number(process.env.SORTIE_DENO_SMOKE_SECONDS ?? 90);
const root = resolve(import.meta.dirname, '..', '..', '..');
const deno = join(root, 'node_modules', '.bin', 'deno');
const dataDir = mkdtempSync(join(tmpdir(), 'sortie-deno-smoke-'));
const env = {
  ...process.env,
  DENO_NO_UPDATE_CHECK: '1',
  NO_COLOR: '1',
  SORTIE_DATA_DIR: dataDir,
  SORTIE_HTTP_PORT: '0',
  SORTIE_GRPC_PORT: '0',
};

function fail(message: string): never {
  console.error(`deno smoke: FAILED: ${message}`);
  cleanup();
  process.exit(1);
}

let server: ReturnType<typeof spawn> | undefined;
function cleanup(): void {
  // The task runner and the cloud it started share a process group: end both.
  if (server?.pid && server.exitCode === null) {
    try {
      process.kill(-server.pid, 'SIGKILL');
    } catch {}
  }
  rmSync(dataDir, { recursive: true, force: true });
}
const deadline = setTimeout(() => fail(`not done after ${SMOKE_SECONDS} s`), SMOKE_SECONDS * 1000);

function admin(...args: string[]): Record<string, any> {
  const r = spawnSync(deno, ['task', '-q', 'admin', ...args], { cwd: root, env, encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) fail(`deno task admin ${args[0]} exited ${r.status ?? r.signal}: ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<string, any>;
}

function expect(ok: boolean, what: string, got: unknown): void {
  if (!ok) fail(`${what}; got ${JSON.stringify(got, (_, v) => (typeof v === 'bigint' ? v.toString() : v))}`);
  console.log(`deno smoke: ok: ${what}`);
}

// 1. Organization and key: the admin CLI under Deno, on the same PGlite the server then opens.
const org = admin('create-org', '--name', 'deno smoke');
const key = admin('create-key', '--org', org.organizationId, '--scopes', 'datasets:read,datasets:write,telemetry:read,telemetry:write')
  .apiKey as string;
expect(key.startsWith('sk_'), 'deno task admin made an organization and an API key', key.slice(0, 3));

// 2. The server, resolved once both listeners logged their (ephemeral) URLs.
server = spawn(deno, ['task', '-q', 'start'], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'], detached: true });
const exited = new Promise<number | string | null>((r) => server!.once('exit', (code, signal) => r(signal ?? code)));
let listening = false;
const urls = await new Promise<{ http: string; grpc: string }>((resolveUrls) => {
  let out = '';
  const found: { http?: string; grpc?: string } = {};
  server!.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    const lines = out.split('\n');
    out = lines.pop()!;
    for (const line of lines) {
      process.stdout.write(`  cloud: ${line}\n`);
      if (!line.startsWith('{')) continue;
      const entry = JSON.parse(line) as { msg?: string; url?: string };
      if (entry.msg === 'HTTP API listening') found.http = entry.url;
      if (entry.msg?.startsWith('gRPC')) found.grpc = entry.url;
      if (found.http && found.grpc && !listening) {
        listening = true;
        resolveUrls({ http: found.http, grpc: found.grpc });
      }
    }
  });
  void exited.then((how) => listening || fail(`deno task start exited (${how}) before it listened`));
});

// 3. HTTP.
const call = async (method: string, path: string, body?: unknown, withKey = true) => {
  const response = await fetch(urls.http + path, {
    method,
    headers: { 'content-type': 'application/json', ...(withKey && { 'x-api-key': key }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
};
const anonymous = await call('GET', '/api/experiments/list', undefined, false);
expect(anonymous.status === 401 && anonymous.body.error?.code === 'unauthorized', 'HTTP without a key answers 401 unauthorized', anonymous);
const experiment = await call('POST', '/api/experiments/create', { name: 'deno smoke' });
expect(experiment.status === 201 && typeof experiment.body.id === 'string', 'HTTP creates an experiment', experiment);
const registered = await call('POST', '/api/streams/register', {
  experimentId: experiment.body.id,
  datasetName: 'd',
  channels: [{ name: 'volts', unit: 'V' }],
});
expect((registered.status === 200 || registered.status === 201) && registered.body.created === true, 'HTTP registers a wide dataset', registered);
const datasetId = registered.body.datasetId as string;

// 4. Connect protocol, JSON over HTTP/1.1, on the gRPC port.
const connect = await fetch(`${urls.grpc}/sortie.telemetry.v1.TelemetryService/Query`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: '{}',
});
const connectBody = (await connect.json()) as { code?: string };
expect(connect.status === 401 && connectBody.code === 'unauthenticated', 'Connect JSON over HTTP/1.1 answers unauthenticated without a key', connectBody);

// 5. gRPC over h2c: a client stream in, a unary Query back out (trailers, flow control, framing).
const client = createClient(TelemetryService, createGrpcTransport({ baseUrl: urls.grpc }));
const headers = { 'x-api-key': key };
const at = (ms: number) => ({ seconds: BigInt(1_790_000_000 + Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 });
async function* stream() {
  yield { message: { case: 'header' as const, value: { datasetId } } };
  for (let b = 0; b < 5; b++) {
    const points = Array.from({ length: 2000 }, (_, i) => ({
      channelId: '0',
      timestamp: at(b * 2000 + i),
      type: { case: 'double' as const, value: b * 2000 + i },
    }));
    yield { message: { case: 'batch' as const, value: { points } } };
  }
}
const submitted = await client.streamSubmit(stream(), { headers });
expect(submitted.written === 10_000n, 'gRPC StreamSubmit over h2c writes 10000 points', submitted);
const query = await client.query({ datasetId, channelIds: ['0'], maxPointsPerChannel: 100 }, { headers });
const series = query.series[0];
expect(series?.rawPoints === 10_000n && series.points.some((p) => p.value === 9999), 'gRPC Query over h2c reads them back', series?.rawPoints);

// 6. A clean stop on SIGTERM, as main.ts promises.
process.kill(server.pid!, 'SIGTERM');
const how = await exited;
expect(how === 0, 'deno task start stops with exit 0 on SIGTERM', how);
clearTimeout(deadline);
cleanup();
console.log('deno smoke: passed');
