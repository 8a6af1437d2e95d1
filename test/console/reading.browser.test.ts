// Reading a replayed flight as a flight-test engineer does, in real Chromium against the real service: a
// synthetic flight flown on 2024-06-01 (a tlog the edge agent replays, so every command logged today
// carries today's wall-clock time, far outside the flight), with signals the MAVLink dialect stores in
// radians, degE7, mm and mV. Checked by what the page shows: the readout under the cursor in engineering
// units, ticks and gridlines on every pane, a colour per kind of mark, tooltips inside the page, a
// command placed on the flight's axis by its relTime, and the command log at 1280 px.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RECEIVER_HOST, startDeliveryFixture, startHttpsReceiver, type DeliveryFixture, type TestOrg, type TestReceiver } from '@sortie/cloud/testing';
import { startAgentProcess } from '@sortie/edge-agent/testing';
import { common, minimal, MavLinkProtocolV2, type MavLinkData } from 'node-mavlink';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { launchChromium, screenshotDir, seriousAxeViolations, SKIP_BROWSER, watchPageProblems } from './browser.ts';

vi.setConfig({ expect: { poll: { timeout: 10_000, interval: 50 } } });

const ROLL = 'mavlink.ATTITUDE.roll';
const LAT = 'mavlink.GLOBAL_POSITION_INT.lat';
const ALT = 'mavlink.GLOBAL_POSITION_INT.alt';
const VOLTS = 'mavlink.SYS_STATUS.voltage_battery';
const PLOTTED = [ROLL, LAT, ALT, VOLTS];

/** The flight: 60 s from 10:00:00 UTC on 2024-06-01, silent from 3 s to 8 s (a link loss near its start). */
const START_MS = Date.UTC(2024, 5, 1, 10, 0, 0);
const SECONDS = 60;
const SILENT = [3, 8] as const;

// What the flight's signals are, in the dialect's stored units, at `t` seconds into it.
const rollRad = (t: number) => 0.3 * Math.sin((2 * Math.PI * t) / 20);
const latDegE7 = (t: number) => 473_977_420 + Math.round(t * 100);
const altMm = (t: number) => 488_000 + Math.round(t * 1000);
const voltsMv = (t: number) => 12_600 - Math.round(t * 10);

/** The flight as a tlog: each frame after its receive time (8 bytes, big-endian microseconds since the epoch). */
function syntheticTlog(): Buffer {
  const protocol = new MavLinkProtocolV2(1, 1);
  const chunks: Buffer[] = [];
  let seq = 0;
  const push = (message: MavLinkData, t: number) => {
    const stamp = Buffer.alloc(8);
    stamp.writeBigUInt64BE(BigInt(Math.round((START_MS + t * 1000) * 1000)));
    chunks.push(stamp, protocol.serialize(message, seq++ & 0xff));
  };
  for (let tick = 0; tick < SECONDS * 20; tick++) {
    const t = tick / 20;
    if (t > SILENT[0] && t < SILENT[1]) continue;
    const bootMs = 100_000 + tick * 50;
    if (tick % 20 === 0) {
      const heartbeat = new minimal.Heartbeat();
      heartbeat.type = minimal.MavType.FIXED_WING;
      heartbeat.autopilot = minimal.MavAutopilot.ARDUPILOTMEGA;
      heartbeat.mavlinkVersion = 3;
      push(heartbeat, t);
      const status = new common.SysStatus();
      status.voltageBattery = voltsMv(t);
      status.batteryRemaining = 90;
      push(status, t);
    }
    const attitude = new common.Attitude();
    attitude.timeBootMs = bootMs;
    attitude.roll = Math.fround(rollRad(t));
    attitude.pitch = Math.fround(0.05);
    attitude.yaw = Math.fround(1.5);
    push(attitude, t);
    if (tick % 4 === 0) {
      const position = new common.GlobalPositionInt();
      position.timeBootMs = bootMs;
      position.lat = latDegE7(t);
      position.lon = 85_455_940;
      position.alt = altMm(t);
      position.relativeAlt = altMm(t) - 488_000;
      position.vx = 1500;
      position.hdg = 9000;
      push(position, t);
    }
  }
  return Buffer.concat(chunks);
}

