/**
 * Boot sessions of a narrow dataset: which run of the vehicle's boot clock a frame belongs to, and the
 * offsets read-time alignment needs. Pure: the writer loads the sessions, feeds the batch's frames in
 * frame_seq order and stores what changed (narrow_boot_sessions), all under the dataset's row lock.
 *
 * Rules (docs/decisions/0006-narrow-mavlink.md):
 *  - Each MAVLink component (compid) of the dataset's system keeps its own sessions: a companion
 *    computer or a gimbal boots on its own clock, and interleaving its uptime with the autopilot's
 *    must not look like a reboot on every frame.
 *  - Only the component's boot clock counts: the sample clocks of its frames (time_boot_ms, a
 *    boot-scale time_usec; the contracts' time-field catalogue keeps event times such as
 *    HOME_POSITION.time_usec out of it). A component's first frame opens its first session.
 *  - A reboot is a backward jump that *stays back*: an observation more than REBOOT_BACKWARDS_US
 *    behind every one of the last REBOOT_CONFIRMATIONS accepted observations opens a candidate, and
 *    the candidate becomes a session only when REBOOT_CONFIRMATIONS observations in a row (the jump
 *    included) stay that far back. An observation back above the line dismisses the candidate: its
 *    frames were strays of the current session. So no single field of a single message opens a
 *    session, and the decision falls at a fixed position in the frame_seq order, whatever the batch
 *    split: sessions are numbered from 1 in the order of those decision points.
 *  - Frames of a candidate are stored under the current session; a confirmation that arrives in a
 *    later batch re-labels them (relabels()). Their offsets are kept apart until the candidate is
 *    decided, so a dismissed candidate leaves the same offsets as if it had been seen in one batch.
 *  - Only frames newer than the component's newest frame move the clock on. An older frame (sent
 *    again, or a gap filled late) joins the session whose frame_seq range holds it and changes no
 *    boundary, so redelivery never splits or merges sessions.
 *  - Offsets are order-independent merges, so any delivery order yields the same values:
 *      gps   = time_unix_usec − boot time of the SYSTEM_TIME pair with the lowest frame_seq;
 *      agent = min(agent receive time − boot time): the least-delayed frame bounds the offset best.
 */

/** MAVProxy treats a 30 s backwards jump of boot time as a reboot. */
export const REBOOT_BACKWARDS_US = 30_000_000;

/** Observations of the boot clock that must stay back (the jump included) before a reboot is declared. */
export const REBOOT_CONFIRMATIONS = 3;

/** What alignment needs of a run of frames; merged the same way whatever the order. */
export interface ClockOffsets {
  /** Unix − boot time (µs) from SYSTEM_TIME with a GPS fix; null until the vehicle has GPS time. */
  gpsOffsetUs: number | null;
  gpsOffsetFrameSeq: number | null;
  /** min(receive − boot) in µs over the boot-timed frames; null while there are none. */
  agentOffsetUs: number | null;
  /** Range of agent receive times (µs). */
  firstReceivedUs: number;
  lastReceivedUs: number;
}

/** A backward jump of the boot clock waiting to be confirmed or dismissed. */
export interface RebootCandidate extends ClockOffsets {
  /** The frame that jumped back: the first frame of the session, if confirmed. */
  firstFrameSeq: number;
  /** Observations must stay below this (µs) to confirm. */
  lineUs: number;
  /** Boot times (µs) of the candidate's observations so far, in frame_seq order. */
  observed: number[];
  /** The current session's newest frame before the jump. */
  priorLastFrameSeq: number;
}

/** The component's boot clock as the rule needs it; kept on its newest session between batches. */
export interface ClockState {
  /** Boot times (µs) of the last accepted observations, newest last (at most REBOOT_CONFIRMATIONS). */
  recent: number[];
  candidate: RebootCandidate | null;
}

export interface BootSession extends ClockOffsets {
  /** `boot_session` of the rows; unique within the dataset, numbered from 1 in decision order. */
  session: number;
  compid: number;
  /** The frame that opened the session. */
  firstFrameSeq: number;
  /** The newest frame of the component seen while this was its newest session. */
  lastFrameSeq: number;
  /** Boot time (µs) of the newest accepted boot-clock observation; null while the session has none. */
  lastBootUs: number | null;
  /** On the component's newest session only: its boot clock state; null on the others. */
  clock: ClockState | null;
}

/** What a frame tells about clocks. */
export interface FrameClock {
  frameSeq: number;
  compid: number;
  /** Agent receive time, µs since the epoch. */
  receivedUs: number;
  /** Vehicle boot time, µs (a sample clock of the component's boot clock); undefined when absent. */
  bootUs?: number;
  /** time_unix_usec − boot time of a SYSTEM_TIME frame whose unix time is set (GPS time). */
  gpsOffsetUs?: number;
}

