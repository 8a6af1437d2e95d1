import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { PipelineStats } from '../pipeline/pipeline.ts';
import { humanLine } from './logger.ts';
import { formatBytes, formatDuration, formatStatusLine, progressBar, statusRecord } from './status-line.ts';
import type { StatusSnapshot } from './status-line.ts';
import { EtaEstimator, StatusReporter } from './status-reporter.ts';

const stats = (over: Partial<PipelineStats> = {}): PipelineStats => ({
  chunks: 10,
  bytesIn: 5000,
  framesIn: 12_345,
  junkBytes: 0,
  crcFailures: 0,
  unknownIds: 0,
  spooled: 12_345,
  notSpooled: 0,
  acknowledged: 12_000,
  unacknowledged: 345,
  durableSeq: 12_345n,
  ackedSeq: 12_000n,
  linkEvents: 0,
  systems: [{ sysid: 1, frames: 12_345, bytes: 400_000, lastFrameUs: 90e6, link: 'up' }],
  ...over,
});

const snap = (over: Partial<StatusSnapshot> = {}): StatusSnapshot => ({
  source: { description: 'udp listen 0.0.0.0:14550', state: 'listening on 0.0.0.0:14550' },
  progress: null,
  stats: stats(),
  uplink: { state: 'streaming' },
  nowUs: 100e6,
  ...over,
});

