// npm run bench:console — the console in real Chromium (the Debian package, driven by playwright-core)
// against a server in a child process, over one channel of 1.25 M raw rows (20 kHz for 62.5 s, loaded
// through StreamSubmit so that ingest builds the rollups Query reads):
//   1. select → drawn: from ticking the channel to its first plot on screen (uPlot's draw, then the next
//      animation frame), the first time (cold: server and page) and then p50 over BENCH_RUNS re-selections;
//   2. zoom → redrawn: from the mouse-up of a drag-zoom to the pane redrawn with the re-queried window, p50;
//   3. the console's JavaScript, raw and gzipped, as the page loads it.
// Same-run baselines: the bare Query of the same request (same channel, window and point budget) from
// Node over the same Connect protocol, so the ratio is what the browser adds (fetch, decode, React-ish
// render, canvas draw). Options: BENCH_RUNS (20).
import os from 'node:os';
import { gzipSync } from 'node:zlib';
import { createSortieClient } from '@sortie/client';
import { createTestDatabase } from '../src/testing/test-database.ts';
import { CHROMIUM, launchChromium } from '../../test/console/browser.ts';
import { api, createOrgAndKey, percentile, registerWideDataset, startServerProcess } from './bench-env.ts';
import { loadWideFlight, ROW_COUNT as ROWS, SAMPLE_US, START_US } from './wide-flight.ts';

/** How recently a flight's data was committed for the console to open it live (LIVE_RECENT_MS of the console's live.ts). */
const LIVE_RECENT_MS = 10_000;

const RUNS = Number(process.env.BENCH_RUNS ?? 20);
// The channel as the console names it (its ch_N column) and as Query addresses it (N).
const CHANNEL = 'ch_0';
const QUERY_CHANNEL = '0';
// The targets.
const TARGET_SELECT_MS = 1000;
const TARGET_ZOOM_P50_MS = 150;
const TARGET_GZIP_BYTES = 100 * 1024;

const stats = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p95: percentile(sorted, 95), n: sorted.length };
};
const ms = (n: number) => `${n.toFixed(1)} ms`;

