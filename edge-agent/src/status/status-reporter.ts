// Drives the operator's view. On a terminal: one line redrawn in place with \r at most 4 times a
// second (log lines are printed above it, see logger.ts). Anywhere else (systemd, docker, a pipe):
// no control characters at all, a JSON `status` log record every few seconds instead.
import type { Logger } from 'pino';
import { formatStatusLine, statusRecord } from './status-line.ts';
import type { StatusSnapshot } from './status-line.ts';

const TTY_REDRAW_MS = 250;

export interface StatusOutput {
  write(text: string): unknown;
  readonly columns?: number;
}

export interface StatusReporterOptions {
  /** Where the line is drawn: stdout when it is a terminal, else null (JSON records only). */
  readonly tty: StatusOutput | null;
  readonly logger: Logger;
  readonly snapshot: () => StatusSnapshot;
  readonly jsonIntervalMs: number;
}

export class StatusReporter {
  readonly #opts: StatusReporterOptions;
  #timer: NodeJS.Timeout | null = null;
  #drawn = '';
  #eta: EtaEstimator = new EtaEstimator();

  constructor(options: StatusReporterOptions) {
    this.#opts = options;
  }

  start(): void {
    const every = this.#opts.tty ? TTY_REDRAW_MS : this.#opts.jsonIntervalMs;
    this.#timer = setInterval(() => this.#tick(), every);
    this.#timer.unref();
    if (this.#opts.tty) this.redraw();
  }

  /** Erases the line so something else can be printed on it (a log line). */
  clear(): void {
    if (!this.#opts.tty || this.#drawn === '') return;
    this.#opts.tty.write('\r\x1b[K');
    this.#drawn = '';
  }

  redraw(): void {
    const tty = this.#opts.tty;
    if (!tty) return;
    const line = formatStatusLine(this.#snapshot(), (tty.columns ?? 100) - 1);
    tty.write(`\r${line}\x1b[K`);
    this.#drawn = line;
  }

  /** Final state: the line is left on screen (newline after it), or one last JSON record. */
  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    if (this.#opts.tty) {
      this.redraw();
      this.#opts.tty.write('\n');
      this.#drawn = '';
    } else {
      this.#opts.logger.info(statusRecord(this.#snapshot()), 'status');
    }
  }

  #tick(): void {
    if (this.#opts.tty) this.redraw();
    else this.#opts.logger.info(statusRecord(this.#snapshot()), 'status');
  }

  #snapshot(): StatusSnapshot {
    const snap = this.#opts.snapshot();
    if (!snap.progress) return snap;
    return { ...snap, progress: { ...snap.progress, etaSeconds: this.#eta.update(snap.progress.bytesRead, snap.progress.totalBytes) } };
  }
}

/**
 * Remaining time from the average rate since the first estimate: a replay's rate is steady (as fast
 * as possible, or the recording's own pace), and an average does not swing with each chunk.
 */
export class EtaEstimator {
  readonly #now: () => number;
  #startMs = 0;
  #startBytes = -1;

  constructor(now: () => number = () => performance.now()) {
    this.#now = now;
  }

  /** Seconds left, or null until a rate is known. */
  update(bytesRead: number, totalBytes: number): number | null {
    if (bytesRead >= totalBytes) return 0;
    const now = this.#now();
    if (this.#startBytes < 0) {
      this.#startMs = now;
      this.#startBytes = bytesRead;
      return null;
    }
    const done = bytesRead - this.#startBytes;
    const elapsedMs = now - this.#startMs;
    if (done <= 0 || elapsedMs <= 0) return null;
    return ((totalBytes - bytesRead) / done) * (elapsedMs / 1000);
  }
}
