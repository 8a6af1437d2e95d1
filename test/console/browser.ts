// Real Chromium for the console's tests and bench: the Debian package at /usr/bin/chromium driven by
// playwright-core, which never downloads a browser. CI installs the package (.ci/run).
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = process.env.SORTIE_CHROMIUM ?? '/usr/bin/chromium';

export function chromiumMissing(): string | undefined {
  return existsSync(CHROMIUM) ? undefined : `no Chromium at ${CHROMIUM} (apt-get install chromium, or set SORTIE_CHROMIUM)`;
}

/**
 * The browser suite runs unless SORTIE_SKIP_BROWSER=1 says otherwise: a missing Chromium is a failure
 * naming the fix, never a silent skip (a skipped suite would pass CI with the console untested).
 */
export const SKIP_BROWSER = process.env.SORTIE_SKIP_BROWSER === '1';

export async function launchChromium(): Promise<Browser> {
  const missing = chromiumMissing();
  if (missing) throw new Error(missing);
  // --no-sandbox: CI runs as root in a container, where Chromium's sandbox cannot start.
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/**
 * axe-core's serious and critical violations on the page as it is. The source goes in through the
 * DevTools protocol (page.evaluate), which the page's CSP does not govern; the CSP stays on, so the
 * console is checked exactly as a user gets it.
 */
export async function seriousAxeViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(context: Document, options: object): Promise<{ violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: string[] }> }> }> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(' ')) }));
  });
}

/**
 * Content-Security-Policy reports and page errors: a console that works only with a looser policy fails its
 * tests. A violation that the page's own code catches (a library probing whether `eval` is allowed) logs
 * nothing to the console, so the page's `securitypolicyviolation` events are reported too, by a listener
 * installed before any of its scripts run.
 */
export async function watchPageProblems(page: Page): Promise<string[]> {
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (event) => {
      console.error(`Content Security Policy violation: ${event.effectiveDirective} blocked ${event.blockedURI || '(inline)'} at ${event.sourceFile}:${event.lineNumber}`);
    });
  });
  const problems: string[] = [];
  page.on('console', (message) => {
    const text = message.text();
    if (/Content Security Policy|Refused to/i.test(text)) problems.push(`CSP: ${text}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  return problems;
}

/**
 * Where the tests put their screenshots: docs/screenshots when SORTIE_SCREENSHOTS=1 asks for the docs'
 * images to be renewed, else a temporary folder. They are taken on every run either way, so a view that
 * cannot be captured fails the tests; only a deliberate run rewrites the committed images, and CI leaves
 * the working tree clean.
 */
export function screenshotDir(): { dir: string; temporary: boolean } {
  if (process.env.SORTIE_SCREENSHOTS === '1') {
    const docs = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
    mkdirSync(docs, { recursive: true });
    return { dir: docs, temporary: false };
  }
  return { dir: mkdtempSync(join(tmpdir(), 'console-screenshots-')), temporary: true };
}
