// The console under `deno task start` (docs/deno.md): esbuild's binary bundles it under Deno as under
// Node (the task grants --allow-run for it), the page and its hashed assets are served with the CSP, and
// Chromium signs in with a key made by `deno task admin` and is shown its organization and scopes.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, SKIP_BROWSER, watchPageProblems } from './browser.ts';

const root = resolve(import.meta.dirname, '..', '..');
const deno = join(root, 'node_modules', '.bin', 'deno');

describe.skipIf(SKIP_BROWSER)('the console under deno task start', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'console-deno-'));
  const env = { ...process.env, DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1', SORTIE_DATA_DIR: dataDir, SORTIE_HTTP_PORT: '0', SORTIE_GRPC_PORT: '0' };
  let server: ChildProcess | undefined;
  let browser: Browser | undefined;
  let url = '';
  let apiKey = '';

  const admin = (...args: string[]) => {
    const r = spawnSync(deno, ['task', '-q', 'admin', ...args], { cwd: root, env, encoding: 'utf8', timeout: 60_000 });
    if (r.status !== 0) throw new Error(`deno task admin ${args[0]}: ${r.status ?? r.signal} ${r.stderr}`);
    return JSON.parse(r.stdout) as Record<string, any>;
  };

  beforeAll(async () => {
    const org = admin('create-org', '--name', 'Deno Range');
    apiKey = admin('create-key', '--org', org.organizationId, '--scopes', 'datasets:read,telemetry:read').apiKey;
    // Its own process group, so the task runner and the cloud it starts end together.
    server = spawn(deno, ['task', '-q', 'start'], { cwd: root, env, stdio: ['ignore', 'pipe', 'inherit'], detached: true });
    url = await new Promise<string>((resolveUrl, reject) => {
      let out = '';
      server!.once('exit', (code, signal) => reject(new Error(`deno task start exited (${signal ?? code}) before listening`)));
      server!.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        const lines = out.split('\n');
        out = lines.pop()!;
        for (const line of lines) {
          if (!line.startsWith('{')) continue;
          const entry = JSON.parse(line) as { msg?: string; url?: string };
          if (entry.msg === 'HTTP API listening' && entry.url) resolveUrl(entry.url);
        }
      });
    });
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    if (server?.pid && server.exitCode === null) {
      const exited = new Promise((r) => server!.once('exit', r));
      process.kill(-server.pid, 'SIGTERM');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('bundles and serves the console, and a key signs in', async () => {
    const page = await browser!.newPage();
    const problems = await watchPageProblems(page);
    const response = await page.goto(`${url}/`);
    expect(response!.status()).toBe(200);
    expect(response!.headers()['content-security-policy']).toContain("script-src 'self'");
    await page.fill('#api-key', apiKey);
    await page.click('button[type=submit]');
    await page.waitForSelector('[data-testid=organization]');
    expect(await page.textContent('[data-testid=organization]')).toBe('Organization: Deno Range');
    expect(await page.locator('.scopes li').allTextContents()).toEqual(['datasets:read', 'telemetry:read']);
    expect(await page.locator('text=No experiments yet.').count()).toBe(1);
    expect(problems).toEqual([]);
  }, 60_000);
});
