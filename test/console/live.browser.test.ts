// The console following flights live, in real Chromium against the real service (PostgreSQL, JetStream,
// HTTPS receivers): the edge agent streams a real flight while the page is open and the page follows it
// with no user action; limit rules the server watches cross, and the page shows them; a command
// dispatched elsewhere changes status in the view through the Follow stream, with no polling. Also
// where the screenshots of a live flight with a limit crossed come from.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RECEIVER_HOST, startDeliveryFixture, startHttpsReceiver, type DeliveryFixture, type TestOrg, type TestReceiver } from '@sortie/cloud/testing';
import { FIXTURES, fixturePath, startAgentProcess, type AgentProcess } from '@sortie/edge-agent/testing';
import type { Browser, Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { launchChromium, screenshotDir, seriousAxeViolations, SKIP_BROWSER, watchPageProblems } from './browser.ts';

const ROLL = 'mavlink.ATTITUDE.roll';
const ALT = 'mavlink.VFR_HUD.alt';

// What the page shows arrives over the network from a service sharing the machine with other suites.
vi.setConfig({ expect: { poll: { timeout: 15_000, interval: 50 } } });

/** The requests a page makes, with when: what proves that something arrived without being asked for. */
function logRequests(page: Page): Array<{ url: string; at: number }> {
  const log: Array<{ url: string; at: number }> = [];
  page.on('request', (r: Request) => log.push({ url: r.url(), at: Date.now() }));
  return log;
}

/**
 * When (Unix ms, the page's wall clock: the machine's, as the test's) each selector first matched, taken in
 * the animation frame after the mutation that made it match: the frame in which it is painted.
 */
async function watchFirstSeen(page: Page, selectors: string[]): Promise<void> {
  await page.evaluate((list) => {
    const seen: Record<string, number> = {};
    (window as unknown as { __firstSeen: Record<string, number> }).__firstSeen = seen;
    const check = () => {
      for (const s of list) {
        if (seen[s] === undefined && document.querySelector(s)) {
          seen[s] = -1;
          requestAnimationFrame(() => (seen[s] = performance.timeOrigin + performance.now()));
        }
      }
    };
    new MutationObserver(check).observe(document.body, { subtree: true, childList: true, attributes: true });
    check();
  }, selectors);
}

/** When `selector` was first painted (Unix ms), 0 before, -1 while its frame is pending. */
const firstSeen = (page: Page, selector: string): Promise<number> => page.evaluate((s) => (window as unknown as { __firstSeen: Record<string, number> }).__firstSeen[s] ?? 0, selector);

describe.skipIf(SKIP_BROWSER)('the console following a flight live', () => {
  let f: DeliveryFixture;
  let org: TestOrg;
  let browser: Browser;
  // One list per page, filled as problems arrive (browser.ts).
  const problems: string[][] = [];
  let experimentId: string;
  let agent: AgentProcess | undefined;
  let receiver: TestReceiver | undefined;
  const dirs: string[] = [];
  const { dir: shots, temporary } = screenshotDir();
  if (temporary) dirs.push(shots);
  let wallClock: ReturnType<typeof setInterval> | undefined;
  let feeder: { stop: () => Promise<void>; level: number } | undefined;

  const call = async (method: string, path: string, body?: unknown, key = org.key) => {
    const r = await f.t.call(method, path, { key, body });
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };

  async function openSignedIn(url: string): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1100 } });
    const page = await context.newPage();
    problems.push(await watchPageProblems(page));
    await page.goto(`${f.t.url}/`);
    await page.fill('#api-key', org.key);
    await page.click('button[type=submit]');
    await page.waitForSelector('[data-testid=organization]');
    await page.goto(url);
    return page;
  }

  beforeAll(async () => {
    f = await startDeliveryFixture();
    // Arming and ack deadlines run on the service's test clock: keep it on the wall clock.
    wallClock = setInterval(() => f.t.clock.set(new Date()), 50);
    org = await f.t.createOrg('Range Ops');
    experimentId = (await call('POST', '/api/experiments/create', { name: 'VTOL test day' })).id;
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    clearInterval(wallClock);
    await feeder?.stop();
    agent?.child.kill('SIGKILL');
    await browser?.close();
    await receiver?.close();
    await f?.stop();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('marks a streaming flight live and follows it: plot, track, mode band and LINK_LOSS marks grow with no user action; limits show as banners and bands', async () => {
    // Rules on the experiment apply to the dataset the agent is about to create.
    await call('POST', '/api/limits/create', { experimentId, name: 'Altitude advisory', signal: ALT, condition: 'above', high: 600, severity: 'warning' });
    await call('POST', '/api/limits/create', { experimentId, name: 'Altitude ceiling', signal: ALT, condition: 'above', high: 620, holdMs: 500, severity: 'critical' });
    const spool = await mkdtemp(join(tmpdir(), 'console-live-agent-'));
    dirs.push(spool);
    // The real flight at four times its pace (207 s in 52 s); its 2 s and longer silences become LINK_LOSS events.
    agent = startAgentProcess(
      ['--source', `file:${fixturePath(FIXTURES.tlog)}`, '--spool-dir', spool, '--cloud', f.t.url, '--grpc', f.t.service.grpcUrl, '--experiment', experimentId, '--sortie', 'vtol', '--speed', '4', '--link-loss-seconds', '2'],
      { SORTIE_AGENT_API_KEY: org.key },
    );
    let datasetId = '';
    await expect
      .poll(async () => {
        const d = (await call('GET', '/api/experiments/list'))[0]?.datasets.find((x: { name: string; lastDataAt: string | null }) => x.name === 'vtol-sys1' && x.lastDataAt);
        datasetId = d?.id ?? '';
        return datasetId;
      })
      .not.toBe('');

    const page = await openSignedIn(`${f.t.url}/?experiment=${experimentId}&dataset=${datasetId}&channel=${encodeURIComponent(ROLL)}&channel=${encodeURIComponent(ALT)}`);
    const requests = logRequests(page);
    // Marked live in the list, and the view follows.
    await expect.poll(() => page.locator('.datasets li[data-live=true]', { hasText: 'vtol-sys1' }).count()).toBe(1);
    expect(await page.locator('.datasets li', { hasText: 'vtol-sys1' }).locator('.live-badge').textContent()).toBe('live');
    await expect.poll(() => page.getAttribute('[data-testid=live-state]', 'data-state')).toBe('live');
    await expect.poll(() => page.textContent('[data-testid=live-state]')).toBe('Live');

    const roll = page.locator(`figure.pane[data-channel="${ROLL}"] .pane-canvas`);
    const state = async () => ({
      xMax: Number(await roll.getAttribute('data-x-max')),
      shown: Number(await page.getAttribute(`figure.pane[data-channel="${ROLL}"]`, 'data-shown-points')),
      fixes: Number((await page.locator('.track svg').getAttribute('data-fixes').catch(() => '0')) ?? 0),
      bandEnd: Number((await page.locator('.state-band').getAttribute('data-end').catch(() => '0')) ?? 0),
      linkLoss: await page.locator('.mark[data-kind=event][aria-label*="LINK_LOSS"]').count(),
    });
    await expect.poll(async () => (await state()).fixes).toBeGreaterThan(0);
    const before = await state();
    const queriesBefore = requests.filter((r) => r.url.endsWith('/TelemetryService/Query')).length;
    // No click, no scroll: only time passes.
    await expect.poll(async () => (await state()).xMax, { timeout: 10_000 }).toBeGreaterThan(before.xMax + 2);
    await expect.poll(async () => (await state()).fixes).toBeGreaterThan(before.fixes);
    await expect.poll(async () => (await state()).bandEnd).toBeGreaterThan(before.bandEnd);
    await expect.poll(async () => (await state()).linkLoss).toBeGreaterThan(before.linkLoss);
    const after = await state();
    expect(after.shown).toBeGreaterThan(0);
    // The plot's window slides: its right edge is the newest sample, sixty seconds across, on the UTC axis.
    expect(Number(await roll.getAttribute('data-x-max')) - Number(await roll.getAttribute('data-x-min'))).toBeCloseTo(60, 0);
    // All of it came over the Follow stream: nothing was queried again.
    expect(requests.filter((r) => r.url.endsWith('/TelemetryService/Query')).length).toBe(queriesBefore);
    expect(requests.filter((r) => r.url.endsWith('/TelemetryService/Follow')).length).toBeLessThanOrEqual(1);

    // The flight climbs through 600 m (warning) and, for more than half a second, 620 m (critical).
    const critical = page.locator('[data-testid=limit-banner][data-severity=critical]');
    await expect.poll(() => critical.count(), { timeout: 30_000 }).toBe(1);
    expect(await critical.textContent()).toMatch(/^CRITICAL mavlink\.VFR_HUD\.alt above 620 m — worst 6\d\d(\.\d+)? m at \d\d:\d\d:\d\d\.\d{3} UTC · since \d\d:\d\d:\d\d\.\d{3} UTC · rule "Altitude ceiling"$/);
    expect(await page.locator('[data-testid=limit-banner][data-severity=warning]').textContent()).toMatch(/^WARNING mavlink\.VFR_HUD\.alt above 600 m/);
    // Bands over the crossings on every pane, listed under the plots on the same axis.
    await expect.poll(() => page.locator('.limit-span[data-severity=critical][data-active=true]').count()).toBe(1);
    await expect.poll(async () => Number(await roll.getAttribute('data-limit-bands'))).toBeGreaterThanOrEqual(2);
    // The mode changes from QLOITER to CIRCLE 39 s into the flight: the band shows both.
    await expect.poll(() => page.locator('.state-band .band').allTextContents(), { timeout: 20_000 }).toEqual(expect.arrayContaining([expect.stringMatching(/^QLOITER/), expect.stringMatching(/^CIRCLE/)]));
    // Wide enough to read its name before the screenshot (the band grows by the flight's pace).
    await expect.poll(async () => (await page.locator('.state-band .band', { hasText: 'CIRCLE' }).boundingBox())?.width ?? 0, { timeout: 20_000 }).toBeGreaterThan(110);
    await page.mouse.move(5, 5);
    expect(await seriousAxeViolations(page), 'axe on the live flight view').toEqual([]);
    await page.locator('.workspace').screenshot({ path: join(shots, 'console-live-limit.png') });
    await page.screenshot({ path: join(shots, 'console-live.png') });

    // Pause: the view holds still while the flight goes on streaming; Resume live follows again.
    await page.click('button:text-is("Pause")');
    await expect.poll(() => page.getAttribute('[data-testid=live-state]', 'data-state')).toBe('paused');
    expect(page.url()).toContain('from=');
    await expect.poll(() => roll.getAttribute('data-x-max')).not.toBe(String(after.xMax));
    const held = await roll.getAttribute('data-x-max');
    await page.waitForTimeout(1500);
    expect(await roll.getAttribute('data-x-max')).toBe(held);
    // The limit banner still says what is crossed while paused: events keep arriving.
    expect(await critical.count()).toBe(1);
    await page.click('button:text-is("Resume live")');
    await expect.poll(() => page.getAttribute('[data-testid=live-state]', 'data-state')).toBe('live');
    expect(page.url()).not.toContain('from=');
    await expect.poll(async () => Number(await roll.getAttribute('data-x-max'))).toBeGreaterThan(Number(held));

    // Zooming leaves live mode too (the window zoomed is the one kept), and the same control returns.
    const over = (await page.locator(`figure.pane[data-channel="${ROLL}"] .u-over`).boundingBox())!;
    await page.mouse.move(over.x + over.width * 0.3, over.y + 20);
    await page.mouse.down();
    await page.mouse.move(over.x + over.width * 0.6, over.y + 20, { steps: 4 });
    await page.mouse.up();
    await expect.poll(() => page.getAttribute('[data-testid=live-state]', 'data-state')).toBe('paused');
    await page.click('button:text-is("Resume live")');
    await expect.poll(() => page.getAttribute('[data-testid=live-state]', 'data-state')).toBe('live');
    agent.child.kill('SIGKILL');
    await page.context().close();
  }, 180_000);

  it('shows a limit crossing as a banner and a band within a second of the crossing batch being sent', async () => {
    const reg = await call('POST', '/api/streams/register', { experimentId, datasetName: 'thrust stand', channels: [{ name: 'thrust', unit: 'N', dataType: 'double' }] });
    const datasetId: string = reg.datasetId;
    await call('POST', '/api/limits/create', { experimentId, datasetId, name: 'Stand load', signal: '0', condition: 'above', high: 100, severity: 'critical' });
    feeder = startFeeder(f.t.url, org.key, experimentId, datasetId);
    await expect.poll(async () => (await call('GET', '/api/experiments/list'))[0].datasets.find((d: { id: string }) => d.id === datasetId)?.lastDataAt ?? null).not.toBeNull();

    const page = await openSignedIn(`${f.t.url}/?experiment=${experimentId}&dataset=${datasetId}&channel=ch_0`);
    await expect.poll(() => page.getAttribute('[data-testid=live-state]', 'data-state')).toBe('live');
    await expect.poll(async () => Number(await page.getAttribute('figure.pane[data-channel="ch_0"]', 'data-shown-points'))).toBeGreaterThan(0);
    expect(await page.locator('[data-testid=limit-banner]').count()).toBe(0);
    await watchFirstSeen(page, ['[data-testid=limit-banner]', '.limit-span[data-active=true]']);

    // The crossing batch: timed from just before it is sent to the banner (and the band) being painted.
    await feeder.stop();
    const sent = Date.now();
    await append(f.t.url, org.key, experimentId, datasetId, 150, 10);
    feeder = startFeeder(f.t.url, org.key, experimentId, datasetId, 150);
    await expect.poll(() => firstSeen(page, '[data-testid=limit-banner]')).toBeGreaterThan(0);
    await expect.poll(() => firstSeen(page, '.limit-span[data-active=true]')).toBeGreaterThan(0);
    const bannerMs = (await firstSeen(page, '[data-testid=limit-banner]')) - sent;
    const bandMs = (await firstSeen(page, '.limit-span[data-active=true]')) - sent;
    console.log(`limit crossing: batch sent → banner painted ${bannerMs.toFixed(0)} ms, → band painted ${bandMs.toFixed(0)} ms`);
    expect(bannerMs).toBeLessThan(1000);
    expect(bandMs).toBeLessThan(1000);
    expect(await page.textContent('[data-testid=limit-banner]')).toMatch(/^CRITICAL thrust above 100 N — worst 1[45]\d(\.\d+)? N at [\d:.]+ UTC · since [\d:.]+ UTC · rule "Stand load"$/);
    await expect.poll(async () => Number(await page.getAttribute('figure.pane[data-channel="ch_0"] .pane-canvas', 'data-limit-bands'))).toBe(1);

    // Back under the bound: the banner goes, the band stays over the crossing's span.
    await feeder.stop();
    feeder = startFeeder(f.t.url, org.key, experimentId, datasetId, 50);
    await expect.poll(() => page.locator('[data-testid=limit-banner]').count()).toBe(0);
    await expect.poll(() => page.locator('.limit-span[data-active=false]').count()).toBe(1);

    // The frame-to-pixel record bench:live reads: one entry per update applied, drawn after it was received.
    const timings = await page.evaluate(() => (window as unknown as { __sortieLive: { timings: Array<{ headMs?: number; receivedAt: number; drawnAt: number }> } }).__sortieLive.timings);
    expect(timings.length).toBeGreaterThan(5);
    for (const t of timings) expect(t.drawnAt).toBeGreaterThanOrEqual(t.receivedAt);
    const delays = timings.map((t) => t.drawnAt - t.receivedAt).sort((a, b) => a - b);
    console.log(`receipt → drawn over ${delays.length} updates: p50 ${delays[delays.length >> 1]!.toFixed(1)} ms, max ${delays.at(-1)!.toFixed(1)} ms`);
    await page.context().close();
  }, 120_000);

  it('a command dispatched and acked elsewhere changes status in the view through the stream, with no polling', async () => {
    const datasetId: string = (await call('GET', '/api/experiments/list'))[0].datasets.find((d: { name: string }) => d.name === 'thrust stand').id;
    receiver = await startHttpsReceiver(f.cert);
    await call('POST', '/api/webhooks/create', { label: 'stand controller', url: `https://${RECEIVER_HOST}:${receiver.port}/hook` });
    await call('POST', '/api/datasets/arm', { experimentId, datasetId, ttlSeconds: 600 });

    const page = await openSignedIn(`${f.t.url}/?experiment=${experimentId}&dataset=${datasetId}&channel=ch_0`);
    await page.waitForSelector('text=No commands logged on this dataset.');
    await expect.poll(() => page.getAttribute('[data-testid=live-state]', 'data-state')).toBe('live');
    const requests = logRequests(page);
    const polled = () => requests.filter((r) => /\/api\/(commands|datasets\/arming)/.test(r.url)).map((r) => r.url);

    // Logged, dispatched and acknowledged by others: this page only watches.
    const command = await call('POST', '/api/commands/create', { experimentId, datasetId, commandText: 'HOLD THRUST', relTime: 12 });
    const row = page.locator(`tr[data-command="${command.id}"]`);
    await expect.poll(() => row.getAttribute('data-status')).toBe('logged');
    await call('POST', '/api/commands/dispatch', { commandId: command.id, ackTimeoutSeconds: 120 });
    await expect.poll(() => row.getAttribute('data-status')).toBe('queued');
    const [delivery] = await receiver.waitForRequests(1);
    const token = (JSON.parse(delivery!.rawBody.toString()) as { ack: { token: string } }).ack.token;
    const acked = await f.t.call('POST', '/api/commands/ack', { headers: { authorization: `Bearer ${token}` }, body: { commandId: command.id, state: 'acked', detail: 'thrust held' } });
    expect(acked.status).toBeLessThan(300);
    await expect.poll(() => row.getAttribute('data-status')).toBe('acked');
    expect(await row.textContent()).toContain('thrust held');
    expect(await row.textContent()).toMatch(/delivered: [\d:.]+/);
    // The command's life on the time axis, from the same stream.
    await expect.poll(() => page.locator('.mark[data-kind=acked]').count()).toBeGreaterThan(0);
    // Nothing asked for the log or the command: the stream told.
    expect(polled()).toEqual([]);
    await page.context().close();
  }, 120_000);

  it('loaded everything under the CSP without a violation or page error', () => {
    expect(problems.flat()).toEqual([]);
  });
});

/** Rows of the wide channel at 50 Hz ending now, all at `level` (± a little). */
async function append(url: string, key: string, experimentId: string, datasetId: string, level: number, count: number): Promise<void> {
  const end = Date.now();
  const rows = Array.from({ length: count }, (_, i) => ({ timestamp: new Date(end - (count - 1 - i) * 20).toISOString(), values: { thrust: level + Math.sin((end - (count - 1 - i) * 20) / 300) * 3 } }));
  const r = await fetch(`${url}/api/datasets/append`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify({ experimentId, datasetId, rows }) });
  if (!r.ok) throw new Error(`append: ${r.status} ${await r.text()}`);
}

/** A thrust stand streaming: ten rows every 200 ms at `level`, until stopped. */
function startFeeder(url: string, key: string, experimentId: string, datasetId: string, level = 50): { stop: () => Promise<void>; level: number } {
  let running = true;
  const loop = (async () => {
    while (running) {
      await append(url, key, experimentId, datasetId, level, 10);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
  return {
    level,
    stop: async () => {
      running = false;
      await loop;
    },
  };
}
