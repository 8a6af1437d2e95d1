// The console's lists as a newcomer and a flight-test engineer use them, in real Chromium against the real
// service: a flight is found by what the list says of it (date, duration, vehicle, autopilot, frames)
// without opening it, on synthetic streams of autopilots nobody on the project flew (an ArduSub dive whose
// companion computer sends HEARTBEATs too, a PX4 mission) and a wide test-stand dataset; a webhook endpoint
// whose deliveries fail says so (its failure streak, what its receiver answered last and when, why it was
// disabled), from real deliveries to real HTTPS receivers; the first experiment is made from the list view
// itself; and the whole walk raises no CSP report.
import type { Browser, Page } from 'playwright-core';
import { createSortieClient, type SortieClient } from '@sortie/client';
import { createStreamSubmitClient } from '@sortie/client/node';
import { RECEIVER_HOST, startDeliveryFixture, startHttpsReceiver, type DeliveryFixture, type TestOrg, type TestReceiver } from '@sortie/cloud/testing';
import { ardusubDiveWithCompanion, px4Mission, type SyntheticFrame } from '@sortie/contracts/testing';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { launchChromium, screenshotDir, seriousAxeViolations, SKIP_BROWSER, watchPageProblems } from './browser.ts';

vi.setConfig({ expect: { poll: { timeout: 10_000, interval: 50 } } });

/** Flights of 5 January 2026, 09:00 UTC: fixed, so the list's date is known. */
const START_US = Date.UTC(2026, 0, 5, 9, 0, 0) * 1000;

