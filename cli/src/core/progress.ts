/**
 * The export's progress bar on a terminal: bytes, rate, and — when the dataset's time span is known —
 * how far through it the rows are, with an ETA. A stream has no length up front (the server writes
 * rows as it reads them), so the fraction is taken on the time axis: the last row's time between the
 * window's first and last sample.
 */
export interface ProgressSpan {
  /** Microseconds since 1970 of the first and last sample the export covers. */
  startUs: number;
  endUs: number;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 ** 2) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
}

export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '--:--';
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${rest}` : `${m}:${rest}`;
}

/** One line of the bar, from what was seen so far (pure, so it is tested as text). */
export function progressLine(state: { bytes: number; elapsedS: number; rows: number; unit: string; atUs?: number; span?: ProgressSpan; width?: number }): string {
  const rate = state.elapsedS > 0 ? state.bytes / state.elapsedS : 0;
  const parts = [`${formatBytes(state.bytes)} at ${formatBytes(rate)}/s`, `${state.rows} ${state.unit}`];
  let bar = '';
  if (state.span && state.atUs !== undefined && state.span.endUs > state.span.startUs) {
    const fraction = Math.min(1, Math.max(0, (state.atUs - state.span.startUs) / (state.span.endUs - state.span.startUs)));
    const width = state.width ?? 24;
    const filled = Math.round(fraction * width);
    bar = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.floor(fraction * 100)).padStart(3)}% `;
    const eta = fraction > 0 ? (state.elapsedS / fraction) * (1 - fraction) : Number.NaN;
    parts.push(`ETA ${formatDuration(eta)}`);
  } else {
    parts.push('ETA --:--');
  }
  return bar + parts.join('  ');
}

/** Draws the bar on a TTY stream at most every `everyMs`, over the same line. */
export class ProgressBar {
  readonly #write: (text: string) => void;
  readonly #started = performance.now();
  readonly #everyMs: number;
  #last = 0;
  #shown = false;

  constructor(write: (text: string) => void, everyMs = 200) {
    this.#write = write;
    this.#everyMs = everyMs;
  }

  update(state: Omit<Parameters<typeof progressLine>[0], 'elapsedS'>, force = false): void {
    this.show((elapsedS) => progressLine({ ...state, elapsedS }), force);
  }

  /** Draw the line `line` makes of the seconds since the bar began, unless the last was drawn under `everyMs` ago. */
  show(line: (elapsedS: number) => string, force = false): void {
    const now = performance.now();
    if (!force && now - this.#last < this.#everyMs) return;
    this.#last = now;
    this.#shown = true;
    this.#write(`\r\u001b[2K${line((now - this.#started) / 1000)}`);
  }

  finish(): void {
    if (this.#shown) this.#write('\n');
  }
}

/**
 * One line of an import's progress: the phase (the upload, then the server reading the file), how far
 * through the file it is when its size is known, the rate over the phase so far, and for the import the
 * messages stored. Pure, so it is tested as text.
 */
export function importProgressLine(state: { phase: 'upload' | 'import'; bytes: number; totalBytes: number | null; messages: number; elapsedS: number; width?: number }): string {
  const rate = state.elapsedS > 0 ? state.bytes / state.elapsedS : 0;
  const parts = [state.phase === 'upload' ? 'upload' : 'import'];
  let eta = '';
  if (state.totalBytes !== null && state.totalBytes > 0) {
    const fraction = Math.min(1, state.bytes / state.totalBytes);
    const width = state.width ?? 24;
    const filled = Math.round(fraction * width);
    parts.push(`[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.floor(fraction * 100)).padStart(3)}%`);
    parts.push(`${formatBytes(state.bytes)} of ${formatBytes(state.totalBytes)} at ${formatBytes(rate)}/s`);
    eta = `ETA ${formatDuration(rate > 0 ? (state.totalBytes - state.bytes) / rate : Number.NaN)}`;
  } else {
    parts.push(`${formatBytes(state.bytes)} at ${formatBytes(rate)}/s`);
  }
  if (state.phase === 'import') parts.push(`${state.messages} messages`);
  if (eta) parts.push(eta);
  return parts.join('  ');
}
