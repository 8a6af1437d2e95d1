// Flights from vehicles nobody on the project flew, in real Chromium against the real service, each sent by
// the real edge agent from a raw capture without timestamps (the bytes of a serial link): an ArduSub dive
// with a BlueOS companion computer whose HEARTBEAT (component 194, mode 0, armed bit) interleaves with the
// autopilot's, and a PX4 quadrotor in a mission. What a flight-test engineer reads off the page: the mode
// band follows the autopilot alone and names modes as its ground station does, labels are whole or
// cleanly shortened, nothing runs past the band's edge, and the header's span is the flight's first to
// last sample.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestService, type TestOrg, type TestService } from '@sortie/cloud/testing';
import { ardusubDiveWithCompanion, px4Mission, rawCapture } from '@sortie/contracts/testing';
import { startAgentProcess } from '@sortie/edge-agent/testing';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { launchChromium, screenshotDir, seriousAxeViolations, SKIP_BROWSER, watchPageProblems } from './browser.ts';

const ROLL = 'mavlink.ATTITUDE.roll';

vi.setConfig({ expect: { poll: { timeout: 10_000, interval: 50 } } });

describe.skipIf(SKIP_BROWSER)('flight modes and spans of real-world autopilots in Chromium', () => {
  let t: TestService;
  let org: TestOrg;
  let browser: Browser;
  let page: Page;
  let problems: string[];
  let experimentId: string;
  const datasets = new Map<string, string>();
  const timeBases = new Map<string, Record<string, unknown>>();
  const dirs: string[] = [];
  const { dir: shots, temporary } = screenshotDir();
  if (temporary) dirs.push(shots);
  let wallClock: ReturnType<typeof setInterval> | undefined;

  const call = async (method: string, path: string, body?: unknown) => {
    const r = await t.call(method, path, { key: org.key, body });
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };

  /** The agent replays `bytes` as a raw capture (no timestamps) into sortie `name`, as fast as it can. */
  async function replay(name: string, bytes: Uint8Array): Promise<void> {
    const dir = await mkdtemp(join(tmpdir(), `console-${name}-`));
    dirs.push(dir);
    const capture = join(dir, `${name}.bin`);
    await writeFile(capture, bytes);
    const agent = startAgentProcess(
      ['--source', `file:${capture}`, '--spool-dir', join(dir, 'spool'), '--cloud', t.url, '--grpc', t.service.grpcUrl, '--experiment', experimentId, '--sortie', name, '--speed', 'max'],
      { SORTIE_AGENT_API_KEY: org.key },
    );
    const end = await agent.exited;
    if (end.code !== 0) throw new Error(`agent: ${JSON.stringify(end)} ${agent.stderr()}`);
    timeBases.set(name, agent.lines.find((l) => String(l['msg']).startsWith('time base'))!);
  }

  /** What Query answers for `signals`, every sample: each series' first and last time, µs. */
  async function ends(datasetId: string, signals: string[]): Promise<Array<[number, number]>> {
    const r = await fetch(`${t.url}/api/rpc/sortie.telemetry.v1.TelemetryService/Query`, {
      method: 'POST',
      headers: { 'x-api-key': org.key, 'content-type': 'application/json' },
      body: JSON.stringify({ experimentId, datasetId, channelIds: signals, maxPointsPerChannel: 100_000 }),
    });
    const answer = (await r.json()) as { series: Array<{ points: Array<{ timestamp: string }> }> };
    return answer.series.map((s) => [microseconds(s.points[0]!.timestamp), microseconds(s.points.at(-1)!.timestamp)]);
  }

  /** The band's segments as drawn: mode, armed, text, box, and whether the text overflows its box. */
  const segments = () =>
    page.locator('.state-band .band').evaluateAll((els) =>
      els.map((e) => {
        const el = e as HTMLElement;
        const box = el.getBoundingClientRect();
        return { mode: el.dataset.mode, armed: el.dataset.armed, text: el.textContent ?? '', label: el.getAttribute('aria-label') ?? '', left: box.left, right: box.right, width: box.width, overflows: el.scrollWidth > el.clientWidth + 0.5 };
      }),
    );
  const bandRow = async () => (await page.locator('.state-band .band-row').boundingBox())!;

  beforeAll(async () => {
    t = await startTestService();
    wallClock = setInterval(() => t.clock.set(new Date()), 50);
    org = await t.createOrg('Harbour Ops');
    experimentId = (await call('POST', '/api/experiments/create', { name: 'Real-world autopilots' })).id;
    await replay('bluerov', rawCapture(ardusubDiveWithCompanion(20)));
    await replay('px4', rawCapture(px4Mission(10)));
    for (const d of (await call('GET', '/api/experiments/list'))[0].datasets as Array<{ id: string; name: string }>) datasets.set(d.name, d.id);
    // Browsed as finished flights: wait until their telemetry is older than what the console marks live.
    await new Promise((resolve) => setTimeout(resolve, 10_500));
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    page = await context.newPage();
    problems = await watchPageProblems(page);
    await page.goto(`${t.url}/`);
    await page.fill('#api-key', org.key);
    await page.click('button[type=submit]');
    await page.waitForSelector('[data-testid=organization]');
  }, 120_000);

  afterAll(async () => {
    clearInterval(wallClock);
    await browser?.close();
    await t?.stop();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it('the agent said each capture is dated by its messages\' boot time', () => {
    expect(timeBases.get('bluerov')).toMatchObject({ timeBase: 'boot' });
    expect(timeBases.get('px4')).toMatchObject({ timeBase: 'boot' });
  });

  it("an ArduSub dive with a companion computer: the band follows the autopilot alone and reads MANUAL, armed, all the way, never flipping", async () => {
    await page.goto(`${t.url}/?experiment=${experimentId}&dataset=${datasets.get('bluerov-sys1')}`);
    await page.locator('.state-band .band').first().waitFor();
    // Let the band settle (every HEARTBEAT read), then it must hold one segment: the companion's heartbeats change nothing.
    await expect.poll(async () => (await segments()).length).toBe(1);
    const [manual] = await segments();
    expect(manual).toMatchObject({ mode: 'MANUAL', armed: 'true', text: 'MANUAL · armed', overflows: false });
    expect(manual!.label).toMatch(/^MANUAL · armed from \d{4}-\d\d-\d\d [\d:.]+ UTC$/);
    const row = await bandRow();
    expect(manual!.left).toBeGreaterThanOrEqual(row.x - 0.5);
    expect(manual!.right).toBeLessThanOrEqual(row.x + row.width + 0.5);
    // The whole name on hover, and on keyboard focus.
    await page.locator('.state-band .band').hover();
    await expect.poll(() => page.locator('.band-tip[role=tooltip]').textContent()).toMatch(/^MANUAL · armed from /);
    await page.mouse.move(0, 0);
    await expect.poll(() => page.locator('.band-tip').count()).toBe(0);
    await page.locator('.state-band .band').focus();
    await expect.poll(() => page.locator('.band-tip[role=tooltip]').textContent()).toMatch(/^MANUAL · armed from /);
    expect(await seriousAxeViolations(page), 'axe on the ArduSub flight').toEqual([]);
  });

  it('a PX4 quadrotor in a mission: the band says Mission, across the plotted flight, its last segment inside the band', async () => {
    const px4 = datasets.get('px4-sys1')!;
    await page.goto(`${t.url}/?experiment=${experimentId}&dataset=${px4}&channel=${encodeURIComponent(ROLL)}`);
    const pane = page.locator(`figure.pane[data-channel="${ROLL}"]`);
    await pane.waitFor();
    await expect.poll(async () => (await segments()).map((s) => s.mode)).toEqual(['Mission']);
    const [mission] = await segments();
    expect(mission).toMatchObject({ armed: 'true', text: 'Mission · armed', overflows: false });
    // HEARTBEATs paced by the flight's own clock: the band covers the 9 s between the first and the last of
    // them on the 10 s the plot shows, not a sliver where a raw capture's heartbeats were all stamped at once.
    const plot = (await pane.locator('.u-over').boundingBox())!;
    expect(mission!.width).toBeGreaterThan(plot.width * 0.85);
    expect(mission!.right).toBeLessThanOrEqual(plot.x + plot.width + 1);
    const row = await bandRow();
    expect(mission!.right).toBeLessThanOrEqual(row.x + row.width + 0.5);
    await page.screenshot({ path: join(shots, 'console-px4-mission.png'), fullPage: true });
  });

  it("the header's span is the flight's first sample to its last, over every signal, not one signal's", async () => {
    const px4 = datasets.get('px4-sys1')!;
    await page.goto(`${t.url}/?experiment=${experimentId}&dataset=${px4}`);
    const [roll, heartbeat] = await ends(px4, [ROLL, 'mavlink.HEARTBEAT.type']);
    const first = Math.min(roll![0], heartbeat![0]);
    const last = Math.max(roll![1], heartbeat![1]);
    // The first ATTITUDE comes a quarter second before the first HEARTBEAT, the last HEARTBEAT 0.7 s before the end.
    expect(first).toBe(roll![0]);
    expect(heartbeat![0] - first).toBeGreaterThan(200_000);
    expect((last - first) / 1e6).toBeCloseTo(9.98, 2);
    await expect.poll(() => page.textContent('[data-testid=dataset-span]')).toMatch(/^\d{4}-\d\d-\d\d [\d:.]+ UTC → \d{4}-\d\d-\d\d [\d:.]+ UTC$/);
    const [from, to] = (await page.textContent('[data-testid=dataset-span]'))!.split(' → ').map((s) => Date.parse(`${s.replace(' UTC', '').replace(' ', 'T')}Z`) * 1000);
    expect(Math.abs(from! - first)).toBeLessThan(1000);
    expect(Math.abs(to! - last)).toBeLessThan(1000);
  });

  it('loaded everything under the CSP without a violation or page error', () => {
    expect(problems).toEqual([]);
  });
});

function microseconds(rfc3339: string): number {
  const fraction = /\.(\d+)/.exec(rfc3339)?.[1] ?? '';
  return Date.parse(rfc3339.replace(/\.\d+/, '')) * 1000 + Number((fraction + '000000').slice(0, 6));
}
