import type { CommandRecord, TimelineEvent } from '@sortie/contracts';
import { timestampSeconds } from './format.ts';

/** A mark on the shared time axis: an event, a command at its relTime, or a step of a command's life. */
export interface TimelineMark {
  t: number;
  kind: 'event' | 'command' | 'dispatched' | 'delivered' | 'acked' | 'nacked' | 'timed_out';
  /** An event's own kind (LINK_LOSS, LIMIT, NOTE, LOG…). */
  event?: string;
  /** A logged string's severity (`LOG` events of an imported log: emergency … debug, syslog's names). */
  severity?: string;
  label: string;
}

/** A LOG event's severity, from its data (the importer writes syslog's name with the level). */
function severityOf(e: TimelineEvent): string | undefined {
  const severity = e.kind === 'LOG' ? e.data['severity'] : undefined;
  return typeof severity === 'string' && severity in SEVERITY_COLOURS ? severity : undefined;
}

/**
 * The marks of a dataset's events and commands. A command stands at its relTime: seconds after
 * `origin`, the dataset's first sample, whatever wall-clock time it was logged or sent at (a replayed
 * flight's commands are sent today, long after it flew). Its dispatch, delivery and answer are marked at
 * the wall-clock (or vehicle) time they happened, which shows when that lies inside the flight.
 */
export function marksOf(events: readonly TimelineEvent[], commands: readonly CommandRecord[], origin?: number): TimelineMark[] {
  const marks: TimelineMark[] = events.map((e) => {
    const severity = severityOf(e);
    const kind = severity ? `${e.kind} ${severity}` : e.kind;
    return { t: timestampSeconds(e.timestamp), kind: 'event', event: e.kind, ...(severity && { severity }), label: `${kind}${e.message ? `: ${e.message}` : ''}` };
  });
  for (const c of commands) {
    const name = c.commandText;
    if (origin !== undefined && c.retractedAt === null) marks.push({ t: origin + c.relTime, kind: 'command', label: `${name}: relTime ${relTimeText(c.relTime)}` });
    if (c.queuedAt) marks.push({ t: timestampSeconds(c.queuedAt), kind: 'dispatched', label: `${name}: dispatched` });
    if (c.deliveredAt) marks.push({ t: timestampSeconds(c.deliveredAt), kind: 'delivered', label: `${name}: delivered` });
    if ((c.status === 'acked' || c.status === 'nacked') && (c.vehicleTime ?? c.ackedAt)) {
      // The vehicle's own time when it gave one: that is when it acted, not when the cloud heard.
      const at = c.vehicleTime ?? c.ackedAt!;
      marks.push({ t: timestampSeconds(at), kind: c.status, label: `${name}: ${c.status}${c.vehicleTime ? ' (vehicle time)' : ''}${c.statusDetail ? ` — ${c.statusDetail}` : ''}` });
    }
    if (c.status === 'timed_out' && c.ackDeadlineAt) marks.push({ t: timestampSeconds(c.ackDeadlineAt), kind: 'timed_out', label: `${name}: timed out` });
  }
  return marks.sort((a, b) => a.t - b.t);
}

/** `T+42 s`: a relTime as the console writes it, seconds after the dataset's first sample. */
export function relTimeText(relTime: number): string {
  return `T${relTime < 0 ? '−' : '+'}${Math.abs(relTime)} s`;
}

// One colour per kind of mark, on the canvas, the marks under the plots and the legend alike: link loss
// red and its end green, limits amber (as their banners), a command's steps in colours no event uses.
const EVENT_COLOURS: Record<string, string> = { LINK_LOSS: '#d62728', LINK_REGAINED: '#2ca02c', LIMIT: '#e37b00' };
// A vehicle's logged strings by severity, as a ground station colours its messages: errors and worse red,
// warnings amber, the rest quieter the less they matter.
const SEVERITY_COLOURS: Record<string, string> = {
  emergency: '#8b0000',
  alert: '#a1261b',
  critical: '#b3261e',
  error: '#d62728',
  warning: '#e37b00',
  notice: '#1f77b4',
  info: '#5f6b7a',
  debug: '#a0a0a0',
};
// Other event kinds (NOTE, TAKEOFF, whatever a producer chose) take one of these by their name.
const OTHER_EVENT_COLOURS = ['#8c564b', '#e377c2', '#6f6f6f', '#a6a61c'];
const STEP_COLOURS: Record<Exclude<TimelineMark['kind'], 'event'>, string> = {
  command: '#1f5fbf',
  dispatched: '#9467bd',
  delivered: '#17a2b8',
  acked: '#0b5d1e',
  nacked: '#8a4b00',
  timed_out: '#333333',
};

export function markColour(m: Pick<TimelineMark, 'kind' | 'event' | 'severity'>): string {
  if (m.kind !== 'event') return STEP_COLOURS[m.kind];
  if (m.severity) return SEVERITY_COLOURS[m.severity]!;
  const kind = m.event ?? '';
  const known = EVENT_COLOURS[kind];
  if (known) return known;
  let hash = 0;
  for (let i = 0; i < kind.length; i++) hash = (hash * 31 + kind.charCodeAt(i)) >>> 0;
  return OTHER_EVENT_COLOURS[hash % OTHER_EVENT_COLOURS.length]!;
}

const STEP_NAMES: Record<Exclude<TimelineMark['kind'], 'event'>, string> = {
  command: 'command at its relTime',
  dispatched: 'command dispatched',
  delivered: 'command delivered',
  acked: 'command acked',
  nacked: 'command nacked',
  timed_out: 'command timed out',
};

/** What the legend calls a mark: an event by its kind (a logged string with its severity), a command's step by name. */
export function markName(m: Pick<TimelineMark, 'kind' | 'event' | 'severity'>): string {
  if (m.kind !== 'event') return STEP_NAMES[m.kind];
  return m.severity ? `${m.event ?? 'event'} ${m.severity}` : (m.event ?? 'event');
}