describe.skipIf(SKIP_BROWSER)('lists that inform, in Chromium', () => {
  let f: DeliveryFixture;
  let org: TestOrg;
  let client: SortieClient;
  let browser: Browser;
  let page: Page;
  /** One list per page, filled as problems arrive (browser.ts). */
  const problems: string[][] = [];
  let experimentId: string;
  const datasets = new Map<string, string>();

  /** A MAVLink flight as the agent sends it (one dataset per system id), each frame received 3 ms after it was sent. */
  async function flight(name: string, frames: readonly SyntheticFrame[]): Promise<void> {
    const { datasetId } = await client.datasets.register({ experimentId, datasetName: name, storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' });
    const at = (us: number) => ({ seconds: BigInt(Math.floor(us / 1e6)), nanos: (us % 1e6) * 1000 });
    const points = frames.map((f, i) => ({ timestamp: at(START_US + f.atUs + 3_000), type: { case: 'bytes' as const, value: f.bytes }, frameSeq: BigInt(i + 1) }));
    const sent = await createStreamSubmitClient({ grpcUrl: f.t.service.grpcUrl, apiKey: org.key }).streamSubmit({ experimentId, datasetId, format: 'mavlink-raw-v1' }, [{ points }]);
    expect(sent.written).toBe(frames.length);
    datasets.set(name, datasetId);
  }

  /** The facts the list shows under a dataset, by kind. */
  const facts = (name: string) =>
    page.locator('.datasets li').filter({ has: page.locator('a', { hasText: new RegExp(`^${name}$`) }) }).locator('[data-fact]').evaluateAll((els) =>
      Object.fromEntries(els.map((e) => [(e as HTMLElement).dataset.fact, e.textContent])),
    );

  const { dir: shots, temporary } = screenshotDir();
  let wallClock: ReturnType<typeof setInterval> | undefined;
  const receivers: TestReceiver[] = [];
  const endpoints = new Map<string, string>();

  /** An HTTPS receiver answering `status`, registered as endpoint `label`. */
  async function endpoint(label: string, status: number): Promise<void> {
    const receiver = await startHttpsReceiver(f.cert);
    receiver.answer(() => ({ status }));
    receivers.push(receiver);
    const created = await client.webhooks.create({ label, url: `https://${RECEIVER_HOST}:${receiver.port}/hook` });
    endpoints.set(label, created.id);
  }

  beforeAll(async () => {
    // Three attempts in quick succession per delivery, then a minute's wait: a failing endpoint holds still
    // at its streak while the page is read, and one that keeps failing is disabled after a few deliveries.
    f = await startDeliveryFixture({ queue: 'memory', env: { SORTIE_WEBHOOK_RETRY_SCHEDULE: '50ms,50ms,60s' } });
    // The service's clock follows the wall clock, as a deployed one does: attempts, disables and the list's
    // live marks are on it.
    wallClock = setInterval(() => f.t.clock.set(new Date()), 50);
    org = await f.t.createOrg('Harbour Ops');
    client = createSortieClient({ baseUrl: f.t.url, apiKey: org.key });
    experimentId = (await client.experiments.create({ name: 'Real-world autopilots' })).id;
    await flight('bluerov-sys1', ardusubDiveWithCompanion(20));
    await flight('px4-sys1', px4Mission(10));
    const stand = await client.datasets.register({ experimentId, datasetName: 'thrust-stand', channels: [{ name: 'thrust', unit: 'N' }, { name: 'rpm', unit: '1/min', dataType: 'int32' }] });
    await client.datasets.append({
      experimentId,
      datasetId: stand.datasetId,
      rows: Array.from({ length: 120 }, (_, i) => ({ timestamp: new Date(START_US / 1000 + 3_600_000 + i * 500).toISOString(), values: { thrust: 12 + i / 100, rpm: 5400 + i } })),
    });
    datasets.set('thrust-stand', stand.datasetId);

    // Deliveries: a healthy receiver, one that has refused every delivery until it was disabled, and one
    // that failed the last delivery's three attempts (registered after the other was disabled).
    await client.datasets.arm({ datasetId: stand.datasetId, ttlSeconds: 3600 });
    const dispatch = async () => {
      const command = await client.commands.create({ experimentId, datasetId: stand.datasetId, commandText: 'RTL', relTime: 1 });
      await client.commands.dispatch({ commandId: command.id, ackTimeoutSeconds: 600 });
    };
    await endpoint('ground station', 200);
    await endpoint('old relay', 500);
    for (let i = 0; i < 7 && !(await client.webhooks.list()).find((e) => e.label === 'old relay')?.disabledAt; i++) {
      await dispatch();
      await new Promise((resolve) => setTimeout(resolve, 400));
    }
    await endpoint('range safety', 503);
    await dispatch();
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      const listed = await client.webhooks.list();
      if (listed.find((e) => e.label === 'old relay')?.disabledAt && listed.find((e) => e.label === 'range safety')?.consecutiveFailures === 3) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    clearInterval(wallClock);
    await browser?.close();
    for (const r of receivers) await r.close();
    await f?.stop();
    if (temporary) await rm(shots, { recursive: true, force: true });
  });

  /** Signs in with `key` in a tab of its own, as a newcomer would. */
  async function signIn(key: string): Promise<void> {
    await page?.close();
    page = await (await browser.newContext({ viewport: { width: 1400, height: 1000 } })).newPage();
    problems.push(await watchPageProblems(page));
    await page.goto(`${f.t.url}/`);
    await page.fill('#api-key', key);
    await page.click('button[type=submit]');
    await page.waitForSelector('[data-testid=organization]');
  }

  it("flights show their date, duration, vehicle type, autopilot and frame count; the companion computer's HEARTBEAT names nothing", async () => {
    await signIn(org.key);
    await expect.poll(() => facts('bluerov-sys1')).toEqual({
      date: '2026-01-05 09:00 UTC',
      duration: '19.9 s',
      vehicle: 'submarine',
      autopilot: 'ArduSub',
      frames: `${ardusubDiveWithCompanion(20).length.toLocaleString('en-US')} frames`,
    });
    await expect.poll(() => facts('px4-sys1')).toEqual({ date: '2026-01-05 09:00 UTC', duration: '9.98 s', vehicle: 'quadrotor', autopilot: 'PX4', frames: `${px4Mission(10).length} frames` });
    // A test-stand dataset: when and how long, and its samples (no vehicle, no frames).
    await expect.poll(() => facts('thrust-stand')).toEqual({ date: '2026-01-05 10:00 UTC', duration: '59.5 s', samples: '240 samples' });
    // The exact ends are a hover away.
    expect(await page.locator('.datasets li', { hasText: 'px4-sys1' }).locator('[data-fact=duration]').getAttribute('title')).toMatch(/^first to last sample, until 2026-01-05T09:00:09\.\d+Z$/);
    expect(await seriousAxeViolations(page), 'axe on the list').toEqual([]);
  });

  it("webhook endpoints show their failure streak, what their receiver answered last and when, and why one was disabled", async () => {
    await page.click('nav >> text=Webhooks');
    const row = (label: string) => page.locator('tr[data-endpoint]', { has: page.locator('td', { hasText: new RegExp(`^${label}$`) }) });
    const cell = (label: string, id: string) => row(label).locator(`[data-testid=${id}]`);
    await row('range safety').waitFor();
    // Enabled, but failing: not the plain "enabled" a healthy endpoint reads.
    expect(await cell('range safety', 'endpoint-state').textContent()).toBe('enabled');
    expect(await cell('range safety', 'endpoint-failures').textContent()).toBe('failing: 3 in a row');
    expect(await cell('range safety', 'endpoint-last').textContent()).toMatch(/^Last attempt: HTTP 503, \d{4}-\d\d-\d\d [\d:.]+ UTC$/);
    // Disabled, and why: the streak that disabled it and what the receiver kept answering.
    expect(await cell('old relay', 'endpoint-state').textContent()).toBe('disabled');
    expect(await cell('old relay', 'endpoint-disabled').textContent()).toMatch(/^Disabled \d{4}-\d\d-\d\d [\d:.]+ UTC: 2\d consecutive failed delivery attempts$/);
    expect(await cell('old relay', 'endpoint-last').textContent()).toMatch(/^Last attempt: HTTP 500, /);
    expect(await cell('old relay', 'endpoint-failures').count()).toBe(0);
    // Healthy.
    expect(await cell('ground station', 'endpoint-state').textContent()).toBe('enabled');
    expect(await cell('ground station', 'endpoint-failures').count()).toBe(0);
    expect(await cell('ground station', 'endpoint-last').textContent()).toMatch(/^Last attempt: HTTP 200, /);
    expect(await seriousAxeViolations(page), 'axe on the webhooks list').toEqual([]);
    await page.locator('table.endpoints').screenshot({ path: join(shots, 'console-webhook-health.png') });
    await page.click('nav >> text=Flights and data');
  });

  it('a new experiment from the list view: listed at once, with the agent command that streams a flight into it', async () => {
    await page.fill('#experiment-name', 'Hover test 12');
    await page.click('form[aria-label="New experiment"] button[type=submit]');
    await expect.poll(() => page.locator('[data-testid=agent-command]').textContent()).toMatch(/^npm run agent -- --experiment [0-9a-f-]{36} --source/);
    const id = /--experiment ([0-9a-f-]{36})/.exec((await page.locator('[data-testid=agent-command]').textContent())!)![1]!;
    await page.locator('aside.browser').screenshot({ path: join(shots, 'console-list.png') });
    expect((await client.experiments.list()).find((e) => e.id === id)?.name).toBe('Hover test 12');
    await expect.poll(() => page.locator('.experiment-name').allTextContents()).toContain('Hover test 12');
    expect(await page.inputValue('#experiment-name')).toBe('');
    // A blank name is not sent.
    await page.fill('#experiment-name', ' ');
    expect(await page.locator('form[aria-label="New experiment"] button[type=submit]').isDisabled()).toBe(true);
    expect(await seriousAxeViolations(page), 'axe after creating').toEqual([]);
  });

  it('a key that may only read sees the form disabled, saying which scope it needs', async () => {
    const { apiKey } = await org.keyWith(['datasets:read', 'telemetry:read']);
    await signIn(apiKey);
    await page.locator('form[aria-label="New experiment"]').waitFor();
    expect(await page.locator('#experiment-name').isDisabled()).toBe(true);
    expect(await page.locator('form[aria-label="New experiment"] .needs').textContent()).toBe('needs the datasets:write scope');
  });

  it('a whole walk (sign-in, list, a new experiment, a flight with plots, webhooks) raised no CSP report or page error', async () => {
    await signIn(org.key);
    await page.goto(`${f.t.url}/?experiment=${experimentId}&dataset=${datasets.get('px4-sys1')}&channel=${encodeURIComponent('mavlink.ATTITUDE.roll')}`);
    await page.locator('figure.pane[data-channel="mavlink.ATTITUDE.roll"]').waitFor();
    await page.click('nav >> text=Webhooks');
    await page.locator('form[aria-label="Add an endpoint"]').waitFor();
    await page.click('nav >> text=Flights and data');
    await page.locator('form[aria-label="New experiment"]').waitFor();
    expect(problems.flat()).toEqual([]);
  });
});
