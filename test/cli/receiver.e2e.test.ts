import { spawn, execFile, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import { run } from '@sortie/cli';
import { createSortieClient } from '@sortie/client';
import { freePort, startDeliveryFixture, type DeliveryFixture, type TestOrg } from '@sortie/cloud/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// `npm run receiver` as the README uses it: the embedded service runs with no webhook settings of its
// own, `setup` makes the certificate and prints the operator's command, which the running service applies
// at once (no restart), then the receiver registers itself and acks a dispatched command.
const repo = path.resolve(import.meta.dirname, '..', '..');
const RECEIVER = path.join(repo, 'cli', 'src', 'receiver.ts');
let dataDir: string;
let f: DeliveryFixture;
let org: TestOrg;
let port: number;
let child: ChildProcessWithoutNullStreams | undefined;
let setupOutput: string;
let trustCommand: string;
/** What the service's loopback and CA settings are: none, as on a fresh laptop. */
const NO_TRUST = { SORTIE_WEBHOOK_ALLOW_CIDRS: '', SORTIE_WEBHOOK_CA_FILE: '' };

/** The command setup printed, run as a person would: npm in the clone, on the running service's data dir. */
function runPrinted(command: string, serviceDataDir: string) {
  return promisify(execFile)('bash', ['-c', command], { cwd: repo, env: { PATH: `${path.join(repo, 'node_modules/.bin')}:${process.env.PATH}`, HOME: process.env.HOME, SORTIE_DATA_DIR: serviceDataDir } });
}

function startReceiver(): Promise<string> {
  const proc = spawn(process.execPath, [RECEIVER, '--data-dir', dataDir, '--port', String(port)], {
    cwd: repo,
    env: { PATH: process.env.PATH, SORTIE_URL: f.t.url, SORTIE_API_KEY: org.key },
  });
  child = proc;
  let out = '';
  let err = '';
  proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    proc.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('waiting for commands')) resolve(out);
    });
    proc.on('exit', (code) => reject(new Error(`receiver exited ${code}: ${err}${out}`)));
  });
}

async function stopReceiver(): Promise<number | null> {
  const proc = child!;
  child = undefined;
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  proc.kill('SIGTERM');
  return await exited;
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(tmpdir(), 'sortie-receiver-'));
  port = await freePort();
  f = await startDeliveryFixture({ queue: 'memory', embedded: true, env: NO_TRUST });
  const { stdout } = await promisify(execFile)(process.execPath, [RECEIVER, 'setup', '--data-dir', dataDir, '--port', String(port)], { cwd: repo });
  setupOutput = stdout;
  trustCommand = stdout.split('\n').find((line) => line && !line.startsWith('# '))!;
  // The service under test resolves names from a table: localhost is loopback, as on a laptop.
  f.hosts.localhost = ['127.0.0.1'];
  org = await f.t.createOrg('receiver');
});

afterAll(async () => {
  if (child) await stopReceiver();
  await f?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

describe('npm run receiver', () => {
  it("setup prints the operator's trust command for a certificate made once in the data dir; the running service applies it", async () => {
    const cert = path.join(dataDir, 'receiver', 'cert.pem');
    expect(trustCommand).toBe(`npm run -s admin -- webhook-trust add --allow-cidrs 127.0.0.1/32,::1/128 --ca-file ${cert}`);
    // Besides the command, only shell comments (eval ignores them), saying what comes next.
    expect(setupOutput.split('\n').filter((l) => l && !l.startsWith('# '))).toEqual([trustCommand]);
    expect(setupOutput).toContain(`npx sortie webhooks create https://localhost:${port}/`);
    const pem = await readFile(cert, 'utf8');
    // Again: the same certificate, not a new one the running server would not trust.
    await promisify(execFile)(process.execPath, [RECEIVER, 'setup', '--data-dir', dataDir], { cwd: repo });
    expect(await readFile(cert, 'utf8')).toBe(pem);

    // The embedded service is running: the admin CLI hands the command to it.
    const trusted = await runPrinted(trustCommand, f.t.service.ctx.config.dataDir);
    expect(JSON.parse(trusted.stdout)).toMatchObject({ allowCidrs: ['127.0.0.1/32', '::1/128'], caCertificates: [{ subject: 'CN=localhost' }] });
  });

  it('registers itself, acks a dispatched command with vehicleTime, answers a ping, and is reused after a restart', async () => {
    const started = await startReceiver();
    const endpointId = /webhook endpoint (\S+) \(created\)/.exec(started)![1]!;
    expect(existsSync(path.join(dataDir, 'receiver', 'secret'))).toBe(true);
    const client = createSortieClient({ baseUrl: f.t.url, apiKey: org.key });
    expect((await client.webhooks.list()).map((e) => [e.id, e.url])).toEqual([[endpointId, `https://localhost:${port}/`]]);

    const experiment = await client.experiments.create({ name: 'laptop' });
    const dataset = await client.datasets.register({ experimentId: experiment.id, datasetName: 'bench', channels: [{ name: 'alt' }] });
    await client.datasets.arm({ datasetId: dataset.datasetId });
    const command = await client.commands.create({ experimentId: experiment.id, datasetId: dataset.datasetId, commandText: 'RTL', relTime: 3 });
    await client.commands.dispatch({ commandId: command.id, ackTimeoutSeconds: 30 });
    const stdout = new PassThrough();
    let watched = '';
    stdout.on('data', (d: Buffer) => (watched += d.toString()));
    const code = await run(['commands', 'watch', command.id, '--timeout', '30'], { env: { SORTIE_URL: f.t.url, SORTIE_API_KEY: org.key }, stdout, stderr: new PassThrough() });
    expect([code, watched]).toEqual([0, expect.stringContaining('acked: done by the local receiver')]);
    const acked = (await client.commands.list({ experimentId: experiment.id, datasetId: dataset.datasetId }))[0]!;
    expect(acked.vehicleTime).toMatch(/^20\d\d-/);

    const ping = await client.webhooks.test({ endpointId });
    expect(ping.statusCode).toBe(200);

    expect(await stopReceiver()).toBe(0);
    const again = await startReceiver();
    expect(again).toContain(`webhook endpoint ${endpointId} (reused)`);
  });

  it("without the operator's trust, says what to run instead of failing obscurely", async () => {
    // A fresh service refuses loopback.
    const other = await startDeliveryFixture({ queue: 'memory', env: NO_TRUST });
    try {
      other.hosts.localhost = ['127.0.0.1'];
      const key = (await other.t.createOrg('no settings')).key;
      const result = await promisify(execFile)(process.execPath, [RECEIVER, '--data-dir', dataDir, '--port', String(port)], {
        cwd: repo,
        env: { PATH: process.env.PATH, SORTIE_URL: other.t.url, SORTIE_API_KEY: key },
      }).then(
        () => ({ code: 0, stderr: '' }),
        (e: { code: number; stderr: string }) => e,
      );
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`no restart needed):\n${trustCommand}`);
    } finally {
      await other.stop();
    }
  });
});
