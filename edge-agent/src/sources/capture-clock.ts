// The clock of a raw capture (the bytes of a serial link, no timestamps): the messages' own boot time.
// Stamping every frame with the moment the agent read it squeezes a whole flight into however long reading
// the file takes (a 10 s PX4 stream into 0.14 s, its HEARTBEATs all at one instant, every silence gone).
// Most messages carry the time since their sender booted (frameBootTime: time_boot_ms, time_usec …), so the
// capture keeps its own clock: each frame is placed at its boot time moved onto the capture's axis, and a
// frame without one (HEARTBEAT, SYS_STATUS, …) at the time reached so far. The agent adds when the replay
// began, and paces the replay by it as it paces a tlog by its recorded time.
//
// Components keep separate clocks (a companion computer's uptime is not the autopilot's): each is placed
// on the capture's axis where it is first heard and moves on by its own boot time from there. The capture's
// time is the furthest any component reached and never goes back, so frames come out in order. A boot
// clock that jumps back is a reboot only when it stays back: more than a second behind for three frames in
// a row (the server's reboot rule asks the same of a boot session); a single stray frame moves nothing.

/** A jump back smaller than this is frames sampled slightly out of order, not a new clock. */
const BACK_TOLERANCE_US = 1_000_000;
/** Frames in a row that must agree with a jump back before the component's clock restarts there. */
const CONFIRMING_FRAMES = 3;

interface ComponentClock {
  /** Capture time minus the component's boot time. */
  offsetUs: number;
  lastBootUs: number;
  /** A jump back under confirmation: the offset it would take and the frames that agreed so far. */
  candidate?: { offsetUs: number; lastBootUs: number; frames: number };
}

export class CaptureClock {
  /** µs since the capture's first frame: the furthest any component's clock has reached. */
  #nowUs = 0;
  readonly #components = new Map<number, ComponentClock>();

  /** The capture time reached so far, µs from its first frame. */
  get nowUs(): number {
    return this.#nowUs;
  }

  /**
   * The capture time of the next frame of component `key` (e.g. sysid × 256 + compid), in µs from the
   * capture's first frame, given the boot time it carries (undefined when it carries none).
   */
  advance(key: number, bootUs: number | undefined): number {
    if (bootUs === undefined) return this.#nowUs;
    const clock = this.#components.get(key);
    if (!clock) {
      this.#components.set(key, { offsetUs: this.#nowUs - bootUs, lastBootUs: bootUs });
      return this.#nowUs;
    }
    if (bootUs >= clock.lastBootUs - BACK_TOLERANCE_US) {
      clock.candidate = undefined;
      clock.lastBootUs = Math.max(clock.lastBootUs, bootUs);
      this.#nowUs = Math.max(this.#nowUs, bootUs + clock.offsetUs);
      return this.#nowUs;
    }
    // Behind the component's clock: a reboot, or a stray. Held at the time reached until three frames agree.
    const candidate = clock.candidate;
    if (candidate && bootUs >= candidate.lastBootUs - BACK_TOLERANCE_US) {
      candidate.frames++;
      candidate.lastBootUs = Math.max(candidate.lastBootUs, bootUs);
      if (candidate.frames >= CONFIRMING_FRAMES) {
        this.#components.set(key, { offsetUs: candidate.offsetUs, lastBootUs: candidate.lastBootUs });
        this.#nowUs = Math.max(this.#nowUs, candidate.lastBootUs + candidate.offsetUs);
      }
    } else {
      clock.candidate = { offsetUs: this.#nowUs - bootUs, lastBootUs: bootUs, frames: 1 };
    }
    return this.#nowUs;
  }
}
