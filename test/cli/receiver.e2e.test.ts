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

// `npm run receiver` as the README uses it: `setup` makes the certificate and prints the server settings,
// the service is started with them, then the receiver registers itself and acks a dispatched command.
const repo = path.resolve(import.meta.dirname, '..', '..');
const RECEIVER = path.join(repo, 'cli', 'src', 'receiver.ts');
let dataDir: string;
let f: DeliveryFixture;
let org: TestOrg;
let port: number;
let child: ChildProcessWithoutNullStreams | undefined;
let settings: Record<string, string>;
let setupOutput: string;

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
  const { stdout } = await promisify(execFile)(process.execPath, [RECEIVER, 'setup', '--data-dir', dataDir, '--port', String(port)], { cwd: repo });
  setupOutput = stdout;
  const exportLine = stdout.split('\n').find((line) => line.startsWith('export '))!;
  settings = Object.fromEntries(exportLine.slice('export '.length).trim().split(' ').map((kv) => kv.split('=') as [string, string]));
  f = await startDeliveryFixture({ queue: 'memory', env: settings });
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
  it('setup prints the two server settings, for a certificate made once in the data dir', async () => {
    expect(Object.keys(settings)).toEqual(['SORTIE_WEBHOOK_ALLOW_CIDRS', 'SORTIE_WEBHOOK_CA_FILE']);
    expect(settings.SORTIE_WEBHOOK_ALLOW_CIDRS).toBe('127.0.0.1/32,::1/128');
    expect(settings.SORTIE_WEBHOOK_CA_FILE).toBe(path.join(dataDir, 'receiver', 'cert.pem'));
    // Besides the settings, only shell comments (eval ignores them), saying what comes next.
    expect(setupOutput.split('\n').filter((l) => l && !l.startsWith('export ') && !l.startsWith('# '))).toEqual([]);
    expect(setupOutput).toContain(`npx sortie webhooks create https://localhost:${port}/`);
    const evaluated = await promisify(execFile)('bash', ['-c', `eval "$(${JSON.stringify(process.execPath)} ${RECEIVER} setup --data-dir ${dataDir})" && echo "$SORTIE_WEBHOOK_CA_FILE"`], { cwd: repo });
    expect(evaluated.stdout.trim()).toBe(settings.SORTIE_WEBHOOK_CA_FILE);
    const pem = await readFile(settings.SORTIE_WEBHOOK_CA_FILE!, 'utf8');
    // Again: the same certificate, not a new one the running server would not trust.
    await promisify(execFile)(process.execPath, [RECEIVER, 'setup', '--data-dir', dataDir], { cwd: repo });
    expect(await readFile(settings.SORTIE_WEBHOOK_CA_FILE!, 'utf8')).toBe(pem);
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

  it('without the server settings, says what to set instead of failing obscurely', async () => {
    // The fixture's own settings allow loopback; a server without any refuses it, as a fresh one does.
    const other = await startDeliveryFixture({ queue: 'memory', env: { SORTIE_WEBHOOK_ALLOW_CIDRS: '' } });
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
      expect(result.stderr).toContain('export SORTIE_WEBHOOK_ALLOW_CIDRS=127.0.0.1/32,::1/128 SORTIE_WEBHOOK_CA_FILE=');
    } finally {
      await other.stop();
    }
  });
});