const database = await createTestDatabase();
const server = await startServerProcess(database.url);
const { apiKey, handle } = await createOrgAndKey(database.url);
const browser = await launchChromium();
try {
  const experiment = await api(server.httpUrl, apiKey, '/api/experiments/create', { name: 'console bench' });
  const datasetId = await registerWideDataset(server.httpUrl, apiKey, experiment.id, 'one channel, 1.25 M rows', 1);
  const loadStarted = performance.now();
  await loadWideFlight(server.grpcPort, apiKey, experiment.id, datasetId, 1);
  const loaded = performance.now() - loadStarted;
  // A flight committed in the last ten seconds opens live (Follow, a one-minute window): this bench times
  // the recorded flight's Query path, so the page opens once the flight is no longer live.
  await new Promise((resolve) => setTimeout(resolve, LIVE_RECENT_MS + 1000));
  console.log(
    `bench:console — 1 channel × ${ROWS.toLocaleString('en-US')} raw rows (20 kHz, 62.5 s) loaded in ${(loaded / 1000).toFixed(1)} s; ` +
      `${os.cpus().length} CPUs; ${browser.version()} at ${CHROMIUM}; ${RUNS} runs`,
  );

  const page = await (await browser.newContext({ viewport: { width: 1400, height: 1000 } })).newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(error.message));

  // 3. The JavaScript the page loads (the server sends it uncompressed; a proxy in front may gzip it).
  // By URL: the second page load may take the (immutable) script from the cache, and still reports it.
  const scripts = new Map<string, Buffer>();
  page.on('response', async (response) => {
    if (response.request().resourceType() === 'script') scripts.set(response.url(), await response.body());
  });
  await page.goto(`${server.httpUrl}/`);
  await page.fill('#api-key', apiKey);
  await page.click('button[type=submit]');
  await page.waitForSelector('[data-testid=organization]');
  await page.goto(`${server.httpUrl}/?experiment=${experiment.id}&dataset=${datasetId}`);
  const box = page.locator(`input[data-channel="${CHANNEL}"]`);
  await box.waitFor({ state: 'attached' });
  const js = Buffer.concat([...scripts.values()]);

  /** Tick (or untick) the channel inside the page and resolve when its pane has drawn and the next frame is up. */
  const select = () =>
    page.evaluate(
      (channel) =>
        new Promise<{ ms: number; raw: number; shown: number }>((resolve) => {
          const started = performance.now();
          addEventListener(
            'sortie:drawn',
            () =>
              requestAnimationFrame(() => {
                const pane = document.querySelector(`figure.pane[data-channel="${channel}"]`) as HTMLElement;
                resolve({ ms: performance.now() - started, raw: Number(pane.dataset.rawPoints), shown: Number(pane.dataset.shownPoints) });
              }),
            { once: true },
          );
          (document.querySelector(`input[data-channel="${channel}"]`) as HTMLInputElement).click();
        }),
      CHANNEL,
    );
  const deselect = async () => {
    await box.uncheck();
    await page.locator('figure.pane').waitFor({ state: 'detached' });
  };

  // 1. select → drawn.
  const cold = await select();
  if (cold.raw !== ROWS) throw new Error(`the pane shows ${cold.raw} raw points, not ${ROWS}`);
  const width = await page.locator('figure.pane .u-over').evaluate((e) => (e as HTMLElement).clientWidth);
  const warm: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    await deselect();
    warm.push((await select()).ms);
  }

  // 2. zoom → redrawn: drags of ~4 % of the pane at spread positions, each from the whole range.
  const pane = page.locator('figure.pane');
  const over = (await pane.locator('.u-over').boundingBox())!;
  const zooms: number[] = [];
  const resets: number[] = [];
  const zoomRaw: number[] = [];
  const armRedraw = () =>
    page.evaluate(
      () =>
        new Promise<void>((armed) => {
          (window as unknown as { __redraw: Promise<number> }).__redraw = new Promise<number>((resolve) => {
            let started = 0;
            // The mouse-up (or click) that ends the gesture starts the clock; the pane's next draw stops it.
            addEventListener('mouseup', () => (started = performance.now()), { once: true, capture: true });
            addEventListener('sortie:drawn', () => requestAnimationFrame(() => resolve(performance.now() - started)), { once: true });
          });
          armed();
        }),
    );
  const redrawn = () => page.evaluate(() => (window as unknown as { __redraw: Promise<number> }).__redraw);
  for (let i = 0; i < RUNS; i++) {
    const at = 0.05 + ((i * 0.37) % 0.85);
    await armRedraw();
    await page.mouse.move(over.x + over.width * at, over.y + over.height / 2);
    await page.mouse.down();
    await page.mouse.move(over.x + over.width * (at + 0.04), over.y + over.height / 2, { steps: 4 });
    await page.mouse.up();
    zooms.push(await redrawn());
    zoomRaw.push(Number(await pane.getAttribute('data-raw-points')));
    await armRedraw();
    await page.click('text=Reset zoom');
    resets.push(await redrawn());
  }
  const zoomedRaw = stats(zoomRaw).p50;
  if (!(zoomedRaw < ROWS / 10)) throw new Error(`a zoomed window holds ${zoomedRaw} raw points: the zoom did not re-query`);

  // Baselines: the bare Query of the same requests from Node, over Connect binary on the same port.
  const client = createSortieClient({ baseUrl: server.httpUrl, apiKey });
  const bare = async (window?: { from: number; to: number }) => {
    const started = performance.now();
    const stamp = (us: number) => ({ seconds: BigInt(Math.floor(us / 1e6)), nanos: (us % 1e6) * 1000 });
    await client.telemetry.query({
      experimentId: experiment.id,
      datasetId,
      channelIds: [QUERY_CHANNEL],
      maxPointsPerChannel: width,
      ...(window && { from: stamp(window.from), to: stamp(window.to) }),
    });
    return performance.now() - started;
  };
  const bareWhole: number[] = [];
  const bareZoom: number[] = [];
  const spanUs = ROWS * SAMPLE_US;
  for (let i = 0; i < RUNS; i++) {
    bareWhole.push(await bare());
    const at = 0.05 + ((i * 0.37) % 0.85);
    const from = START_US + Math.round(spanUs * at);
    bareZoom.push(await bare({ from, to: from + Math.round(spanUs * 0.04) }));
  }

  const w = stats(warm);
  const z = stats(zooms);
  const r = stats(resets);
  const bw = stats(bareWhole);
  const bz = stats(bareZoom);
  const gzipped = gzipSync(js).length;
  const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
  console.log(`pane: ${width} px wide, ${cold.shown} of ${cold.raw.toLocaleString('en-US')} raw points shown (whole range); zoomed windows hold ~${Math.round(zoomedRaw).toLocaleString('en-US')} raw points`);
  console.log(`select → drawn, first (cold)        : ${ms(cold.ms)}`);
  console.log(`select → drawn, again               : p50 ${ms(w.p50)}, p95 ${ms(w.p95)}  (bare Query of the same request: p50 ${ms(bw.p50)}; ratio ${(w.p50 / bw.p50).toFixed(1)}×)`);
  console.log(`zoom mouse-up → redrawn             : p50 ${ms(z.p50)}, p95 ${ms(z.p95)}  (bare Query of the window: p50 ${ms(bz.p50)}; ratio ${(z.p50 / bz.p50).toFixed(1)}×)`);
  console.log(`reset zoom click → redrawn          : p50 ${ms(r.p50)}, p95 ${ms(r.p95)}`);
  console.log(`console JavaScript                  : ${js.length.toLocaleString('en-US')} bytes, ${gzipped.toLocaleString('en-US')} gzipped (${(gzipped / 1024).toFixed(1)} KB) in ${scripts.size} file(s)`);
  console.log(`target select → drawn ≤ ${TARGET_SELECT_MS} ms (cold)   : ${verdict(cold.ms <= TARGET_SELECT_MS)}`);
  console.log(`target zoom → redrawn p50 ≤ ${TARGET_ZOOM_P50_MS} ms    : ${verdict(z.p50 <= TARGET_ZOOM_P50_MS)}`);
  console.log(`target JavaScript ≤ 100 KB gzipped  : ${verdict(gzipped <= TARGET_GZIP_BYTES)}`);
  if (problems.length > 0) throw new Error(`page errors: ${problems.join('; ')}`);
} finally {
  await browser.close();
  await server.stop();
  await handle.close();
  await database.drop();
}
