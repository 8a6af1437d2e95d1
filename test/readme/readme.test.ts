import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, describe, expect, it, onTestFailed } from 'vitest';
import { launchChromium, SKIP_BROWSER, watchPageProblems } from '../console/browser.ts';
import { matchOutput, readmeBlocks, substitute, type ReadmeBlock, type ReadmeStep } from './readme-script.ts';

/**
 * The README's walk-throughs, executed as a newcomer would type them: one bash session in the repository,
 * every block marked `run` in document order, embedded defaults (no SORTIE_DATABASE_URL, no NATS), each
 * command's stdout compared with the `# →` lines after it. The only liberties taken: the ports the README
 * names (8080, 50051, 8443) are swapped for free ones so the test can run beside anything, the data dir
 * (and every ./.sortie-data path a command names) is a temp dir, and after `npm start &` (or `npm run
 * receiver … &`) the session waits until it answers, as a person would. Where the prose sends the reader
 * to the console (`<!-- readme-test: console … -->`), Chromium signs in with the session's $SORTIE_API_KEY
 * and looks. So a README that drifts from the product fails here.
 */
const repo = fileURLToPath(new URL('../..', import.meta.url));
const STEP_TIMEOUT_MS = 180_000;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** One long-lived bash, like a terminal: exports and background jobs persist from step to step. */
class ShellSession {
  readonly #bash: ChildProcessWithoutNullStreams;
  #out = '';
  #err = '';
  #counter = 0;

  constructor(env: NodeJS.ProcessEnv, cwd: string) {
    // Its own process group, so everything it starts (npm start &) is stopped with it.
    this.#bash = spawn('bash', ['--noprofile', '--norc'], { cwd, env, detached: true });
    this.#bash.stdout.setEncoding('utf8').on('data', (d: string) => (this.#out += d));
    this.#bash.stderr.setEncoding('utf8').on('data', (d: string) => (this.#err += d));
  }

