import { modeSpans } from '@sortie/contracts';
import type { StoredHeartbeats } from '../telemetry/read.ts';
import type { ExportEvent } from './mcap.ts';

/**
 * The vehicle's flight modes as events beside the dataset's own on `/events`: one `MODE` event where each
 * run of one mode and armed state begins (`MANUAL, armed`), named and chosen as the console's mode band
 * names them (the contracts' mavlink/modes.ts: the autopilot's HEARTBEATs alone, every ArduPilot vehicle
 * and PX4). A window that starts inside a run opens with the mode in force, at the window's start, so the
 * file says what mode its first message was flown in. µs on the axis the messages are on.
 */
export function modeEvents(heartbeats: StoredHeartbeats | undefined, from: number | undefined, to: number | undefined): ExportEvent[] {
  if (!heartbeats || heartbeats.times.length === 0) return [];
  const end = heartbeats.times.at(-1)!;
  return modeSpans(heartbeats, end)
    .filter((s) => (to === undefined || s.from < to) && (from === undefined || s.from >= from || s.to > from))
    .map((s) => ({ t: from === undefined ? s.from : Math.max(s.from, from), kind: 'MODE', message: `${s.mode}, ${s.armed ? 'armed' : 'disarmed'}` }));
}