describe.skipIf(SKIP_BROWSER)('reading a replayed flight in the console', () => {
  let f: DeliveryFixture;
  let org: TestOrg;
  let browser: Browser;
  let page: Page;
  let problems: string[];
  let experimentId: string;
  let datasetId: string;
  let receiver: TestReceiver | undefined;
  const dirs: string[] = [];
  const { dir: shots, temporary } = screenshotDir();
  if (temporary) dirs.push(shots);
  let wallClock: ReturnType<typeof setInterval> | undefined;

  const call = async (method: string, path: string, body?: unknown) => {
    const r = await f.t.call(method, path, { key: org.key, body });
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  };
  const flightUrl = () => `${f.t.url}/?experiment=${experimentId}&dataset=${datasetId}${PLOTTED.map((c) => `&channel=${encodeURIComponent(c)}`).join('')}`;
  const pane = (channel: string) => page.locator(`figure.pane[data-channel="${channel}"]`);
  /** The flight with its four signals plotted, each pane drawn with its samples. */
  async function openFlight(): Promise<void> {
    await page.goto(flightUrl());
    for (const c of PLOTTED) await expect.poll(async () => Number(await pane(c).getAttribute('data-shown-points'))).toBeGreaterThan(0);
  }

  beforeAll(async () => {
    f = await startDeliveryFixture();
    // Arming and ack deadlines run on the service's test clock: keep it on the wall clock.
    wallClock = setInterval(() => f.t.clock.set(new Date()), 50);
    org = await f.t.createOrg('Range Ops');
    experimentId = (await call('POST', '/api/experiments/create', { name: 'Survey flights' })).id;
    const dir = await mkdtemp(join(tmpdir(), 'console-reading-'));
    dirs.push(dir);
    const tlog = join(dir, 'survey.tlog');
    await writeFile(tlog, syntheticTlog());
    const agent = startAgentProcess(
      ['--source', `file:${tlog}`, '--spool-dir', join(dir, 'spool'), '--cloud', f.t.url, '--grpc', f.t.service.grpcUrl, '--experiment', experimentId, '--sortie', 'survey', '--speed', 'max', '--link-loss-seconds', '3'],
      { SORTIE_AGENT_API_KEY: org.key },
    );
    const end = await agent.exited;
    if (end.code !== 0) throw new Error(`agent: ${JSON.stringify(end)} ${agent.stderr()}`);
    const dataset = (await call('GET', '/api/experiments/list'))[0].datasets.find((d: { name: string }) => d.name === 'survey-sys1');
    datasetId = dataset.id;
    // A finished flight, not one streaming now: wait until the list no longer marks it live (ten seconds).
    const age = dataset.lastDataAt ? Date.now() - Date.parse(dataset.lastDataAt) : Infinity;
    if (age < 10_500) await new Promise((resolve) => setTimeout(resolve, 10_500 - age));
    browser = await launchChromium();
    // 1280 px: the narrowest desktop the console is made for.
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    problems = await watchPageProblems(page);
    await page.goto(`${f.t.url}/`);
    await page.fill('#api-key', org.key);
    await page.click('button[type=submit]');
    await page.waitForSelector('[data-testid=organization]');
  }, 240_000);

  afterAll(async () => {
    clearInterval(wallClock);
    await browser?.close();
    await receiver?.close();
    await f?.stop();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  /** The drawn time axis of a pane: its plot area on the page and the range it shows (Unix seconds). */
  async function axisOf(p: Locator) {
    const box = (await p.locator('.u-over').boundingBox())!;
    const [min, max] = await p.locator('.pane-canvas').evaluate((e) => [Number((e as HTMLElement).dataset.xMin), Number((e as HTMLElement).dataset.xMax)]);
    return { box, min: min!, max: max!, x: (t: number) => box.x + ((t - min!) / (max! - min!)) * box.width };
  }

  it("reads the UTC time and every plotted signal's value in its display unit under the cursor, one readout for all panes", async () => {
    await openFlight();
    // Over the altitude pane, 40 % along the axis: the readout names every pane's signal, not only this one's.
    const axis = await axisOf(pane(ALT));
    await page.mouse.move(axis.box.x + axis.box.width * 0.4, axis.box.y + axis.box.height / 2);
    const readout = page.locator('[data-testid=readout]');
    await expect.poll(() => readout.count()).toBe(1);
    const time = (await readout.locator('.readout-time').textContent())!;
    expect(time).toMatch(/^2024-06-01 10:00:\d\d\.\d{3} UTC$/);
    const t = Date.parse(`${time.replace(' UTC', '').replace(' ', 'T')}Z`) / 1000;
    // The time at the pointer, to the pixel.
    expect(Math.abs(axis.x(t) - (axis.box.x + axis.box.width * 0.4))).toBeLessThan(1.5);
    const row = async (channel: string) => {
      const cells = await readout.locator(`tr[data-channel="${channel}"] > *`).allTextContents();
      return { name: cells[0], value: Number(cells[1]), text: cells[1]!, unit: cells[2] };
    };
    const s = t - START_MS / 1000;
    const roll = await row(ROLL);
    expect(roll.name).toBe('ATTITUDE.roll');
    expect(roll.unit).toBe('deg');
    // The nearest 20 Hz sample: roll moves at most 5.4 deg/s, so within half a degree of the formula.
    expect(Math.abs(roll.value - (rollRad(s) * 180) / Math.PI)).toBeLessThan(0.5);
    const lat = await row(LAT);
    expect(lat.unit).toBe('deg');
    // degE7 to its resolution: seven decimals.
    expect(lat.text).toMatch(/^47\.39\d{5}$/);
    expect(Math.abs(lat.value - latDegE7(s) / 1e7)).toBeLessThan(1e-6);
    const alt = await row(ALT);
    expect(alt.unit).toBe('m');
    expect(alt.text).toMatch(/^\d{3}\.\d{3}$/);
    expect(Math.abs(alt.value - altMm(s) / 1000)).toBeLessThan(0.3);
    const volts = await row(VOLTS);
    expect(volts.unit).toBe('V');
    expect(Math.abs(volts.value - voltsMv(s) / 1000)).toBeLessThan(0.02);
    // The panes' captions name the unit shown and the one stored.
    expect(await pane(ROLL).locator('figcaption strong').textContent()).toBe(`${ROLL} (deg, stored in rad)`);
    expect(await pane(VOLTS).locator('figcaption strong').textContent()).toBe(`${VOLTS} (V, stored in mV)`);

    // Inside the link loss there is no sample to read: the readout says so rather than interpolating.
    await page.mouse.move(axis.x(START_MS / 1000 + 5.5), axis.box.y + axis.box.height / 2);
    await expect.poll(async () => (await row(ROLL)).text).toBe('no sample');
    // The readout stays inside the panes wherever the pointer is, even at the right edge of the bottom pane.
    const bottom = await axisOf(pane(VOLTS));
    await page.mouse.move(bottom.box.x + bottom.box.width - 2, bottom.box.y + bottom.box.height - 2);
    const panes = (await page.locator('.panes').boundingBox())!;
    const box = (await readout.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(panes.x);
    expect(box.x + box.width).toBeLessThanOrEqual(panes.x + panes.width);
    expect(box.y + box.height).toBeLessThanOrEqual(panes.y + panes.height);
    // Raw values are unchanged where they are stored and read: Query answers roll in radians.
    const query = await fetch(`${f.t.url}/api/rpc/sortie.telemetry.v1.TelemetryService/Query`, {
      method: 'POST',
      headers: { 'x-api-key': org.key, 'content-type': 'application/json' },
      body: JSON.stringify({ experimentId, datasetId, channelIds: [ROLL], maxPointsPerChannel: 1000 }),
    }).then((r) => r.json() as Promise<{ series: Array<{ points: Array<{ value: number }> }> }>);
    expect(Math.max(...query.series[0]!.points.map((p) => Math.abs(p.value)))).toBeLessThan(0.31);
    await page.mouse.move(0, 0);
    await expect.poll(() => readout.count()).toBe(0);
  });

  it('draws value ticks and gridlines on every pane, and the time gridlines on every pane, not only the one with the time labels', async () => {
    await openFlight();
    for (const c of PLOTTED) {
      const lines = await gridlines(pane(c));
      // A minute of flight: a gridline every 10 s or so, on the top pane as on the bottom one.
      expect(lines.vertical, `vertical gridlines on ${c}`).toBeGreaterThanOrEqual(4);
      expect(lines.horizontal, `horizontal gridlines on ${c}`).toBeGreaterThanOrEqual(4);
      // As many value ticks as gridlines.
      expect(Number(await pane(c).locator('.pane-canvas').getAttribute('data-value-ticks'))).toBeGreaterThanOrEqual(4);
    }
  });

  it('gives each kind of mark its own colour and a legend, and keeps the LINK_LOSS tooltip inside the page', async () => {
    await openFlight();
    const loss = page.locator('.mark[data-kind=event][aria-label*="LINK_LOSS"]');
    const regained = page.locator('.mark[data-kind=event][aria-label*="LINK_REGAINED"]');
    await loss.waitFor();
    await regained.waitFor();
    // The loss is 3 s into a minute: its tooltip, centred on it, would spill over the channel list.
    await loss.hover();
    const tip = page.locator('[role=tooltip]');
    expect(await tip.textContent()).toMatch(/^2024-06-01 10:00:0\d\.\d{3} UTC — LINK_LOSS/);
    const tipBox = (await tip.boundingBox())!;
    const channels = (await page.locator('section.channels').boundingBox())!;
    expect(tipBox.x).toBeGreaterThanOrEqual(channels.x + channels.width);
    expect(tipBox.x + tipBox.width).toBeLessThanOrEqual(1280);
    await page.mouse.move(0, 0);

    const colour = (l: Locator) => l.evaluate((e) => getComputedStyle(e).backgroundColor);
    expect(await colour(loss)).not.toBe(await colour(regained));
    // The legend names each kind in the colour its marks have.
    const legend = page.locator('[data-testid=mark-legend] li[data-kind]');
    const entries = await legend.evaluateAll((items) => items.map((li) => ({ text: li.textContent, colour: getComputedStyle(li.querySelector('.mark-swatch')!).backgroundColor })));
    expect(entries.map((e) => e.text)).toEqual(expect.arrayContaining(['LINK_LOSS', 'LINK_REGAINED']));
    expect(new Set(entries.map((e) => e.colour)).size).toBe(entries.length);
    expect(entries.find((e) => e.text === 'LINK_LOSS')!.colour).toBe(await colour(loss));
    expect(entries.find((e) => e.text === 'LINK_REGAINED')!.colour).toBe(await colour(regained));
  });

  it("places a command on the flight's time axis by its relTime, and its ack by the vehicle's time; today's dispatch, outside the flight, is not drawn", async () => {
    receiver = await startHttpsReceiver(f.cert);
    await call('POST', '/api/webhooks/create', { label: 'range receiver', url: `https://${RECEIVER_HOST}:${receiver.port}/hook` });
    await call('POST', '/api/datasets/arm', { experimentId, datasetId, ttlSeconds: 600 });
    const command = await call('POST', '/api/commands/create', { experimentId, datasetId, commandText: 'LOITER', relTime: 20 });
    await page.goto(flightUrl());
    await pane(ROLL).waitFor();
    const row = page.locator(`tr[data-command="${command.id}"]`);
    await row.waitFor();
    const mark = page.locator('.mark[aria-label*="LOITER"]');
    await expect.poll(() => mark.count()).toBe(1);
    expect(await mark.getAttribute('aria-label')).toBe('2024-06-01 10:00:20.000 UTC LOITER: relTime T+20 s');
    const axis = await axisOf(pane(ROLL));
    const centre = async (l: Locator) => {
      const b = (await l.boundingBox())!;
      return b.x + b.width / 2;
    };
    expect(Math.abs((await centre(mark)) - axis.x(START_MS / 1000 + 20))).toBeLessThan(2);
    // Its unit in the log, and where that is on the flight (the first sample is at 10:00:00.000).
    expect(await row.locator('td').first().textContent()).toBe('T+20 s10:00:20.000');

    // Dispatched from the log today; the vehicle acts 21 s into the flight and says so in its own time.
    await row.locator('button:text-is("Dispatch…")').click();
    await page.locator('dialog[open] button:text-is("Confirm dispatch")').click();
    const [delivery] = await receiver.waitForRequests(1);
    const token = (JSON.parse(delivery!.rawBody.toString()) as { ack: { token: string } }).ack.token;
    const vehicleTime = new Date(START_MS + 21_000).toISOString();
    const acked = await f.t.call('POST', '/api/commands/ack', { headers: { authorization: `Bearer ${token}` }, body: { commandId: command.id, state: 'acked', vehicleTime } });
    expect(acked.status).toBeLessThan(300);
    await expect.poll(() => row.getAttribute('data-status')).toBe('acked');
    const ack = page.locator('.mark[data-kind=acked]');
    await ack.waitFor();
    expect(Math.abs((await centre(ack)) - axis.x(START_MS / 1000 + 21))).toBeLessThan(2);
    // Dispatch and delivery happened today, outside the flight's window: not on its axis.
    expect(await page.locator('.mark[data-kind=dispatched], .mark[data-kind=delivered]').count()).toBe(0);
    expect(await page.locator('[data-testid=mark-legend]').textContent()).toContain('command at its relTime');
    // The docs' picture of a flight read: the readout at 40 % of the axis, the command and its ack on it.
    await page.evaluate(() => window.scrollTo(0, 0));
    const top = await axisOf(pane(ROLL));
    await page.mouse.move(top.box.x + top.box.width * 0.4, top.box.y + top.box.height / 2);
    await page.locator('[data-testid=readout]').waitFor();
    await page.screenshot({ path: join(shots, 'console-readout.png'), fullPage: true });
    await page.mouse.move(0, 0);
  });

  it('fits the command log in a 1280 px page, and opens the dispatch confirmation where the click was', async () => {
    await call('POST', '/api/commands/create', { experimentId, datasetId, commandText: 'SET_SERVO', args: { servo: 9, pwm: 1900, function: 'SURVEY_CAMERA_HATCH_RELEASE' }, relTime: 42.5 });
    await page.goto(flightUrl());
    const log = page.locator('table.command-log');
    await expect.poll(() => log.locator('tr[data-command]').count()).toBe(2);
    // Machine-written args (no spaces) and the delivery attempts with their URL: the widest a row gets.
    const loiter = log.locator('tr[data-command]', { hasText: 'LOITER' });
    await loiter.locator('button', { hasText: 'Deliveries' }).click();
    await expect.poll(() => loiter.locator('.attempts li').count()).toBe(1);
    const workspace = (await page.locator('.workspace').boundingBox())!;
    const table = (await log.boundingBox())!;
    expect(table.x + table.width).toBeLessThanOrEqual(workspace.x + workspace.width + 0.5);
    // No part of the page runs past the viewport's right edge.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(1280);
    const actions = (await log.locator('thead th').last().boundingBox())!;
    expect(actions.x + actions.width).toBeLessThanOrEqual(1280);

    const row = log.locator('tr[data-command]', { hasText: 'SET_SERVO' });
    const dispatch = row.locator('button:text-is("Dispatch…")');
    await dispatch.scrollIntoViewIfNeeded();
    const button = (await dispatch.boundingBox())!;
    await dispatch.click();
    // (The confirmation's box: the dialog, or before there was one, the form in the row.)
    const dialog = page.locator('dialog[open], form.confirm').first();
    await dialog.waitFor();
    const box = (await dialog.boundingBox())!;
    // Beside the button (just below it, or just above when there is no room below), wholly in view.
    const below = box.y - (button.y + button.height);
    const above = button.y - (box.y + box.height);
    expect(Math.min(Math.abs(below), Math.abs(above))).toBeLessThan(12);
    expect(Math.abs(box.x - button.x)).toBeLessThan(box.width);
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.y).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width).toBeLessThanOrEqual(1280);
    expect(box.y + box.height).toBeLessThanOrEqual(900);
    expect(await dialog.textContent()).toContain('Dispatch SET_SERVO (T+42.5 s)');
    expect(await log.locator('tr[data-command] td:first-child .reltime').allTextContents()).toEqual(['T+20 s', 'T+42.5 s']);
    expect(await seriousAxeViolations(page)).toEqual([]);
    await page.locator('section.commands').screenshot({ path: join(shots, 'console-dispatch.png') });
    // A modal: Escape cancels, nothing sent.
    expect(await page.locator('dialog[open]').count()).toBe(1);
    await page.keyboard.press('Escape');
    await expect.poll(() => dialog.count()).toBe(0);
    expect(await row.getAttribute('data-status')).toBe('logged');
  });

  it('loaded everything under the CSP without a violation or page error', () => {
    expect(problems).toEqual([]);
  });
});

/**
 * Gridlines drawn on a pane's canvas, counted in its pixels: runs of the light grey uPlot draws them in,
 * across a row near the top of the plot area (vertical lines) and down a column near its left (horizontal).
 */
async function gridlines(p: Locator): Promise<{ vertical: number; horizontal: number }> {
  return p.locator('canvas').evaluate((canvas: HTMLCanvasElement) => {
    const over = canvas.parentElement!.querySelector('.u-over') as HTMLElement;
    const ratio = canvas.width / canvas.getBoundingClientRect().width;
    const left = Math.round(over.offsetLeft * ratio);
    const top = Math.round(over.offsetTop * ratio);
    const width = Math.round(over.clientWidth * ratio);
    const height = Math.round(over.clientHeight * ratio);
    const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
    const grey = (x: number, y: number) => {
      const i = (y * canvas.width + x) * 4;
      const [r, g, b, a] = [data[i]!, data[i + 1]!, data[i + 2]!, data[i + 3]!];
      return a > 0 && Math.abs(r - g) < 6 && Math.abs(g - b) < 6 && r > 190 && r < 240;
    };
    const runs = (points: Array<[number, number]>) => {
      let count = 0;
      let inside = false;
      for (const [x, y] of points) {
        const on = grey(x, y);
        if (on && !inside) count++;
        inside = on;
      }
      return count;
    };
    // Rows and columns a quarter, half and three quarters across, each moved clear of the lines that run
    // along it; the most lines any of them crosses (the data line may hide a gridline where it runs on it).
    const clearRow = (y: number) => {
      while (y < top + height - 1 && (grey(left + 1, y - 1) || grey(left + 1, y) || grey(left + 1, y + 1))) y++;
      return y;
    };
    const clearColumn = (x: number, y: number) => {
      while (x < left + width - 1 && (grey(x - 1, y) || grey(x, y) || grey(x + 1, y))) x++;
      return x;
    };
    let vertical = 0;
    let horizontal = 0;
    for (const f of [0.25, 0.5, 0.75]) {
      const row = clearRow(top + Math.round(height * f));
      vertical = Math.max(vertical, runs(Array.from({ length: width }, (_, i) => [left + i, row] as [number, number])));
      const column = clearColumn(left + Math.round(width * f), row);
      horizontal = Math.max(horizontal, runs(Array.from({ length: height }, (_, i) => [column, top + i] as [number, number])));
    }
    return { vertical, horizontal };
  });
}
