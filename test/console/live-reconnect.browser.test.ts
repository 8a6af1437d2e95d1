// A live view across a restart of the service: the Follow stream ends UNAVAILABLE when the process shuts
// down, the page says it is reconnecting, and once a process answers on the same address again the view
// follows on with no reload or click. The service runs as a child process on a fixed port and a database
// of its own, so it can be stopped and started under the open page.
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createTestDatabase, freePort, startServiceChild, type ServiceChild, type TestDatabase } from '@sortie/cloud/testing';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { launchChromium, SKIP_BROWSER, watchPageProblems } from './browser.ts';

vi.setConfig({ expect: { poll: { timeout: 20_000, interval: 50 } } });

const root = resolve(import.meta.dirname, '..', '..');

describe.skipIf(SKIP_BROWSER)('a live view across a service restart', () => {
  let database: TestDatabase;
  let dataDir: string;
  let env: Record<string, string>;
  let service: ServiceChild | undefined;
  let browser: Browser;
  let key: string;
  let base: string;

  const admin = (...args: string[]) => {
    const r = spawnSync(process.execPath, ['cloud/src/admin/cli.ts', ...args], { cwd: root, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });
    if (r.status !== 0) throw new Error(`admin ${args[0]}: ${r.status ?? r.signal} ${r.stderr}`);
    return JSON.parse(r.stdout) as Record<string, any>;
  };
  const post = async (path: string, body: unknown) => {
    const r = await fetch(`${base}${path}`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!r.ok) throw new Error(`${path}: ${r.status} ${await r.text()}`);
    return (await r.json()) as Record<string, any>;
  };

  beforeAll(async () => {
    database = await createTestDatabase();
    dataDir = await mkdtemp(join(tmpdir(), 'console-reconnect-'));
    env = {
      SORTIE_DATABASE_URL: database.url,
      SORTIE_DATA_DIR: dataDir,
      SORTIE_SECRET_KEY: Buffer.alloc(32, 5).toString('base64'),
      SORTIE_HTTP_PORT: String(await freePort()),
      SORTIE_GRPC_PORT: '0',
      SORTIE_LOG_LEVEL: 'warn',
      SORTIE_SHUTDOWN_GRACE_SECONDS: '5',
    };
    service = await startServiceChild(env);
    base = service.url;
    const org = admin('create-org', '--name', 'Restart Range');
    key = admin('create-key', '--org', org.organizationId, '--user', org.ownerUserId, '--scopes', 'datasets:read,datasets:write,telemetry:read,telemetry:write,commands:read').apiKey;
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    if (service && service.process.exitCode === null) {
      service.process.kill('SIGKILL');
      await service.exited;
    }
    await database?.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('says it is reconnecting while the service is down, then follows on by itself', async () => {
    const experimentId = (await post('/api/experiments/create', { name: 'restart' })).id as string;
    const datasetId = (await post('/api/streams/register', { experimentId, datasetName: 'rig', channels: [{ name: 'load', unit: 'N', dataType: 'double' }] })).datasetId as string;
    // A rig streaming ten rows every 200 ms; while the service is down its batches fail and it carries on.
    let running = true;
    const feeding = (async () => {
      while (running) {
        const end = Date.now();
        const rows = Array.from({ length: 10 }, (_, i) => ({ timestamp: new Date(end - (9 - i) * 20).toISOString(), values: { load: Math.sin((end - (9 - i) * 20) / 500) * 10 } }));
        await post('/api/datasets/append', { experimentId, datasetId, rows }).catch(() => undefined);
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    try {
      await expect.poll(async () => (await (await fetch(`${base}/api/experiments/list`, { headers: { 'x-api-key': key } })).json())[0].datasets[0].lastDataAt).toBeTruthy();
      const page = await (await browser.newContext({ viewport: { width: 1400, height: 900 } })).newPage();
      const problems = await watchPageProblems(page);
      await page.goto(`${base}/`);
      await page.fill('#api-key', key);
      await page.click('button[type=submit]');
      await page.waitForSelector('[data-testid=organization]');
      await page.goto(`${base}/?experiment=${experimentId}&dataset=${datasetId}&channel=ch_0`);
      const state = () => page.textContent('[data-testid=live-state]');
      const xMax = async () => Number(await page.getAttribute('figure.pane[data-channel="ch_0"] .pane-canvas', 'data-x-max'));
      await expect.poll(state).toBe('Live');
      await expect.poll(xMax).toBeGreaterThan(0);

      // SIGTERM: the process ends its streams UNAVAILABLE and exits.
      service!.process.kill('SIGTERM');
      await service!.exited;
      await expect.poll(() => page.textContent('.live-bar')).toContain('reconnecting');
      const before = await xMax();

      service = await startServiceChild(env);
      await expect.poll(state).toBe('Live');
      // The rows written after the restart are drawn: the view follows the new process.
      await expect.poll(xMax).toBeGreaterThan(before + 1);
      expect(await page.getAttribute('[data-testid=live-state]', 'data-state')).toBe('live');
      expect(problems).toEqual([]);
      await page.context().close();
    } finally {
      running = false;
      await feeding;
    }
  }, 120_000);
});