  /** Runs a command; resolves with its stdout, exit status and the stderr it wrote. */
  async run(command: string): Promise<{ stdout: string; status: number; stderr: string }> {
    const marker = `\u001eSTEP-${++this.#counter}`;
    this.#out = '';
    this.#err = '';
    this.#bash.stdin.write(`{\n${command}\n} </dev/null\nprintf '\\n${marker} %d\\n' $?\n`);
    const deadline = Date.now() + STEP_TIMEOUT_MS;
    for (;;) {
      const at = this.#out.indexOf(`\n${marker} `);
      if (at >= 0 && this.#out.indexOf('\n', at + 1 + marker.length) > 0) {
        const status = Number(this.#out.slice(at + marker.length + 2).trim().split(/\s/)[0]);
        return { stdout: this.#out.slice(0, at), status, stderr: this.#err };
      }
      if (Date.now() > deadline) throw new Error(`timed out after ${STEP_TIMEOUT_MS} ms; stderr:\n${this.#err.slice(-4000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /**
   * Stops the session and everything it started, and waits until they are gone: a server stopped by
   * SIGTERM still writes its embedded database while it shuts down, so its data dir can be removed only after.
   */
  async close(): Promise<void> {
    const group = -this.#bash.pid!;
    const alive = () => {
      try {
        process.kill(group, 0);
        return true;
      } catch {
        return false;
      }
    };
    if (!alive()) return;
    process.kill(group, 'SIGTERM');
    const deadline = Date.now() + 30_000;
    while (alive() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    if (alive()) process.kill(group, 'SIGKILL');
    while (alive()) await new Promise((r) => setTimeout(r, 50));
  }
}

async function waitForHttp(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const response = await fetch(url);
      await response.body?.cancel();
      if (response.status < 500) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('the README, executed', async () => {
  const markdown = await readFile(path.join(repo, 'README.md'), 'utf8');
  const blocks = readmeBlocks(markdown);
  const dataDir = await mkdtemp(path.join(tmpdir(), 'sortie-readme-'));
  const ports = { http: await freePort(), grpc: await freePort(), receiver: await freePort() };
  const env: NodeJS.ProcessEnv = {
    PATH: `${path.join(repo, 'node_modules/.bin')}:${process.env.PATH}`,
    HOME: process.env.HOME,
    TERM: 'dumb',
    SORTIE_DATA_DIR: dataDir,
    SORTIE_HTTP_PORT: String(ports.http),
    SORTIE_GRPC_PORT: String(ports.grpc),
    SORTIE_LOG_LEVEL: 'warn',
    // The agent finds gRPC on the --cloud host's port 50051 by default; here that port is a free one.
    SORTIE_AGENT_GRPC: `http://127.0.0.1:${ports.grpc}`,
    RECEIVER_PORT: String(ports.receiver),
    DENO_NO_UPDATE_CHECK: '1',
  };
  const shell = new ShellSession(env, repo);
  let browser: Browser | undefined;
  afterAll(async () => {
    await browser?.close();
    await shell.close();
    // The export the README makes lands in the clone, as it would for a reader; the test leaves none behind.
    const exported = values.get('mcapFile');
    if (exported && !exported.includes('/')) await rm(path.join(repo, exported), { force: true });
    await rm(dataDir, { recursive: true, force: true, maxRetries: 5 });
  });

  const localise = (command: string) =>
    command
      .replaceAll('localhost:8080', `localhost:${ports.http}`)
      .replaceAll('127.0.0.1:8080', `127.0.0.1:${ports.http}`)
      .replaceAll('127.0.0.1:50051', `127.0.0.1:${ports.grpc}`)
      .replaceAll('localhost:8443', `localhost:${ports.receiver}`)
      .replaceAll('--port 8443', `--port ${ports.receiver}`)
      // Files a reader's commands keep in ./.sortie-data (the agent's spool) go to the test's own data dir,
      // so a second run, or a server the developer left there, changes nothing.
      .replaceAll(' .sortie-data/', ` ${dataDir}/`);

  // A job the README starts in the background (`npm start &`) would print into later commands' output;
  // its output goes to a log instead, as it would to another terminal.
  const backgroundLog = path.join(dataDir, 'background.log');
  const toBackgroundLog = (command: string) =>
    /&\s*(#.*)?$/.test(command) && !/&&\s*(#.*)?$/.test(command)
      ? `${command.replace(/&\s*(#.*)?$/, '')} >>${backgroundLog} 2>&1 &`
      : command;

  const values = new Map<string, string>();
  const steps: ReadmeStep[] = blocks.filter((b) => b.mode === 'run').flatMap((b) => b.steps);
  // What runs, in document order: each command of a run block, and each console check.
  type WalkItem = { step: ReadmeStep } | { check: ReadmeBlock };
  const walk: WalkItem[] = blocks.flatMap((b): WalkItem[] =>
    b.mode === 'run' ? b.steps.map((step) => ({ step })) : b.mode === 'console' ? [{ check: b }] : [],
  );

  it('marks every shell block, and runs at least the walk-throughs', () => {
    expect(steps.length).toBeGreaterThan(10);
    for (const b of blocks.filter((b) => b.mode === 'skip')) expect(b.reason, `README line ${b.line}`).not.toBe('');
  });

  for (const item of walk) {
    if ('check' in item) {
      const { dataset, facts } = item.check.console!;
      it.skipIf(SKIP_BROWSER)(`line ${item.check.line}: the console lists ${dataset}, and opens it`, { timeout: 120_000 }, async () => {
        const key = (await shell.run('printf %s "$SORTIE_API_KEY"')).stdout;
        expect(key, 'SORTIE_API_KEY is exported by then').toMatch(/^sk_/);
        browser ??= await launchChromium();
        const page = await (await browser.newContext({ viewport: { width: 1400, height: 1000 } })).newPage();
        const problems = await watchPageProblems(page);
        await page.goto(`http://localhost:${ports.http}/`);
        await page.fill('#api-key', key);
        await page.click('button[type=submit]');
        const entry = page.locator('.datasets li').filter({ has: page.locator('a', { hasText: new RegExp(`^${dataset}$`) }) });
        await entry.waitFor({ timeout: 30_000 });
        await expect.poll(() => entry.locator('[data-fact]').allTextContents(), { timeout: 30_000 }).toEqual(expect.arrayContaining(facts));
        await entry.locator('a').click();
        // Its span in the header (a flight streamed seconds ago is still marked live: "→ streaming").
        await expect.poll(() => page.textContent('[data-testid=dataset-span]'), { timeout: 30_000 }).toMatch(/^\d{4}-\d\d-\d\d [\d:.]+ UTC → /);
        expect(problems).toEqual([]);
        await page.context().close();
      });
      continue;
    }
    const { step } = item;
    const title = `line ${step.line}: ${step.command.split('\n')[0]!.slice(0, 90)}`;
    it(title, { timeout: STEP_TIMEOUT_MS + 60_000 }, async () => {
      onTestFailed(async () => {
        const log = await readFile(backgroundLog, 'utf8').catch(() => '');
        console.error(`background jobs' output (last 3,000 characters):\n${log.slice(-3000)}`);
      });
      const command = toBackgroundLog(localise(substitute(step.command, values)));
      const { stdout, status, stderr } = await shell.run(command);
      expect(status, `exit status of\n${command}\nstderr:\n${stderr.slice(-3000)}\nstdout:\n${stdout.slice(-2000)}`).toBe(0);
      if (/\bnpm start\b[^\n]*&/.test(command) || /^deno task start[^\n]*&/m.test(command)) {
        await waitForHttp(`http://127.0.0.1:${ports.http}/readyz`, 120_000);
      }
      if (/\bnpm run -?s? ?receiver\b[^\n]*&/.test(command)) {
        await waitForHttp(`http://127.0.0.1:${ports.http}/healthz`, 10_000);
        await shell.run(`for i in $(seq 1 300); do (exec 3<>/dev/tcp/127.0.0.1/${ports.receiver}) 2>/dev/null && break; sleep 0.1; done`);
      }
      if (step.expected.length === 0) return;
      const captured = matchOutput(step.expected.join('\n'), stdout, values);
      expect(captured, `output of\n${command}\n\nexpected (… = anything, <name> = a value):\n${step.expected.join('\n')}\n\nactual:\n${stdout.length > 3000 ? `${stdout.slice(0, 3000)}… (${stdout.length} characters)` : stdout}\nstderr:\n${stderr.slice(-2000)}`).not.toBeNull();
      for (const [name, value] of captured!) values.set(name, value);
    });
  }
});
