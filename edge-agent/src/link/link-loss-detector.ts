// Vehicle link loss: a watched system that sends nothing for longer than the threshold has lost its
// link (MAVProxy declares it after 5 s of silence; QGroundControl after 3.5 s without HEARTBEAT).
//
// Pure: time comes only from the caller, in µs, so the same logic runs on the agent clock for a live
// link and on the recording's clock for a replay (a gap in a recording is an outage at any replay
// speed; a fast replay of a gapless file is none). Only frames from the vehicle feed it: the uplink
// to the cloud is a different link, and frames spooled while the cloud is away are no outage.
//
// Exactly one LINK_LOSS per outage: a lost system is not reported again until a frame regains it,
// which reports LINK_REGAINED with the length of the silence. A gap seen only when the next frame
// arrives (nobody ticked in between, as in a fast replay) reports both at once.

export interface LinkLossEvent {
  readonly type: 'LINK_LOSS';
  readonly sysid: number;
  /** Time of the last frame before the silence: when the outage began. */
  readonly lastFrameUs: number;
  /** When the silence passed the threshold (lastFrameUs + threshold). */
  readonly detectedAtUs: number;
  readonly thresholdUs: number;
}

export interface LinkRegainedEvent {
  readonly type: 'LINK_REGAINED';
  readonly sysid: number;
  readonly lastFrameUs: number;
  /** Time of the first frame after the silence. */
  readonly regainedAtUs: number;
  /** regainedAtUs - lastFrameUs. */
  readonly outageUs: number;
}

export type LinkEvent = LinkLossEvent | LinkRegainedEvent;

export interface SystemLinkState {
  readonly sysid: number;
  readonly state: 'up' | 'lost';
  readonly lastFrameUs: number;
}

interface Watched {
  state: 'up' | 'lost';
  lastFrameUs: number;
}

export class LinkLossDetector {
  readonly thresholdUs: number;
  readonly #systems = new Map<number, Watched>();

  constructor(options: { thresholdUs: number }) {
    if (!(options.thresholdUs > 0)) throw new RangeError(`link loss threshold must be > 0, got ${options.thresholdUs}`);
    this.thresholdUs = options.thresholdUs;
  }

  /**
   * Starts watching a system from `atUs` (the caller decides what makes a system a vehicle, e.g. a
   * HEARTBEAT that is not from a ground station). Watching an already watched system changes nothing.
   */
  watch(sysid: number, atUs: number): void {
    if (!this.#systems.has(sysid)) this.#systems.set(sysid, { state: 'up', lastFrameUs: atUs });
  }

  isWatched(sysid: number): boolean {
    return this.#systems.has(sysid);
  }

  /** A frame from `sysid` arrived at `atUs`. Unwatched systems are ignored. */
  frame(sysid: number, atUs: number): LinkEvent[] {
    const s = this.#systems.get(sysid);
    if (!s) return [];
    const last = s.lastFrameUs;
    // A recording's clock may step back; the silence is measured from the latest frame seen.
    if (atUs > last) s.lastFrameUs = atUs;
    if (s.state === 'lost') {
      s.state = 'up';
      return [regained(sysid, last, atUs)];
    }
    if (atUs - last > this.thresholdUs) {
      return [this.#loss(sysid, last), regained(sysid, last, atUs)];
    }
    return [];
  }

  /** Declares every watched system silent for longer than the threshold at `nowUs` lost. */
  tick(nowUs: number): LinkEvent[] {
    const events: LinkEvent[] = [];
    for (const [sysid, s] of this.#systems) {
      if (s.state === 'up' && nowUs - s.lastFrameUs > this.thresholdUs) {
        s.state = 'lost';
        events.push(this.#loss(sysid, s.lastFrameUs));
      }
    }
    return events.sort((a, b) => a.sysid - b.sysid);
  }

  systems(): SystemLinkState[] {
    return [...this.#systems]
      .map(([sysid, s]) => ({ sysid, state: s.state, lastFrameUs: s.lastFrameUs }))
      .sort((a, b) => a.sysid - b.sysid);
  }

  #loss(sysid: number, lastFrameUs: number): LinkLossEvent {
    return { type: 'LINK_LOSS', sysid, lastFrameUs, detectedAtUs: lastFrameUs + this.thresholdUs, thresholdUs: this.thresholdUs };
  }
}

function regained(sysid: number, lastFrameUs: number, regainedAtUs: number): LinkRegainedEvent {
  return { type: 'LINK_REGAINED', sysid, lastFrameUs, regainedAtUs, outageUs: regainedAtUs - lastFrameUs };
}