describe('status line', () => {
  it('shows frames, spooled, acknowledged, lag and link state', () => {
    expect(formatStatusLine(snap(), 200)).toBe(
      'listening on 0.0.0.0:14550 | frames 12,345 | spooled 12,345 | acked 12,000 | lag 345 (streaming) | link 1:up',
    );
  });

  it('shows a lost link with how long it has been silent, and who is not watched yet', () => {
    const s = stats({
      systems: [
        { sysid: 1, frames: 1, bytes: 1, lastFrameUs: 88e6, link: 'lost' },
        { sysid: 2, frames: 1, bytes: 1, lastFrameUs: 99e6, link: 'up' },
        { sysid: 255, frames: 1, bytes: 1, lastFrameUs: 99e6, link: 'unwatched' },
      ],
    });
    expect(formatStatusLine(snap({ stats: s }), 200)).toContain('link 1:LOST 12s 2:up');
    expect(formatStatusLine(snap({ stats: stats({ systems: [] }) }), 200)).toContain('link waiting for a vehicle');
  });

  it('shows a progress bar with bytes and ETA for a replay, and says when there is no uplink', () => {
    const line = formatStatusLine(
      snap({ progress: { bytesRead: 512 * 1024, totalBytes: 1024 * 1024, etaSeconds: 75 }, uplink: { state: 'off' } }),
      200,
    );
    expect(line).toMatch(/^\[##########\.{10}\] 50% 512\.0 KiB\/1\.0 MiB ETA 1m15s \| frames/);
    expect(line).toContain('lag 345 (no uplink)');
  });

  it('fits the terminal width so \\r can redraw it in place', () => {
    const line = formatStatusLine(snap(), 40);
    expect(line.length).toBe(40);
    expect(line.endsWith('…')).toBe(true);
  });

  it('flags junk and frames that were not spooled', () => {
    const line = formatStatusLine(snap({ stats: stats({ junkBytes: 2048, notSpooled: 3 }) }), 300);
    expect(line).toContain('junk 2.0 KiB');
    expect(line).toContain('NOT SPOOLED 3');
  });

  it('formats sizes, durations and bars', () => {
    expect([formatBytes(10), formatBytes(1536), formatBytes(5 * 1024 ** 3)]).toEqual(['10 B', '1.5 KiB', '5.00 GiB']);
    expect([formatDuration(5), formatDuration(65), formatDuration(7265)]).toEqual(['5s', '1m05s', '2h01m']);
    expect(progressBar(0.25, 8)).toBe('[##......]');
    expect(progressBar(3, 4)).toBe('[####]');
  });

  it('says when the cloud is away, when the next attempt is and why, and how many link events wait', () => {
    const line = formatStatusLine(
      snap({ uplink: { state: 'backing-off', retryInSeconds: 3.2, detail: 'unreachable: fetch failed: connect ECONNREFUSED', pendingEvents: 1 } }),
      300,
    );
    expect(line).toContain('lag 345 (cloud away, retry in 4s) | link 1:up');
    expect(formatStatusLine(snap({ uplink: { state: 'streaming', sent: 12_300 } }), 300)).toContain('spooled 12,345 | sent 12,300 | acked 12,000 | lag 345 (streaming)');
    expect(line).toContain('events to annotate 1');
    expect(line.endsWith('cloud: unreachable: fetch failed: connect ECONNREFUSED')).toBe(true);
    // Cut on a narrow terminal: the error goes first, the figures stay.
    expect(formatStatusLine(snap({ uplink: { state: 'backing-off', detail: 'x'.repeat(200) } }), 120)).toContain('lag 345 (cloud away)');
  });

  it('puts the uplink figures in the JSON record', () => {
    const uplink = { state: 'streaming' as const, sent: 500, confirmed: 480, duplicates: 20, pendingEvents: 0 };
    expect(statusRecord(snap({ uplink }))).toMatchObject({ uplink: 'streaming', uplinkSent: 500, uplinkConfirmed: 480, uplinkDuplicates: 20, pendingLinkEvents: 0 });
  });

  it('gives the JSON record the same figures, seqs as strings', () => {
    expect(statusRecord(snap())).toMatchObject({ framesIn: 12_345, spooled: 12_345, acknowledged: 12_000, unacknowledged: 345, durableSeq: '12345', uplink: 'streaming' });
  });
});

describe('EtaEstimator', () => {
  it('estimates from the average rate and reaches 0 at the end', () => {
    let now = 0;
    const eta = new EtaEstimator(() => now);
    expect(eta.update(0, 1000)).toBeNull();
    now = 1000;
    expect(eta.update(100, 1000)).toBeCloseTo(9);
    now = 2000;
    expect(eta.update(200, 1000)).toBeCloseTo(8);
    expect(eta.update(1000, 1000)).toBe(0);
  });
});

describe('StatusReporter', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('on a terminal redraws one line with \\r at most 4 times a second', () => {
    vi.useFakeTimers();
    const writes: string[] = [];
    const reporter = new StatusReporter({
      tty: { write: (t: string) => writes.push(t), columns: 120 },
      logger: pino({ level: 'silent' }),
      snapshot: () => snap(),
      jsonIntervalMs: 10_000,
    });
    reporter.start();
    vi.advanceTimersByTime(3000);
    expect(writes.length).toBeLessThanOrEqual(1 + 12);
    expect(writes.length).toBeGreaterThanOrEqual(12);
    expect(writes.every((w) => w.startsWith('\r') && w.endsWith('\x1b[K') && !w.includes('\n'))).toBe(true);
    reporter.clear();
    expect(writes.at(-1)).toBe('\r\x1b[K');
    reporter.stop();
    expect(writes.at(-1)).toBe('\n');
  });

  it('off a terminal writes no control characters, only periodic JSON status records', () => {
    vi.useFakeTimers();
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (l: string) => lines.push(l) });
    const reporter = new StatusReporter({ tty: null, logger, snapshot: () => snap(), jsonIntervalMs: 10_000 });
    reporter.start();
    vi.advanceTimersByTime(30_000);
    reporter.stop();
    expect(lines).toHaveLength(4);
    const rec = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(rec).toMatchObject({ msg: 'status', framesIn: 12_345 });
    expect(lines.join('')).not.toMatch(/[\r\x1b]/);
  });
});

describe('terminal log lines', () => {
  it('turns a pino record into a short readable line', () => {
    const line = humanLine(JSON.stringify({ level: 40, time: Date.parse('2026-01-01T10:20:30Z'), service: 's', sysid: 1, msg: 'LINK_LOSS: no frame' }));
    expect(line).toMatch(/^\d\d:\d\d:\d\d WARN  LINK_LOSS: no frame sysid=1\n$/);
  });
});
