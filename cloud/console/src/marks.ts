import type { CommandRecord, TimelineEvent } from '@sortie/contracts';
import { timestampSeconds } from './format.ts';

/** A mark on the shared time axis: an event, or a step of a command's life. */
export interface TimelineMark {
  t: number;
  kind: 'event' | 'dispatched' | 'delivered' | 'acked' | 'nacked' | 'timed_out';
  label: string;
}

export function marksOf(events: readonly TimelineEvent[], commands: readonly CommandRecord[]): TimelineMark[] {
  const marks: TimelineMark[] = events.map((e) => ({ t: timestampSeconds(e.timestamp), kind: 'event', label: `${e.kind}${e.message ? `: ${e.message}` : ''}` }));
  for (const c of commands) {
    const name = c.commandText;
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
