/**
 * Boot sessions of a narrow dataset: which run of the vehicle's boot clock a frame belongs to, and the
 * offsets read-time alignment needs. Pure: the writer loads the sessions, feeds the batch's frames in
 * frame_seq order and stores what changed (narrow_boot_sessions), all under the dataset's row lock.
 *
 * Rules (docs/decisions/0006-narrow-mavlink.md):
 *  - Each MAVLink component (compid) of the dataset's system keeps its own sessions: a companion
 *    computer or a gimbal boots on its own clock, and interleaving its uptime with the autopilot's
 *    must not look like a reboot on every frame. Session numbers are unique within the dataset.
 *  - A component's first frame opens its first session. A frame whose boot time lies more than
 *    REBOOT_BACKWARDS_US behind the session's last boot time opens a new one (MAVProxy's rule: a 30 s
 *    backwards jump is a reboot; smaller ones are messages stamped slightly out of order).
 *  - Only frames newer than the component's newest frame move the clock on. An older frame (sent
 *    again, or delivered late by a second stream) joins the session whose frame_seq range holds it
 *    and changes no boundary, so redelivery never splits or merges sessions.
 *  - Offsets are order-independent merges, so any delivery order yields the same values:
 *      gps   = time_unix_usec − boot time of the SYSTEM_TIME pair with the lowest frame_seq;
 *      agent = min(agent receive time − boot time): the least-delayed frame bounds the offset best.
 */

/** MAVProxy treats a 30 s backwards jump of boot time as a reboot. */
export const REBOOT_BACKWARDS_US = 30_000_000;

export interface BootSession {
  /** `boot_session` of the rows; unique within the dataset, numbered from 1 in order of opening. */
  session: number;
  compid: number;
  /** The frame that opened the session. */
  firstFrameSeq: number;
  /** The newest frame that moved the session's clock on. */
  lastFrameSeq: number;
  /** Boot time (µs) of the newest boot-timed frame; null while the session has none. */
  lastBootUs: number | null;
  /** Unix − boot time (µs) from SYSTEM_TIME with a GPS fix; null until the vehicle has GPS time. */
  gpsOffsetUs: number | null;
  gpsOffsetFrameSeq: number | null;
  /** min(receive − boot) in µs over the session's boot-timed frames; null while it has none. */
  agentOffsetUs: number | null;
  /** Range of agent receive times (µs) of the session's frames. */
  firstReceivedUs: number;
  lastReceivedUs: number;
}

/** What a frame tells about clocks. */
export interface FrameClock {
  frameSeq: number;
  compid: number;
  /** Agent receive time, µs since the epoch. */
  receivedUs: number;
  /** Vehicle boot time, µs (time_boot_ms × 1000, or a boot-scale time_usec); undefined when absent. */
  bootUs?: number;
  /** time_unix_usec − boot time of a SYSTEM_TIME frame whose unix time is set (GPS time). */
  gpsOffsetUs?: number;
}

export class BootSessions {
  readonly #byCompid = new Map<number, BootSession[]>();
  readonly #changed = new Set<BootSession>();
  #next = 1;

  /** `sessions`: every session of the dataset, as stored. */
  constructor(sessions: readonly BootSession[]) {
    const sorted = [...sessions].sort((a, b) => a.session - b.session);
    for (const stored of sorted) {
      const copy = { ...stored };
      let list = this.#byCompid.get(copy.compid);
      if (!list) this.#byCompid.set(copy.compid, (list = []));
      list.push(copy);
      this.#next = Math.max(this.#next, copy.session + 1);
    }
  }

  /** The session of `frame`; frames must come in frame_seq order within one call sequence. */
  assign(frame: FrameClock): number {
    let list = this.#byCompid.get(frame.compid);
    if (!list) this.#byCompid.set(frame.compid, (list = []));
    let current = list[list.length - 1];
    let target: BootSession;
    if (!current || frame.frameSeq > current.lastFrameSeq) {
      const rebooted =
        current !== undefined &&
        frame.bootUs !== undefined &&
        current.lastBootUs !== null &&
        frame.bootUs < current.lastBootUs - REBOOT_BACKWARDS_US;
      if (!current || rebooted) {
        current = this.#open(frame);
        list.push(current);
      }
      current.lastFrameSeq = frame.frameSeq;
      if (frame.bootUs !== undefined) current.lastBootUs = frame.bootUs;
      target = current;
    } else {
      target = list[0]!;
      for (const s of list) if (s.firstFrameSeq <= frame.frameSeq) target = s;
    }
    mergeOffsets(target, frame);
    this.#changed.add(target);
    return target.session;
  }

  /** Sessions opened or updated since construction. */
  changed(): BootSession[] {
    return [...this.#changed];
  }

  /** Every session, by number. */
  all(): BootSession[] {
    return [...this.#byCompid.values()].flat().sort((a, b) => a.session - b.session);
  }

  #open(frame: FrameClock): BootSession {
    return {
      session: this.#next++,
      compid: frame.compid,
      firstFrameSeq: frame.frameSeq,
      lastFrameSeq: frame.frameSeq,
      lastBootUs: null,
      gpsOffsetUs: null,
      gpsOffsetFrameSeq: null,
      agentOffsetUs: null,
      firstReceivedUs: frame.receivedUs,
      lastReceivedUs: frame.receivedUs,
    };
  }
}

function mergeOffsets(session: BootSession, frame: FrameClock): void {
  if (frame.receivedUs < session.firstReceivedUs) session.firstReceivedUs = frame.receivedUs;
  if (frame.receivedUs > session.lastReceivedUs) session.lastReceivedUs = frame.receivedUs;
  if (frame.bootUs !== undefined) {
    const agent = frame.receivedUs - frame.bootUs;
    if (session.agentOffsetUs === null || agent < session.agentOffsetUs) session.agentOffsetUs = agent;
  }
  if (frame.gpsOffsetUs !== undefined && (session.gpsOffsetFrameSeq === null || frame.frameSeq < session.gpsOffsetFrameSeq)) {
    session.gpsOffsetUs = frame.gpsOffsetUs;
    session.gpsOffsetFrameSeq = frame.frameSeq;
  }
}
