// The console in real Chromium against the real service (PostgreSQL, JetStream, HTTPS receivers with a
// test-made certificate, the edge agent replaying a real flight): the flows an operator uses, each
// checked by what the page shows, and axe-core on every view. Screenshots for the docs come from here.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type { Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fromBinary } from '@bufbuild/protobuf';
import { timestampDate } from '@bufbuild/protobuf/wkt';
import { QueryRequestSchema } from '@sortie/contracts';
import { RECEIVER_HOST, startDeliveryFixture, startHttpsReceiver, type DeliveryFixture, type TestOrg, type TestReceiver } from '@sortie/cloud/testing';
import { createWebhookReceiver, serveReceiver, type WebhookReceiver } from '@sortie/contracts/examples/webhook-receiver';
import { FIXTURES, fixturePath, startAgentProcess } from '@sortie/edge-agent/testing';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { launchChromium, screenshotDir, seriousAxeViolations, SKIP_BROWSER, watchPageProblems } from './browser.ts';

const ROLL = 'mavlink.ATTITUDE.roll';
const ALT = 'mavlink.VFR_HUD.alt';

// What the page shows arrives over the network from a service sharing the CI machine with the whole
// suite: wait up to 10 s for it (vitest's default is 1 s), so a slow moment fails nothing that is right.
vi.setConfig({ expect: { poll: { timeout: 10_000, interval: 50 } } });