/** Rows stored under `from` at or after `fromFrameSeq` belong to `to` (a reboot confirmed a batch later). */
export interface Relabel {
  from: number;
  to: number;
  fromFrameSeq: number;
}

/**
 * A deep copy of a stored session (the class changes its copies, never the caller's). Field by field:
 * structuredClone, on every batch's sessions, was a fortieth of the ingest server's CPU.
 */
function copySession(s: BootSession): BootSession {
  const clock = s.clock && {
    recent: [...s.clock.recent],
    candidate: s.clock.candidate && { ...s.clock.candidate, observed: [...s.clock.candidate.observed] },
  };
  return { ...s, clock };
}

export class BootSessions {
  readonly #byCompid = new Map<number, BootSession[]>();
  readonly #changed = new Set<BootSession>();
  readonly #relabels: Relabel[] = [];
  #next = 1;

  /** `sessions`: every session of the dataset, as stored. */
  constructor(sessions: readonly BootSession[]) {
    const sorted = [...sessions].sort((a, b) => a.session - b.session);
    for (const stored of sorted) {
      const copy = copySession(stored);
      let list = this.#byCompid.get(copy.compid);
      if (!list) this.#byCompid.set(copy.compid, (list = []));
      list.push(copy);
      this.#next = Math.max(this.#next, copy.session + 1);
    }
    for (const list of this.#byCompid.values()) list.sort((a, b) => a.firstFrameSeq - b.firstFrameSeq);
  }

  /**
   * Feed one frame; frames must come in frame_seq order within one call sequence. Returns the session
   * its rows are stored under now (sessionOf gives the final answer once the batch is fed).
   */
  assign(frame: FrameClock): number {
    let list = this.#byCompid.get(frame.compid);
    if (!list) this.#byCompid.set(frame.compid, (list = []));
    const current = list[list.length - 1];
    if (!current) {
      const opened = this.#open(frame.compid, frame.frameSeq, offsetsOf(frame));
      opened.clock = { recent: frame.bootUs === undefined ? [] : [frame.bootUs], candidate: null };
      if (frame.bootUs !== undefined) opened.lastBootUs = frame.bootUs;
      list.push(opened);
      return opened.session;
    }
    this.#changed.add(current);
    if (frame.frameSeq <= current.lastFrameSeq) {
      // Older than the component's newest frame: joins by frame_seq range, moves no boundary.
      const candidate = current.clock?.candidate;
      if (candidate && frame.frameSeq >= candidate.firstFrameSeq) mergeFrame(candidate, frame);
      else {
        const target = sessionHolding(list, frame.frameSeq);
        if (target === list[0] && frame.frameSeq < target.firstFrameSeq) target.firstFrameSeq = frame.frameSeq;
        mergeFrame(target, frame);
        this.#changed.add(target);
      }
      return this.sessionOf(frame.compid, frame.frameSeq);
    }
    const clock = (current.clock ??= { recent: current.lastBootUs === null ? [] : [current.lastBootUs], candidate: null });
    const boot = frame.bootUs;
    if (clock.candidate && boot !== undefined && boot >= clock.candidate.lineUs) this.#dismiss(current, clock);
    const candidate = clock.candidate;
    if (candidate) {
      mergeFrame(candidate, frame);
      if (boot !== undefined) {
        candidate.observed.push(boot);
        if (candidate.observed.length >= REBOOT_CONFIRMATIONS) {
          current.lastFrameSeq = frame.frameSeq;
          this.#confirm(list, current, candidate);
          return list[list.length - 1]!.session;
        }
      }
    } else if (boot !== undefined && clock.recent.length > 0 && boot < Math.min(...clock.recent) - REBOOT_BACKWARDS_US) {
      clock.candidate = {
        ...offsetsOf(frame),
        firstFrameSeq: frame.frameSeq,
        lineUs: Math.min(...clock.recent) - REBOOT_BACKWARDS_US,
        observed: [boot],
        priorLastFrameSeq: current.lastFrameSeq,
      };
      if (REBOOT_CONFIRMATIONS <= 1) {
        current.lastFrameSeq = frame.frameSeq;
        this.#confirm(list, current, clock.candidate);
        return list[list.length - 1]!.session;
      }
    } else {
      if (boot !== undefined) {
        accept(clock, boot);
        current.lastBootUs = boot;
      }
      mergeFrame(current, frame);
    }
    current.lastFrameSeq = frame.frameSeq;
    return current.session;
  }

  /** The session rows of `frameSeq` of `compid` belong to: the newest session opened at or before it. */
  sessionOf(compid: number, frameSeq: number): number {
    const list = this.#byCompid.get(compid);
    if (!list || list.length === 0) throw new Error(`no session of component ${compid}`);
    return sessionHolding(list, frameSeq).session;
  }

  /** Sessions opened or updated since construction. */
  changed(): BootSession[] {
    return [...this.#changed];
  }

  /** Stored rows that a confirmation moved to another session. */
  relabels(): Relabel[] {
    return this.#relabels;
  }

  /** Every session, by number. */
  all(): BootSession[] {
    return [...this.#byCompid.values()].flat().sort((a, b) => a.session - b.session);
  }

  #open(compid: number, firstFrameSeq: number, offsets: ClockOffsets): BootSession {
    const session: BootSession = {
      session: this.#next++,
      compid,
      firstFrameSeq,
      lastFrameSeq: firstFrameSeq,
      lastBootUs: null,
      ...offsets,
      clock: null,
    };
    this.#changed.add(session);
    return session;
  }

  /** The candidate's frames were strays of the current session after all. */
  #dismiss(current: BootSession, clock: ClockState): void {
    const candidate = clock.candidate!;
    mergeOffsets(current, candidate);
    clock.candidate = null;
  }

  #confirm(list: BootSession[], current: BootSession, candidate: RebootCandidate): void {
    const opened = this.#open(current.compid, candidate.firstFrameSeq, {
      gpsOffsetUs: candidate.gpsOffsetUs,
      gpsOffsetFrameSeq: candidate.gpsOffsetFrameSeq,
      agentOffsetUs: candidate.agentOffsetUs,
      firstReceivedUs: candidate.firstReceivedUs,
      lastReceivedUs: candidate.lastReceivedUs,
    });
    opened.lastFrameSeq = current.lastFrameSeq;
    opened.lastBootUs = candidate.observed[candidate.observed.length - 1]!;
    opened.clock = { recent: candidate.observed.slice(-REBOOT_CONFIRMATIONS), candidate: null };
    current.lastFrameSeq = candidate.priorLastFrameSeq;
    current.clock = null;
    list.push(opened);
    // Rows of the candidate's frames already written (earlier batches) are under the old session.
    this.#relabels.push({ from: current.session, to: opened.session, fromFrameSeq: candidate.firstFrameSeq });
  }
}

