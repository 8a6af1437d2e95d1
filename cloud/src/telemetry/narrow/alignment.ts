import type { BootSession } from './boot-sessions.ts';

/**
 * Read-time alignment of narrow samples to wall time (docs/decisions/0006-narrow-mavlink.md). Raw
 * `time` stays on the clock `time_source` names; aligned time is computed per boot session:
 *
 *   gps    the vehicle's Unix time (GPS): already wall time            aligned = time
 *   boot   epoch + boot time                                          aligned = time + offset
 *   agent  the agent's receive time (frames that carry no time)       aligned = time + (offset − agent)
 *
 * where offset = gps offset of the session when the vehicle had GPS time in it, else its agent offset
 * (min receive − boot), and agent = the agent offset. A receive time minus the agent offset estimates
 * the frame's boot time, so agent-stamped rows land on the same axis as boot-stamped ones even when
 * the agent's clock and GPS time disagree (the SITL capture's do, by 15 s).
 */

export type TimeSource = 'gps' | 'boot' | 'agent';

export const TIME_SOURCES: readonly TimeSource[] = ['gps', 'boot', 'agent'];

/** time_source as stored ("char", message-tables.ts SOURCE_CODE) back to its name. */
export const TIME_SOURCE_OF_CODE: Readonly<Record<string, TimeSource>> = { g: 'gps', b: 'boot', a: 'agent' };

export interface SessionShift {
  session: number;
  /** Added to raw time of `boot` rows. */
  bootShiftUs: number;
  /** Added to raw time of `agent` rows. */
  agentShiftUs: number;
  /** What the session's alignment rests on: GPS time, the agent's clock, or nothing known (identity). */
  basis: 'gps' | 'agent' | 'none';
}

export function sessionShift(s: Pick<BootSession, 'session' | 'gpsOffsetUs' | 'agentOffsetUs'>): SessionShift {
  if (s.gpsOffsetUs !== null) {
    return { session: s.session, bootShiftUs: s.gpsOffsetUs, agentShiftUs: s.agentOffsetUs === null ? 0 : s.gpsOffsetUs - s.agentOffsetUs, basis: 'gps' };
  }
  if (s.agentOffsetUs !== null) return { session: s.session, bootShiftUs: s.agentOffsetUs, agentShiftUs: 0, basis: 'agent' };
  return { session: s.session, bootShiftUs: 0, agentShiftUs: 0, basis: 'none' };
}

/** Aligned µs of one row. */
export function alignedUs(source: TimeSource, rawUs: number, shift: SessionShift | undefined): number {
  if (source === 'gps' || !shift) return rawUs;
  return rawUs + (source === 'boot' ? shift.bootShiftUs : shift.agentShiftUs);
}

/** Where an absolute time on the agent's clock lands on the aligned axis, and why. */
export interface AgentTimeAlignment {
  us: number;
  shiftUs: number;
  /** The boot session whose receive times it falls in (or nearest); null when the dataset has none with a clock. */
  session: number | null;
  /** What the aligned time is: the vehicle's GPS time, or the agent's clock (no GPS time in that session). */
  clock: 'gps' | 'agent';
}

/**
 * An absolute time on the agent's clock (an annotation such as LINK_LOSS, stamped like the frames'
 * receive times) on the aligned axis: shifted like an `agent` row of the session whose receive-time
 * range holds it, else of the session nearest in receive time. Sessions with GPS time win ties.
 */
export function alignAgentTimeDetail(us: number, sessions: readonly BootSession[]): AgentTimeAlignment {
  let best: BootSession | undefined;
  let bestDistance = Infinity;
  for (const s of sessions) {
    if (s.agentOffsetUs === null) continue;
    const distance = us < s.firstReceivedUs ? s.firstReceivedUs - us : us > s.lastReceivedUs ? us - s.lastReceivedUs : 0;
    const better = distance < bestDistance || (distance === bestDistance && best !== undefined && best.gpsOffsetUs === null && s.gpsOffsetUs !== null);
    if (better) {
      best = s;
      bestDistance = distance;
    }
  }
  if (!best) return { us, shiftUs: 0, session: null, clock: 'agent' };
  const shift = sessionShift(best);
  return { us: us + shift.agentShiftUs, shiftUs: shift.agentShiftUs, session: best.session, clock: shift.basis === 'gps' ? 'gps' : 'agent' };
}

export function alignAgentTime(us: number, sessions: readonly BootSession[]): number {
  return alignAgentTimeDetail(us, sessions).us;
}