describe.skipIf(SKIP_BROWSER)('the console in Chromium', () => {
  let f: DeliveryFixture;
  let org: TestOrg;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let problems: string[];
  let experimentId: string;
  let datasetId: string;
  let flightStart: Date;
  let exampleServer: Server;
  let example: WebhookReceiver | undefined;
  let failing: TestReceiver | undefined;
  const dirs: string[] = [];
  const { dir: shots, temporary } = screenshotDir();
  if (temporary) dirs.push(shots);
  let wallClock: ReturnType<typeof setInterval> | undefined;

  const call = async (method: string, path: string, body?: unknown, key = org.key) => {
    const r = await f.t.call(method, path, { key, body });
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };

  /** Until the dataset's last telemetry is older than what the console marks live (ten seconds, live.ts). */
  async function untilNotLive(id: string): Promise<void> {
    const d = (await call('GET', '/api/experiments/list')).flatMap((e: { datasets: unknown[] }) => e.datasets).find((x: { id: string }) => x.id === id);
    const age = d?.lastDataAt ? Date.now() - Date.parse(d.lastDataAt) : Infinity;
    if (age < 10_500) await new Promise((resolve) => setTimeout(resolve, 10_500 - age));
  }

  async function signIn(p: Page, key: string): Promise<void> {
    await p.goto(`${f.t.url}/`);
    await p.fill('#api-key', key);
    await p.click('button[type=submit]');
    await p.waitForSelector('[data-testid=organization]');
  }

  async function expectAccessible(p: Page, view: string): Promise<void> {
    expect(await seriousAxeViolations(p), `axe on ${view}`).toEqual([]);
  }

  beforeAll(async () => {
    f = await startDeliveryFixture();
    // The console counts arming down on the browser's wall clock; the service's test clock follows it.
    wallClock = setInterval(() => f.t.clock.set(new Date()), 50);
    org = await f.t.createOrg('Range Ops');
    const experiment = await call('POST', '/api/experiments/create', { name: 'VTOL test campaign' });
    experimentId = experiment.id;
    // The example receiver of the docs, behind HTTPS with the test certificate; its secret is the one the console shows once.
    exampleServer = serveReceiver(
      {
        handle: (raw, headers) => (example ? example.handle(raw, headers) : Promise.resolve({ status: 503, body: 'not configured' })),
        idle: async () => {},
        close: async () => {},
      },
      f.cert,
    );
    await new Promise<void>((resolve) => exampleServer.listen(0, '127.0.0.1', resolve));
    // A real flight, replayed by the agent; --link-loss-seconds 3 turns the capture's 4 s silence into a LINK_LOSS annotation.
    const spool = await mkdtemp(join(tmpdir(), 'console-agent-'));
    dirs.push(spool);
    const agent = startAgentProcess([
      '--source', `file:${fixturePath(FIXTURES.tlog)}`,
      '--spool-dir', spool,
      '--cloud', f.t.url,
      '--grpc', f.t.service.grpcUrl,
      '--experiment', experimentId,
      '--sortie', 'vtol',
      '--speed', 'max',
      '--link-loss-seconds', '3',
    ], { SORTIE_AGENT_API_KEY: org.key });
    const end = await agent.exited;
    if (end.code !== 0) throw new Error(`agent: ${JSON.stringify(end)} ${agent.stderr()}`);
    const experiments = await call('GET', '/api/experiments/list');
    datasetId = experiments[0].datasets.find((d: { name: string }) => d.name === 'vtol-sys1').id;
    // These tests browse a finished flight; one that streamed seconds ago opens live (live.browser.test.ts).
    await untilNotLive(datasetId);
    const first = await fetch(`${f.t.url}/api/rpc/sortie.telemetry.v1.TelemetryService/Query`, {
      method: 'POST',
      headers: { 'x-api-key': org.key, 'content-type': 'application/json' },
      body: JSON.stringify({ experimentId, datasetId, channelIds: [ROLL], maxPointsPerChannel: 100 }),
    }).then((r) => r.json() as Promise<{ series: Array<{ points: Array<{ timestamp: string }> }> }>);
    flightStart = new Date(first.series[0]!.points[0]!.timestamp);
    await call('POST', '/api/commands/templates/create', {
      key: 'payload.release',
      description: 'Release the payload',
      destructive: true,
      argsSchema: { type: 'object', properties: { altitude: { type: 'number', minimum: 0, description: 'metres AGL' } }, required: ['altitude'] },
    });
    browser = await launchChromium();
    context = await browser.newContext({ viewport: { width: 1400, height: 1000 }, acceptDownloads: true, permissions: ['clipboard-read', 'clipboard-write'] });
    page = await context.newPage();
    problems = await watchPageProblems(page);
  }, 240_000);

  afterAll(async () => {
    clearInterval(wallClock);
    await browser?.close();
    await example?.close();
    if (exampleServer) await new Promise((resolve) => exampleServer.close(resolve));
    await failing?.close();
    await f?.stop();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('signs in with a key kept in sessionStorage only, shows the organization and scopes', async () => {
    await page.goto(`${f.t.url}/`);
    await expectAccessible(page, 'sign-in');
    await page.fill('#api-key', 'sk_wrong');
    await page.click('button[type=submit]');
    await expect.poll(() => page.locator('[role=alert]').textContent()).toMatch(/API key/);
    await signIn(page, org.key);
    expect(await page.textContent('[data-testid=organization]')).toContain('Range Ops');
    const scopes = await page.locator('.scopes li').allTextContents();
    expect(scopes).toContain('commands:write');
    expect(scopes).toContain('telemetry:read');
    expect(await page.evaluate(() => sessionStorage.getItem('sortie.apiKey'))).toBe(org.key);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    expect(page.url()).not.toContain(org.key);
    await expectAccessible(page, 'experiments');
  });

  it('browses experiments → datasets → MAVLink signals grouped by message, with unit and type', async () => {
    await page.click('text=vtol-sys1');
    await page.waitForSelector(`input[data-channel="${ROLL}"]`, { state: 'attached' });
    const groups = await page.locator('.channel-groups summary').allTextContents();
    expect(groups.some((g) => g.startsWith('ATTITUDE ('))).toBe(true);
    expect(groups.some((g) => g.startsWith('HEARTBEAT ('))).toBe(true);
    await page.fill('#channel-filter', 'attitude roll');
    expect(await page.locator('.channel-groups summary').allTextContents()).toEqual(['ATTITUDE (2)']);
    expect(await page.locator('.channel-groups li').first().textContent()).toMatch(/rad · float/);
    expect(page.url()).toContain(`dataset=${datasetId}`);
    // Its telemetry arrived more than ten seconds ago: a finished flight, not marked live, opened whole.
    expect(await page.locator('.datasets li', { hasText: 'vtol-sys1' }).getAttribute('data-live')).toBe('false');
    expect(await page.locator('[data-testid=live-state]').count()).toBe(0);
    // The flight's time span (UTC) before anything is plotted: the capture was flown on 2018-08-08.
    await expect.poll(() => page.textContent('[data-testid=dataset-span]')).toMatch(/^2018-08-08 [\d:.]+ UTC → 2018-08-08 [\d:.]+ UTC$/);
  });

  it('plots roll and altitude in stacked panes, never more points than pixels; drag-zoom re-queries with more detail', async () => {
    await page.check(`input[data-channel="${ROLL}"]`);
    await page.fill('#channel-filter', 'VFR_HUD alt');
    await page.check(`input[data-channel="${ALT}"]`);
    await page.fill('#channel-filter', '');
    const roll = page.locator(`figure.pane[data-channel="${ROLL}"]`);
    const alt = page.locator(`figure.pane[data-channel="${ALT}"]`);
    await roll.waitFor();
    await alt.waitFor();
    const before = await paneNumbers(roll);
    // The flight has more roll samples than the pane has pixels, so the whole-flight view is downsampled.
    expect(before.raw).toBeGreaterThan(before.width);
    expect(before.downsampled).toBe(true);
    expect(before.shown).toBeLessThanOrEqual(before.width);
    expect((await paneNumbers(alt)).shown).toBeLessThanOrEqual(before.width);
    expect(page.url()).toContain(`channel=${encodeURIComponent(ROLL)}`);
    // One shared time axis: both panes draw the same range, though their samples start and end apart.
    const range = (pane: typeof roll) => pane.locator('.pane-canvas').evaluate((e) => [(e as HTMLElement).dataset.xMin, (e as HTMLElement).dataset.xMax]);
    await expect.poll(async () => JSON.stringify(await range(alt))).toBe(JSON.stringify(await range(roll)));
    // …on the same pixels, so the synced cursor marks one instant in every pane.
    const area = async (pane: typeof roll) => {
      const box = (await pane.locator('.u-over').boundingBox())!;
      return [Math.round(box.x), Math.round(box.width)];
    };
    expect(await area(alt)).toEqual(await area(roll));

    const windowRequest = page.waitForRequest((r) => r.url().endsWith('/sortie.telemetry.v1.TelemetryService/Query'));
    const over = await roll.locator('.u-over').boundingBox();
    await page.mouse.move(over!.x + over!.width * 0.4, over!.y + over!.height / 2);
    await page.mouse.down();
    await page.mouse.move(over!.x + over!.width * 0.43, over!.y + over!.height / 2, { steps: 5 });
    await page.mouse.up();
    await expect.poll(() => page.url()).toContain('from=');
    await expect.poll(async () => (await paneNumbers(roll)).raw).toBeLessThan(before.raw);
    const after = await paneNumbers(roll);
    // The console's client speaks Connect's binary protocol: decode what it sent with the contract's schema.
    const windowQuery = fromBinary(QueryRequestSchema, (await windowRequest).postDataBuffer()!);
    expect(windowQuery.from).toBeDefined();
    expect(windowQuery.to).toBeDefined();
    // The window asked for is the one the URL now holds (a shared link reproduces it).
    const shown = new URL(page.url());
    expect(timestampDate(windowQuery.from!).toISOString()).toBe(shown.searchParams.get('from'));
    expect(timestampDate(windowQuery.to!).toISOString()).toBe(shown.searchParams.get('to'));
    expect(windowQuery.maxPointsPerChannel).toBeLessThanOrEqual(before.width);
    // More detail: more points shown per raw point (a window of ~3 % of the flight, at up to one point per pixel).
    expect(after.shown / after.raw).toBeGreaterThan(before.shown / before.raw);
    expect(after.shown).toBeLessThanOrEqual(after.width);
    await expectAccessible(page, 'plots');
  });

  it('marks LINK_LOSS on the time axis with its message on hover, and reads the window back from a shared URL', async () => {
    const shared = page.url();
    await page.click('text=Reset zoom');
    await expect.poll(() => page.url()).not.toContain('from=');
    const marker = page.locator('.mark[data-kind=event]', { hasText: '' }).filter({ has: page.locator('xpath=self::*[contains(@aria-label, "LINK_LOSS")]') });
    await expect.poll(() => marker.count()).toBeGreaterThan(0);
    await marker.first().hover();
    expect(await page.textContent('[role=tooltip]')).toContain('LINK_LOSS');
    // What the marks are, readable without hovering each.
    expect(await page.textContent('[data-testid=mark-legend] li[data-kind=event]')).toContain('LINK_LOSS');
    // The shared link opens the same window and channels (the key is not in it: the tab's session holds it).
    expect(shared).not.toContain(org.key);
    await page.goto(shared);
    await page.locator(`figure.pane[data-channel="${ALT}"]`).waitFor();
    expect(await page.textContent('.plot-toolbar')).toContain('Window');
  });

  it('draws the GPS track in local metres, its marker following the plot cursor, and the mode/armed band', async () => {
    await page.click('text=Reset zoom');
    const track = page.locator('svg[data-fixes]');
    await track.waitFor();
    expect(Number(await track.getAttribute('data-fixes'))).toBeGreaterThan(100);
    // A round-length scale bar, so the track's size can be read without map tiles.
    expect(await page.locator('[data-testid=track-scale]').textContent()).toMatch(/^(1|2|5)0* (m|km)$/);
    expect((await page.locator('.track-path').getAttribute('d'))!.length).toBeGreaterThan(1000);
    const over = await page.locator(`figure.pane[data-channel="${ROLL}"] .u-over`).boundingBox();
    await page.mouse.move(over!.x + over!.width * 0.5, over!.y + 20);
    const first = await page.locator('[data-testid=track-marker]').getAttribute('cx');
    await page.mouse.move(over!.x + over!.width * 0.8, over!.y + 20);
    await expect.poll(() => page.locator('[data-testid=track-marker]').getAttribute('cx')).not.toBe(first);
    expect(await page.locator('.band').count()).toBeGreaterThan(0);
    // The band lies on the plots' time axis: inside the plot area's columns, under the plots.
    const plotArea = (await page.locator(`figure.pane[data-channel="${ROLL}"] .u-over`).boundingBox())!;
    const bands = await page.locator('.band').evaluateAll((els) => els.map((e) => e.getBoundingClientRect()).map((r) => [r.left, r.right]));
    expect(Math.min(...bands.map(([l]) => l!))).toBeGreaterThanOrEqual(plotArea.x - 1);
    expect(Math.max(...bands.map(([, r]) => r!))).toBeLessThanOrEqual(plotArea.x + plotArea.width + 1);
    await page.screenshot({ path: join(shots, 'console-flight.png'), fullPage: true });
  });

  it('creates an endpoint (secret shown once) and sends it a test event through the example receiver', async () => {
    await page.click('nav >> text=Webhooks');
    await page.fill('#hook-label', 'example receiver');
    await page.fill('#hook-url', `https://${RECEIVER_HOST}:${(exampleServer.address() as AddressInfo).port}/hooks`);
    await page.click('text=Add endpoint');
    const secret = (await page.textContent('[data-testid=webhook-secret]'))!;
    expect(secret).toMatch(/^whsec_/);
    const journal = await mkdtemp(join(tmpdir(), 'console-receiver-'));
    dirs.push(journal);
    example = await createWebhookReceiver({
      secrets: [secret],
      journalPath: join(journal, 'journal.jsonl'),
      // The vehicle acts 42 s into the replayed flight (the command's relTime) and says so in its own time,
      // so the ack lands on the plot's time axis inside the flight.
      act: async () => ({ state: 'acked', detail: 'released by the example receiver', vehicleTime: new Date(flightStart.getTime() + 42_000).toISOString() }),
    });
    await page.click('.secret button:text-is("Copy")');
    await expect.poll(() => page.locator('.secret button').first().textContent()).toBe('Copied');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    await page.click('text=I have stored it');
    expect(await page.locator('[data-testid=webhook-secret]').count()).toBe(0);
    await page.click('text=Send test event');
    await expect.poll(() => page.locator('[data-testid=test-result]').textContent(), { timeout: 15_000 }).toMatch(/HTTP 2\d\d/);
    await expectAccessible(page, 'webhooks');
  });

  it('rotates an endpoint (the new secret shown once, the old one accepted until a time) and deletes it after confirming', async () => {
    await page.fill('#hook-label', 'spare receiver');
    // A refused URL is answered in the envelope and shown with its field.
    await page.fill('#hook-url', `https://${RECEIVER_HOST}:9/spare`);
    await page.click('text=Add endpoint');
    await expect.poll(() => page.textContent('.webhooks > [role=alert]')).toMatch(/url: webhook URL port 9 is not allowed/);
    await page.fill('#hook-label', 'spare receiver');
    await page.fill('#hook-url', `https://${RECEIVER_HOST}:8443/spare`);
    await page.click('text=Add endpoint');
    const first = (await page.textContent('[data-testid=webhook-secret]'))!;
    await page.click('text=I have stored it');
    const row = page.locator('tr[data-endpoint]', { hasText: 'spare receiver' });
    await row.locator('text=Rotate secret').click();
    await expect.poll(() => page.textContent('[data-testid=webhook-secret]')).toMatch(/^whsec_/);
    expect(await page.textContent('[data-testid=webhook-secret]')).not.toBe(first);
    await page.click('text=I have stored it');
    await expect.poll(() => row.textContent()).toMatch(/Rotating: the previous secret is accepted until \d{4}-\d\d-\d\d [\d:.]+ UTC/);
    page.once('dialog', (dialog) => void dialog.accept());
    await row.locator('text=Delete').click();
    await expect.poll(() => row.count()).toBe(0);
    expect(await page.locator('tr[data-endpoint]', { hasText: 'example receiver' }).count()).toBe(1);
  });

  it('logs a command from a template form, arms with a live countdown, dispatches after typing its text, and shows acked live', async () => {
    await page.goto(`${f.t.url}/?experiment=${experimentId}&dataset=${datasetId}&channel=${encodeURIComponent(ROLL)}`);
    await page.selectOption('#cmd-template', 'payload.release');
    await page.fill('#cmd-text', 'RELEASE PAYLOAD');
    await page.fill('#cmd-reltime', '42');
    await page.fill('#arg-altitude', '30');
    await page.click('text=Log command');
    const row = page.locator('tr[data-command]', { hasText: 'RELEASE PAYLOAD' });
    await expect.poll(() => row.getAttribute('data-status')).toBe('logged');
    expect(await row.textContent()).toContain('"altitude":30');

    await page.fill('#arm-ttl', '600');
    await page.click('button:text-is("Arm")');
    const countdown = async () => Number(/expires in (\d+) s/.exec((await page.textContent('[data-testid=arming-state]')) ?? '')?.[1]);
    await expect.poll(countdown).toBeGreaterThan(590);
    const first = await countdown();
    await expect.poll(countdown, { timeout: 5000 }).toBeLessThan(first);

    await page.evaluate(() => ((window as unknown as { notReloaded: boolean }).notReloaded = true));
    await row.locator('text=Dispatch…').click();
    const confirm = row.locator('button:text-is("Confirm dispatch")');
    expect(await confirm.isDisabled()).toBe(true);
    await row.locator('input[id^=typed-]').fill('RELEASE PAYLOAD');
    await confirm.click();
    await expect.poll(() => row.getAttribute('data-status'), { timeout: 20_000 }).toBe('acked');
    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
    expect(await row.textContent()).toContain('vehicle time');
    // Each time on one line: a timestamp split across lines is misread.
    const lines = await row.locator('.times li').evaluateAll((items) => items.map((li) => li.getBoundingClientRect().height / parseFloat(getComputedStyle(li).fontSize)));
    expect(lines.length).toBeGreaterThan(2);
    for (const ems of lines) expect(ems).toBeLessThan(2);
    await row.locator('text=/Deliveries/').click();
    await expect.poll(() => row.locator('.attempts').textContent()).toMatch(/HTTP 202/);
    // The command's life on the plot's time axis.
    await expect.poll(() => page.locator('.mark[data-kind=acked]').count()).toBeGreaterThan(0);
    await expectAccessible(page, 'commands');
    await page.locator('.commands').screenshot({ path: join(shots, 'console-commands.png') });
  });

  it('keeps the log in relTime order, retracts a logged command, and disarms', async () => {
    await page.selectOption('#cmd-template', '');
    await page.fill('#cmd-text', 'HOLD');
    await page.fill('#cmd-reltime', '7');
    await page.click('text=Log command');
    const row = page.locator('tr[data-command]', { hasText: 'HOLD' });
    await expect.poll(() => row.getAttribute('data-status')).toBe('logged');
    expect(await page.locator('tr[data-command] td:first-child .reltime').allTextContents()).toEqual(['T+7 s', 'T+42 s']);
    await row.locator('text=Retract').click();
    await expect.poll(() => row.locator('.chip-retracted').count()).toBe(1);
    expect(await row.locator('text=Dispatch…').isDisabled()).toBe(true);
    await page.click('button:text-is("Disarm")');
    await expect.poll(() => page.textContent('[data-testid=arming-state]')).toBe('Disarmed');
  });

  it('exports the plotted channels over the visible window as CSV equal to Query row for row', async () => {
    await page.goto(`${f.t.url}/?experiment=${experimentId}&dataset=${datasetId}&channel=${encodeURIComponent(ROLL)}&channel=${encodeURIComponent(ALT)}`);
    const roll = page.locator(`figure.pane[data-channel="${ROLL}"]`);
    await roll.waitFor();
    const over = await roll.locator('.u-over').boundingBox();
    await page.mouse.move(over!.x + over!.width * 0.3, over!.y + 20);
    await page.mouse.down();
    await page.mouse.move(over!.x + over!.width * 0.35, over!.y + 20, { steps: 4 });
    await page.mouse.up();
    await expect.poll(() => page.url()).toContain('from=');
    const url = new URL(page.url());
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('text=/Export CSV/')]);
    const csv = await readFile((await download.path())!, 'utf8');
    const lines = csv.trim().split(/\r?\n/);
    expect(lines[0]).toBe(`time,time_unix_us,${ROLL},${ALT}`);
    const rows = lines.slice(1).map((l) => l.split(','));
    expect(rows.length).toBeGreaterThan(10);
    const query = await fetch(`${f.t.url}/api/rpc/sortie.telemetry.v1.TelemetryService/Query`, {
      method: 'POST',
      headers: { 'x-api-key': org.key, 'content-type': 'application/json' },
      body: JSON.stringify({ experimentId, datasetId, channelIds: [ROLL, ALT], from: url.searchParams.get('from'), to: url.searchParams.get('to'), maxPointsPerChannel: 1_000_000 }),
    }).then((r) => r.json() as Promise<{ series: Array<{ points: Array<{ timestamp: string; value: number }>; rawPoints: string }> }>);
    for (const [column, series] of query.series.entries()) {
      // Query without downsampling (max points above the raw count) is the raw rows; the CSV's non-empty cells of the column must be exactly those.
      expect(series.points.length).toBe(Number(series.rawPoints));
      const fromCsv = rows.filter((r) => r[2 + column] !== '' && r[2 + column] !== undefined).map((r) => [Number(r[1]), Number(r[2 + column])]);
      const fromQuery = series.points.map((p) => [Math.round(microseconds(p.timestamp)), p.value]);
      expect(fromCsv.length).toBe(fromQuery.length);
      fromCsv.forEach(([t, v], i) => {
        expect(t).toBe(fromQuery[i]![0]);
        expect(v).toBeCloseTo(fromQuery[i]![1]!, 5);
      });
    }
  });

  it('shows an endpoint auto-disabled after 20 failed attempts with the owner notification', async () => {
    const other = await f.t.createOrg('Failing Ops');
    failing = await startHttpsReceiver(f.cert);
    failing.answer(() => ({ status: 500, body: 'receiver down' }));
    const endpoint = await call('POST', '/api/webhooks/create', { label: 'down receiver', url: `https://${RECEIVER_HOST}:${failing.port}/hook` }, other.key);
    const exp = await call('POST', '/api/experiments/create', { name: 'failing' }, other.key);
    const reg = await call('POST', '/api/streams/register', { experimentId: exp.id, datasetName: 'vehicle', channels: [{ name: 'alt' }] }, other.key);
    await call('POST', '/api/datasets/arm', { datasetId: reg.datasetId, ttlSeconds: 600 }, other.key);
    const command = await call('POST', '/api/commands/create', { experimentId: exp.id, datasetId: reg.datasetId, commandText: 'RTL', relTime: 1 }, other.key);
    await call('POST', '/api/commands/dispatch', { commandId: command.id, ackTimeoutSeconds: 120 }, other.key);
    await expect.poll(async () => (await call('GET', '/api/webhooks/list', undefined, other.key)).find((e: { id: string }) => e.id === endpoint.id).disabledAt, { timeout: 60_000, interval: 500 }).toBeTruthy();
    const ownerPage = await (await browser.newContext({ viewport: { width: 1400, height: 900 } })).newPage();
    await signIn(ownerPage, other.key);
    await ownerPage.click('nav >> text=Webhooks');
    const state = ownerPage.locator('tr[data-endpoint] [data-testid=endpoint-state]');
    await expect.poll(() => state.textContent()).toBe('disabled');
    expect(await ownerPage.locator('tr[data-endpoint]').textContent()).toContain('20 consecutive failed delivery attempts');
    // Nothing is sent to a disabled endpoint, so its test button is not offered.
    expect(await ownerPage.locator('tr[data-endpoint] button:text-is("Send test event")').isDisabled()).toBe(true);
    await expect.poll(() => ownerPage.locator('.notifications li').count()).toBeGreaterThan(0);
    expect(await ownerPage.locator('.notifications').textContent()).toContain(`after 20 failed attempts`);
    await expectAccessible(ownerPage, 'webhooks with a disabled endpoint');
    await ownerPage.screenshot({ path: join(shots, 'console-webhooks.png') });
    await ownerPage.context().close();
  });

  it('a key without commands:write sees dispatch, arm and create disabled, each saying the scope it needs', async () => {
    const { apiKey } = await org.keyWith(['datasets:read', 'telemetry:read', 'commands:read']);
    const limited = await (await browser.newContext()).newPage();
    await signIn(limited, apiKey);
    await limited.goto(`${f.t.url}/?experiment=${experimentId}&dataset=${datasetId}`);
    await limited.locator('tr[data-command]').first().waitFor();
    expect(await limited.locator('tr[data-command] button:text("Dispatch…")').first().isDisabled()).toBe(true);
    expect(await limited.locator('button:text-is("Arm")').isDisabled()).toBe(true);
    expect(await limited.locator('text=Log command').isDisabled()).toBe(true);
    expect(await limited.locator('.needs', { hasText: 'needs the commands:write scope' }).count()).toBeGreaterThan(0);
    await limited.click('nav >> text=Webhooks');
    await expect.poll(() => limited.locator('.needs', { hasText: 'needs the webhooks:read scope' }).count()).toBeGreaterThan(0);
    await expectAccessible(limited, 'limited key');
    // Signing out forgets the key: nothing of it stays in the tab.
    await limited.click('text=Sign out');
    await limited.locator('#api-key').waitFor();
    expect(await limited.evaluate(() => sessionStorage.length + localStorage.length)).toBe(0);
    await limited.context().close();
  });

  it("plots a wide dataset's channel (Query addresses it by its ch_N index); a text channel is listed but cannot be plotted", async () => {
    const reg = await call('POST', '/api/streams/register', {
      experimentId,
      datasetName: 'thrust stand',
      channels: [
        { name: 'thrust', unit: 'N', dataType: 'double' },
        { name: 'phase', unit: '', dataType: 'string' },
      ],
    });
    const start = Date.UTC(2026, 0, 5, 9, 0, 0);
    const rows = Array.from({ length: 3000 }, (_, i) => ({
      timestamp: new Date(start + i * 10).toISOString(),
      values: { thrust: Math.sin(i / 100) * 50 + 50, ...(i % 1000 === 0 && { phase: `step ${i / 1000}` }) },
    }));
    await call('POST', '/api/datasets/append', { experimentId, datasetId: reg.datasetId, rows });
    // A user event, beside the agent's LINK_LOSS: a marker on the same axis with its message.
    await call('POST', '/api/datasets/events', { experimentId, datasetId: reg.datasetId, events: [{ timestamp: new Date(start + 10_000).toISOString(), kind: 'NOTE', message: 'ballast dropped' }] });
    await untilNotLive(reg.datasetId);
    await page.goto(`${f.t.url}/?experiment=${experimentId}&dataset=${reg.datasetId}`);
    await page.locator('text=thrust stand').first().waitFor();
    expect(await page.locator('.datasets li', { hasText: 'thrust stand' }).textContent()).toContain('wide');
    await expect.poll(() => page.textContent('[data-testid=dataset-span]')).toBe('2026-01-05 09:00:00.000 UTC → 2026-01-05 09:00:29.990 UTC');
    expect(await page.locator('input[data-channel="ch_1"]').isDisabled()).toBe(true);
    expect(await page.locator('.channel-groups li', { hasText: 'phase' }).textContent()).toContain('not plotted');
    await page.check('input[data-channel="ch_0"]');
    const pane = page.locator('figure.pane[data-channel="ch_0"]');
    await expect.poll(() => pane.getAttribute('data-raw-points')).toBe('3000');
    expect(await page.locator('.plot-toolbar [role=alert]').count()).toBe(0);
    expect((await paneNumbers(pane)).shown).toBeLessThanOrEqual((await paneNumbers(pane)).width);
    const note = page.locator('.mark[data-kind=event][aria-label*="NOTE: ballast dropped"]');
    await note.hover();
    expect(await page.textContent('[role=tooltip]')).toBe('2026-01-05 09:00:10.000 UTC — NOTE: ballast dropped');
    // A third of the way along the 30 s axis, on the plot area's pixels.
    const over = (await pane.locator('.u-over').boundingBox())!;
    const mark = (await note.boundingBox())!;
    expect(Math.abs(mark.x + mark.width / 2 - (over.x + (over.width * 10) / 29.99))).toBeLessThan(2);
    await expectAccessible(page, 'wide dataset');
  });

  it('loaded everything under the CSP without a violation or page error', () => {
    expect(problems).toEqual([]);
  });
});

async function paneNumbers(pane: ReturnType<Page['locator']>) {
  const [raw, shown, downsampled, width] = await Promise.all([
    pane.getAttribute('data-raw-points'),
    pane.getAttribute('data-shown-points'),
    pane.getAttribute('data-downsampled'),
    pane.locator('.u-over').evaluate((e) => (e as HTMLElement).clientWidth),
  ]);
  return { raw: Number(raw), shown: Number(shown), downsampled: downsampled === 'true', width };
}

function microseconds(rfc3339: string): number {
  const fraction = /\.(\d+)/.exec(rfc3339)?.[1] ?? '';
  const whole = Date.parse(rfc3339.replace(/\.\d+/, ''));
  return whole * 1000 + Number((fraction + '000000').slice(0, 6));
}
