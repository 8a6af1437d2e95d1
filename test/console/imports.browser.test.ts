// Importing a vehicle's own logs from the console, in real Chromium against the real service, as a test
// engineer does after a flight: an experiment made in the list, two real logs dropped on it (a PX4 ULog of
// a v1.11 Cube Orange flight and an ArduSub DataFlash log, built into a DataTransfer from their bytes and
// dropped as the browser drops files), a third chosen with the keyboard's "Import log…" file input; each
// row's bar goes from waiting through upload and reading to done, and says what the log held. Each flight
// then opens like a MAVLink one: its signals plotted, its GPS track from the log's own position, its mode
// band named from the log's own mode (PX4's nav_state, ArduSub's MODE), its logged strings on the timeline
// by severity, the vehicle as the log describes it in the header; and its parameters, compared with the
// other PX4 flight's. The same file again is "already imported", a file that is no log fails in words.
import { readFile } from 'node:fs/promises';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { startTestService, type TestOrg, type TestService } from '@sortie/cloud/testing';
import type { Browser, JSHandle, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { launchChromium, screenshotDir, seriousAxeViolations, SKIP_BROWSER, watchPageProblems } from './browser.ts';

vi.setConfig({ expect: { poll: { timeout: 20_000, interval: 50 } } });

const FIXTURES = '/work/shared/fixtures';
const SMALL = join(FIXTURES, 'ulog/sample_log_small.ulg');
const EVENTS = join(FIXTURES, 'ulog/sample_px4_events.ulg');
const SUB = join(FIXTURES, 'dataflash/ardusub-small.BIN');

describe.skipIf(SKIP_BROWSER)("a vehicle's own logs imported in the console, in Chromium", () => {
  let t: TestService;
  let org: TestOrg;
  let browser: Browser;
  let page: Page;
  let problems: string[];
  let experimentId: string;
  const { dir: shots, temporary } = screenshotDir();
  let wallClock: ReturnType<typeof setInterval> | undefined;

  const row = (file: string) => page.locator(`.import-row[data-file="${file}"]`);
  const flightLink = (name: string) => page.locator('.datasets a', { hasText: new RegExp(`^${name}$`) });
  /** The band's segments as drawn. */
  const segments = () =>
    page.locator('.state-band .band').evaluateAll((els) => els.map((e) => ({ mode: (e as HTMLElement).dataset.mode, armed: (e as HTMLElement).dataset.armed, label: e.getAttribute('aria-label') ?? '' })));
  /** The header's facts of the vehicle, by label. */
  const headerFacts = () => page.locator('.log-facts dd').evaluateAll((els) => Object.fromEntries(els.map((e) => [(e as HTMLElement).dataset.fact, e.textContent])));

  /** Files built in the page from the fixtures' bytes, in a DataTransfer as a drop carries them. */
  async function transfer(paths: string[]): Promise<JSHandle<DataTransfer>> {
    const files = await Promise.all(paths.map(async (path) => ({ name: path.split('/').pop()!, base64: (await readFile(path)).toString('base64') })));
    return page.evaluateHandle((list) => {
      const dt = new DataTransfer();
      for (const f of list) {
        const binary = atob(f.base64);
        const bytes = new Uint8Array(binary.length);
        for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
        dt.items.add(new File([bytes], f.name, { type: 'application/octet-stream' }));
      }
      return dt;
    }, files);
  }

  /** Drag `dataTransfer` over the experiment and drop it there, as the browser does with files from the desktop. */
  async function drop(dataTransfer: JSHandle<DataTransfer>): Promise<void> {
    const zone = page.locator(`li.experiment[data-experiment="${experimentId}"]`);
    await zone.dispatchEvent('dragenter', { dataTransfer });
    await zone.dispatchEvent('dragover', { dataTransfer });
    await expect.poll(() => zone.getAttribute('class')).toContain('drop-target');
    await expect.poll(() => zone.locator('.drop-hint').textContent()).toBe('Drop to import into Log review');
    await zone.dispatchEvent('drop', { dataTransfer });
    await expect.poll(() => zone.getAttribute('class')).not.toContain('drop-target');
  }

  beforeAll(async () => {
    t = await startTestService();
    wallClock = setInterval(() => t.clock.set(new Date()), 50);
    org = await t.createOrg('Log Review');
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1500, height: 1100 } });
    page = await context.newPage();
    problems = await watchPageProblems(page);
    await page.goto(`${t.url}/`);
    await page.fill('#api-key', org.key);
    await page.click('button[type=submit]');
    await page.waitForSelector('[data-testid=organization]');
    // Every state each import row passes through, as the page draws it.
    await page.evaluate(() => {
      const seen: Record<string, string[]> = {};
      (globalThis as unknown as { importStates: typeof seen }).importStates = seen;
      new MutationObserver(() => {
        for (const el of document.querySelectorAll<HTMLElement>('.import-row')) {
          const list = (seen[el.dataset.file!] ??= []);
          if (list.at(-1) !== el.dataset.state) list.push(el.dataset.state!);
        }
      }).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-state'] });
    });
  }, 120_000);

  afterAll(async () => {
    clearInterval(wallClock);
    await browser?.close();
    await t?.stop();
    if (temporary) await rm(shots, { recursive: true, force: true });
  });

  it('makes an experiment in the list, drops a ULog and a DataFlash log on it, and watches each bar reach done', async () => {
    await page.fill('#experiment-name', 'Log review');
    await page.click('form[aria-label="New experiment"] button[type=submit]');
    await page.locator('.experiment-name', { hasText: 'Log review' }).waitFor();
    experimentId = (await page.locator('li.experiment').first().getAttribute('data-experiment'))!;

    await drop(await transfer([SMALL, SUB]));
    // One row per file, the second waiting for the first; then each done, its bar full.
    await expect.poll(() => page.locator('.import-row').count()).toBe(2);
    for (const file of ['sample_log_small.ulg', 'ardusub-small.BIN']) {
      await expect.poll(() => row(file).getAttribute('data-state'), { timeout: 60_000 }).toBe('done');
      expect(await row(file).locator('progress').evaluate((p) => (p as HTMLProgressElement).value)).toBe(1);
    }
    const states = await page.evaluate(() => (globalThis as unknown as { importStates: Record<string, string[]> }).importStates);
    expect(states['sample_log_small.ulg']![0]).toBe('uploading');
    expect(states['sample_log_small.ulg']!.at(-1)).toBe('done');
    expect(states['ardusub-small.BIN']!.slice(0, 2)).toEqual(['waiting', 'uploading']);
    expect(states['ardusub-small.BIN']!.at(-1)).toBe('done');

    // What each import brought, in words.
    expect(await row('sample_log_small.ulg').locator('[data-testid=import-status]').textContent()).toBe('Imported');
    expect(await row('sample_log_small.ulg').locator('.import-outcome').textContent()).toMatch(/^14,604 messages · 19 min 53 s · from 2021-04-21 06:30:39 UTC \(GPS time\) · 3 events · 980 parameters/);
    expect(await row('ardusub-small.BIN').locator('.import-outcome').textContent()).toMatch(/7,158 messages/);
    // The DataFlash log has no GPS time: the import says where it put the flight.
    await row('ardusub-small.BIN').locator('.import-warnings summary').click();
    expect(await row('ardusub-small.BIN').locator('.import-warnings li').allTextContents()).toContainEqual(expect.stringMatching(/no GPS time/));

    // Both flights are in the list, named after their files, with their kind.
    await flightLink('sample_log_small').waitFor();
    await flightLink('ardusub-small').waitFor();
    const kinds = await page.locator('.datasets li').evaluateAll((els) => els.map((e) => e.textContent));
    expect(kinds.some((k) => k?.includes('sample_log_small PX4 ULog'))).toBe(true);
    expect(kinds.some((k) => k?.includes('ardusub-small ArduPilot DataFlash'))).toBe(true);
    // An imported log is a finished file: never marked live, though its data was written seconds ago.
    expect(await page.locator('.datasets li[data-live=true]').count()).toBe(0);
    await page.screenshot({ path: join(shots, 'console-log-imports.png'), fullPage: true });
    expect(await seriousAxeViolations(page), 'axe on the list with import rows').toEqual([]);
  });

  it('imports a third log with the keyboard: Tab to "Import log…", the file chooser, its row done', async () => {
    const input = page.locator(`#import-${experimentId}`);
    await input.focus();
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).toBe('Import log files into Log review');
    const chooser = page.waitForEvent('filechooser');
    // Enter on the input itself: the list re-renders as it refreshes (live marks), and a key sent to
    // whatever holds focus at that moment can land on the page instead, so no chooser ever opens.
    await input.press('Enter');
    await (await chooser).setFiles(EVENTS);
    await expect.poll(() => row('sample_px4_events.ulg').getAttribute('data-state'), { timeout: 60_000 }).toBe('done');
    expect(await row('sample_px4_events.ulg').locator('.import-outcome').textContent()).toMatch(/^29,480 messages · .* · from 2024-03-18 .* UTC \(GPS time\) · 47 events · 875 parameters/);
    await flightLink('sample_px4_events').waitFor();
    // The list says what it holds once read whole, even if it listed the flight while its log was being read.
    const facts = page.locator('.datasets li').filter({ has: page.locator('a', { hasText: /^sample_px4_events$/ }) }).locator('[data-fact=frames]');
    await expect.poll(() => facts.textContent()).toBe('29,480 messages');
  });

  it('answers the same file again as already imported, with the way to the flight, and a file that is no log with why', async () => {
    await drop(await transfer([SMALL]));
    const again = page.locator('.import-row[data-file="sample_log_small.ulg"]').last();
    await expect.poll(() => again.getAttribute('data-state'), { timeout: 30_000 }).toBe('done');
    expect(await again.locator('[data-testid=import-status]').textContent()).toBe('Already imported: open sample_log_small');
    expect(await page.locator('.datasets a', { hasText: /^sample_log_small/ }).count()).toBe(1);

    const notes = await page.evaluateHandle(() => {
      const dt = new DataTransfer();
      dt.items.add(new File(['flight notes: windy, 12 kt gusts\n'], 'notes.txt', { type: 'text/plain' }));
      return dt;
    });
    await drop(notes);
    await expect.poll(() => row('notes.txt').getAttribute('data-state'), { timeout: 30_000 }).toBe('failed');
    expect(await row('notes.txt').locator('[role=alert]').textContent()).toMatch(/^Failed: the file is not a log Sortie can import/);
    // Rows that ended are dismissed one by one.
    await row('notes.txt').getByRole('button', { name: 'Dismiss the import of notes.txt' }).click();
    expect(await row('notes.txt').count()).toBe(0);
  });

  it("opens the PX4 flight: the vehicle in the header, a topic plotted, the track from vehicle_gps_position, the band named from nav_state, its strings on the timeline", async () => {
    await row('sample_log_small.ulg').first().locator('.import-outcome a').click();
    await page.locator('.channels h2', { hasText: 'sample_log_small' }).waitFor();
    await expect.poll(headerFacts).toMatchObject({
      System: 'PX4 on NuttX',
      Hardware: 'CUBEPILOT_CUBEORANGE · STM32H7[4|5]xxx, rev. V',
      Software: 'v1.11.2 dev · 8583f1da · branch v1.11.2_w_rc_sysid',
      'Imported from': 'sample_log_small.ulg',
    });
    // The signal picker lists the log's topics; plot the attitude quaternion's first element.
    await page.fill('#channel-filter', 'vehicle_attitude q');
    const q0 = page.locator('input[data-channel="ulog.vehicle_attitude.q[0]"]');
    await q0.check();
    const pane = page.locator('figure.pane[data-channel="ulog.vehicle_attitude.q[0]"]');
    await pane.waitFor();
    await expect.poll(() => pane.locator('canvas').count()).toBeGreaterThan(0);
    // The track: 32 receiver fixes in 1e-7 degrees, a few metres around Trondheim's 63.417 N.
    const track = page.locator('svg[data-source="vehicle_gps_position"]');
    await track.waitFor();
    expect(Number(await track.getAttribute('data-fixes'))).toBeGreaterThan(20);
    expect(await track.getAttribute('aria-label')).toMatch(/^GPS track from vehicle_gps_position, \d+ fixes, \d+ m across$/);
    // The band: MANUAL (nav_state 0) armed, then standby after landing.
    await expect.poll(async () => (await segments()).map((s) => `${s.mode} ${s.armed}`)).toEqual(['Manual true', 'Manual false']);
    // Its three logged strings, as LOG marks of their severity.
    await expect.poll(() => page.locator('.timeline .mark[data-event="LOG"]').count()).toBe(3);
    expect(await page.locator('.timeline .mark[data-event="LOG"]').first().getAttribute('aria-label')).toMatch(/UTC LOG info: \[commander\] Takeoff detected$/);
    expect(await page.locator('.mark-legend li[data-event="LOG"]').textContent()).toBe('LOG info ×3');
    await page.screenshot({ path: join(shots, 'console-ulog-flight.png'), fullPage: true });
    expect(await seriousAxeViolations(page), 'axe on the ULog flight').toEqual([]);
  });

  it("opens the newer PX4 flight: its track from vehicle_global_position in degrees, the band through takeoff, hold and return", async () => {
    await flightLink('sample_px4_events').click();
    await page.locator('.channels h2', { hasText: 'sample_px4_events' }).waitFor();
    await expect.poll(headerFacts).toMatchObject({ System: 'PX4 on Linux', Hardware: 'PX4_SITL', Software: expect.stringMatching(/^v1\.15\.0 dev · cb09dde6/) });
    const track = page.locator('svg[data-source="vehicle_global_position"]');
    await track.waitFor();
    expect(Number(await track.getAttribute('data-fixes'))).toBeGreaterThan(50);
    await expect.poll(async () => new Set((await segments()).map((s) => s.mode))).toEqual(new Set(['Hold', 'Takeoff', 'Return']));
    expect((await segments()).some((s) => s.armed === 'true')).toBe(true);
  });

  it("opens the ArduSub flight: ATT.Roll plotted, no track without a position, the band in ArduSub's names", async () => {
    await flightLink('ardusub-small').click();
    await page.locator('.channels h2', { hasText: 'ardusub-small' }).waitFor();
    await expect.poll(headerFacts).toMatchObject({ Firmware: 'ArduSub V4.1.0 (89639005)' });
    await page.fill('#channel-filter', 'ATT Roll');
    await page.locator('input[data-channel="dataflash.ATT.Roll"]').check();
    await page.locator('figure.pane[data-channel="dataflash.ATT.Roll"]').waitFor();
    // MODE 19 is MANUAL on a Sub (on a Copter it would be AVOID_ADSB); the log disarms, and never arms.
    await expect.poll(async () => (await segments()).map((s) => `${s.mode} ${s.armed}`)).toEqual(['MANUAL false']);
    expect(await page.textContent('[data-testid=no-position]')).toBe('No position in this log (no global position or GPS message).');
    await expect.poll(() => page.locator('.timeline .mark[data-event="LOG"]').count()).toBeGreaterThan(0);
    expect(await seriousAxeViolations(page), 'axe on the DataFlash flight').toEqual([]);
  });

  it("lists a flight's parameters, filters them, and compares them with the other PX4 flight's", async () => {
    await flightLink('sample_log_small').click();
    await page.locator('.channels h2', { hasText: 'sample_log_small' }).waitFor();
    await page.getByRole('tab', { name: 'Parameters' }).click();
    await expect.poll(() => page.textContent('[data-testid=parameters-summary]')).toBe("980 parameters from the vehicle's log, 0 changed during the flight.");
    expect(await page.locator('[data-testid=parameters] tbody tr').count()).toBe(980);
    await page.fill('#parameter-filter', 'BAT1_N_CELLS');
    await expect.poll(() => page.locator('[data-testid=parameters] tbody tr').count()).toBe(1);
    expect(await page.locator('[data-testid=parameters] tbody tr').first().locator('td').allTextContents()).toEqual(['6', '6', '0']);

    await page.fill('#parameter-filter', '');
    await page.selectOption('#parameter-compare', { label: 'sample_px4_events (Log review)' });
    await expect.poll(() => page.textContent('[data-testid=diff-summary]')).toMatch(/^200 changed, 329 only in sample_px4_events, 434 only in sample_log_small, 346 the same\.$/);
    const cells = await page.locator('[data-testid=parameter-diff] tr[data-parameter="BAT1_N_CELLS"] td').allTextContents();
    expect(cells).toEqual(['6', '4', 'changed']);
    // A float32 reads as the ground station writes it.
    expect(await page.locator('[data-testid=parameter-diff] tr[data-parameter="BAT1_V_LOAD_DROP"] td').allTextContents()).toEqual(['0.3', '0.1', 'changed']);
    expect(await page.locator('[data-testid=parameter-diff] tr[data-diff=added]').count()).toBe(329);
    // At the end of both flights: no parameter changed during either, so the same differences.
    await page.selectOption('#parameter-at', 'final');
    await expect.poll(() => page.textContent('[data-testid=parameter-diff] caption')).toBe('sample_log_small against sample_px4_events, at the end');
    await expect.poll(() => page.textContent('[data-testid=diff-summary]')).toMatch(/^200 changed/);
    // The tabs by keyboard: back to the telemetry with the arrow key.
    await page.getByRole('tab', { name: 'Parameters' }).focus();
    await page.keyboard.press('ArrowLeft');
    await expect.poll(() => page.getByRole('tab', { name: 'Telemetry' }).getAttribute('aria-selected')).toBe('true');
    expect(await page.locator('#panel-telemetry').isVisible()).toBe(true);
    await page.getByRole('tab', { name: 'Parameters' }).click();
    // The comparison chosen is still there after a look at the plots.
    expect(await page.textContent('[data-testid=diff-summary]')).toMatch(/^200 changed/);
    await page.screenshot({ path: join(shots, 'console-parameter-diff.png'), fullPage: true });
    expect(await seriousAxeViolations(page), 'axe on the parameters and their diff').toEqual([]);
  });

  it('loaded everything under the CSP without a violation or page error', () => {
    expect(problems).toEqual([]);
  });
});
