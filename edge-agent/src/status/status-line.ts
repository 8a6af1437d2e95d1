// What the operator sees: one status line on a terminal, or the same figures as a JSON log record.
// Pure formatting, so it is tested without a terminal.
import type { PipelineStats } from '../pipeline/pipeline.ts';
import type { SourceProgress } from '../sources/source.ts';
import type { UplinkStatus } from '../uplink/uplink.ts';

export interface StatusSnapshot {
  readonly source: { readonly description: string; readonly state: string };
  readonly progress: (SourceProgress & { readonly etaSeconds: number | null }) | null;
  readonly stats: PipelineStats;
  readonly uplink: UplinkStatus;
  /** The source's clock, for how long a lost link has been silent. */
  readonly nowUs: number;
}

const count = new Intl.NumberFormat('en-US');

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(2)} GiB`;
}

export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

export function progressBar(fraction: number, width: number): string {
  const f = Math.min(1, Math.max(0, Number.isFinite(fraction) ? fraction : 0));
  const full = Math.round(f * width);
  return `[${'#'.repeat(full)}${'.'.repeat(width - full)}]`;
}

/** `1:up`, `2:LOST 12s`; `waiting` before any vehicle heartbeat. */
export function formatLinks(stats: PipelineStats, nowUs: number): string {
  const watched = stats.systems.filter((s) => s.link !== 'unwatched');
  if (watched.length === 0) return 'waiting for a vehicle';
  return watched
    .map((s) => (s.link === 'up' ? `${s.sysid}:up` : `${s.sysid}:LOST ${formatDuration((nowUs - s.lastFrameUs) / 1e6)}`))
    .join(' ');
}

/** `streaming`, `connecting`, `cloud away, retry in 4s`, `no uplink`. */
export function formatUplinkState(uplink: UplinkStatus): string {
  switch (uplink.state) {
    case 'off':
      return 'no uplink';
    case 'backing-off':
      return uplink.retryInSeconds === undefined ? 'cloud away' : `cloud away, retry in ${formatDuration(Math.ceil(uplink.retryInSeconds))}`;
    default:
      return uplink.state;
  }
}

/** The terminal line, cut to `width` columns so that \r can redraw it in place. */
export function formatStatusLine(snap: StatusSnapshot, width: number): string {
  const { stats } = snap;
  const parts: string[] = [];
  if (snap.progress && snap.progress.totalBytes > 0) {
    const p = snap.progress;
    const eta = p.etaSeconds === null ? '' : ` ETA ${formatDuration(p.etaSeconds)}`;
    parts.push(
      `${progressBar(p.bytesRead / p.totalBytes, 20)} ${Math.floor((100 * p.bytesRead) / p.totalBytes)}% ` +
        `${formatBytes(p.bytesRead)}/${formatBytes(p.totalBytes)}${eta}`,
    );
  } else {
    parts.push(snap.source.state);
  }
  parts.push(`frames ${count.format(stats.framesIn)}`);
  parts.push(`spooled ${count.format(stats.spooled)}`);
  if (snap.uplink.sent !== undefined) parts.push(`sent ${count.format(snap.uplink.sent)}`);
  parts.push(`acked ${count.format(stats.acknowledged)}`);
  parts.push(`lag ${count.format(stats.unacknowledged)} (${formatUplinkState(snap.uplink)})`);
  parts.push(`link ${formatLinks(stats, snap.nowUs)}`);
  if (stats.junkBytes > 0) parts.push(`junk ${formatBytes(stats.junkBytes)}`);
  if (stats.notSpooled > 0) parts.push(`NOT SPOOLED ${count.format(stats.notSpooled)}`);
  if ((snap.uplink.pendingEvents ?? 0) > 0) parts.push(`events to annotate ${snap.uplink.pendingEvents}`);
  // Last, so a narrow terminal cuts the error text rather than the figures.
  if (snap.uplink.state === 'backing-off' && snap.uplink.detail) parts.push(`cloud: ${snap.uplink.detail}`);
  const line = parts.join(' | ');
  return line.length <= width ? line : `${line.slice(0, Math.max(0, width - 1))}…`;
}

/** The same figures for a JSON log line (machine-readable, no terminal). */
export function statusRecord(snap: StatusSnapshot): Record<string, unknown> {
  const { stats } = snap;
  return {
    source: snap.source.description,
    sourceState: snap.source.state,
    ...(snap.progress
      ? { bytesRead: snap.progress.bytesRead, totalBytes: snap.progress.totalBytes, etaSeconds: snap.progress.etaSeconds }
      : {}),
    framesIn: stats.framesIn,
    bytesIn: stats.bytesIn,
    junkBytes: stats.junkBytes,
    spooled: stats.spooled,
    notSpooled: stats.notSpooled,
    acknowledged: stats.acknowledged,
    unacknowledged: stats.unacknowledged,
    durableSeq: String(stats.durableSeq),
    ackedSeq: String(stats.ackedSeq),
    uplink: snap.uplink.state,
    ...(snap.uplink.detail === undefined ? {} : { uplinkDetail: snap.uplink.detail }),
    ...(snap.uplink.sent === undefined ? {} : { uplinkSent: snap.uplink.sent, uplinkConfirmed: snap.uplink.confirmed, uplinkDuplicates: snap.uplink.duplicates }),
    ...(snap.uplink.pendingEvents === undefined ? {} : { pendingLinkEvents: snap.uplink.pendingEvents }),
    linkEvents: stats.linkEvents,
    systems: stats.systems.map((s) => ({ sysid: s.sysid, frames: s.frames, link: s.link })),
  };
}