/**
 * The last session in `list` opened at or before `frameSeq` (the first one when none is). Searched from
 * the end: a frame almost always belongs to its component's newest session, so this is one comparison
 * per frame however many sessions the dataset has (a forward scan made an imported log that rebooted a
 * thousand times quadratic).
 */
function sessionHolding(list: readonly BootSession[], frameSeq: number): BootSession {
  for (let i = list.length - 1; i >= 0; i--) if (list[i]!.firstFrameSeq <= frameSeq) return list[i]!;
  return list[0]!;
}

function accept(clock: ClockState, boot: number): void {
  clock.recent.push(boot);
  if (clock.recent.length > REBOOT_CONFIRMATIONS) clock.recent.shift();
}

function offsetsOf(frame: FrameClock): ClockOffsets {
  return {
    gpsOffsetUs: frame.gpsOffsetUs ?? null,
    gpsOffsetFrameSeq: frame.gpsOffsetUs === undefined ? null : frame.frameSeq,
    agentOffsetUs: frame.bootUs === undefined ? null : frame.receivedUs - frame.bootUs,
    firstReceivedUs: frame.receivedUs,
    lastReceivedUs: frame.receivedUs,
  };
}

/** mergeOffsets(into, offsetsOf(frame)) without the intermediate object: it runs once per frame. */
function mergeFrame(into: ClockOffsets, frame: FrameClock): void {
  const received = frame.receivedUs;
  if (received < into.firstReceivedUs) into.firstReceivedUs = received;
  if (received > into.lastReceivedUs) into.lastReceivedUs = received;
  if (frame.bootUs !== undefined) {
    const agent = received - frame.bootUs;
    if (into.agentOffsetUs === null || agent < into.agentOffsetUs) into.agentOffsetUs = agent;
  }
  if (frame.gpsOffsetUs !== undefined && (into.gpsOffsetFrameSeq === null || frame.frameSeq < into.gpsOffsetFrameSeq)) {
    into.gpsOffsetUs = frame.gpsOffsetUs;
    into.gpsOffsetFrameSeq = frame.frameSeq;
  }
}

function mergeOffsets(into: ClockOffsets, from: ClockOffsets): void {
  if (from.firstReceivedUs < into.firstReceivedUs) into.firstReceivedUs = from.firstReceivedUs;
  if (from.lastReceivedUs > into.lastReceivedUs) into.lastReceivedUs = from.lastReceivedUs;
  if (from.agentOffsetUs !== null && (into.agentOffsetUs === null || from.agentOffsetUs < into.agentOffsetUs)) into.agentOffsetUs = from.agentOffsetUs;
  if (from.gpsOffsetFrameSeq !== null && (into.gpsOffsetFrameSeq === null || from.gpsOffsetFrameSeq < into.gpsOffsetFrameSeq)) {
    into.gpsOffsetUs = from.gpsOffsetUs;
    into.gpsOffsetFrameSeq = from.gpsOffsetFrameSeq;
  }
}
