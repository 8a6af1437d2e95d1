// Synthetic MAVLink flights for tests (`@sortie/contracts/testing`): the cases the shared captures do not
// hold, built frame by frame with real CRCs. An ArduSub dive with a BlueOS companion computer beside the
// autopilot, and a PX4 quadrotor flying a mission. Each frame knows when it was sent (µs from the flight's
// start); `rawCapture` writes them as a serial link carries them, without timestamps.
import { buildFrame, concat, FIXTURE_CRC_EXTRA } from './frames.fixture.ts';

export interface SyntheticFrame {
  /** When the sender sent it, µs from the flight's first frame. */
  atUs: number;
  sysid: number;
  compid: number;
  msgid: number;
  bytes: Uint8Array;
}

export interface HeartbeatFields {
  customMode: number;
  /** MAV_TYPE */
  type: number;
  /** MAV_AUTOPILOT */
  autopilot: number;
  baseMode: number;
  systemStatus?: number;
}

/** HEARTBEAT's payload in wire order: custom_mode, type, autopilot, base_mode, system_status, mavlink_version. */
export function heartbeatPayload(hb: HeartbeatFields): Uint8Array {
  const p = new Uint8Array(9);
  const v = new DataView(p.buffer);
  v.setUint32(0, hb.customMode >>> 0, true);
  p.set([hb.type, hb.autopilot, hb.baseMode, hb.systemStatus ?? 4, 3], 4);
  return p;
}

/** ATTITUDE's payload: time_boot_ms, roll, pitch, yaw (rad), then the three rates. */
export function attitudePayload(timeBootMs: number, roll: number, pitch: number, yaw: number): Uint8Array {
  const p = new Uint8Array(28);
  const v = new DataView(p.buffer);
  v.setUint32(0, timeBootMs, true);
  [roll, pitch, yaw, 0, 0, 0].forEach((x, i) => v.setFloat32(4 + i * 4, x, true));
  return p;
}

/** SYSTEM_TIME's payload: time_unix_usec (0: no GPS time), time_boot_ms. */
export function systemTimePayload(timeBootMs: number, timeUnixUsec = 0n): Uint8Array {
  const p = new Uint8Array(12);
  const v = new DataView(p.buffer);
  v.setBigUint64(0, timeUnixUsec, true);
  v.setUint32(8, timeBootMs, true);
  return p;
}

/** Frames of several components in the order they were sent, each component counting its own seq. */
class Flight {
  readonly frames: SyntheticFrame[] = [];
  readonly #seq = new Map<number, number>();
  add(atUs: number, sysid: number, compid: number, msgid: number, payload: Uint8Array): void {
    const key = sysid * 256 + compid;
    const seq = this.#seq.get(key) ?? 0;
    this.#seq.set(key, (seq + 1) & 0xff);
    this.frames.push({ atUs, sysid, compid, msgid, bytes: buildFrame({ msgid, payload, crcExtra: FIXTURE_CRC_EXTRA[msgid]!, seq, sysid, compid }) });
  }
  sorted(): SyntheticFrame[] {
    return this.frames.sort((a, b) => a.atUs - b.atUs);
  }
}

/** ArduSub's MANUAL (Mode::Number 19), armed: custom mode enabled, manual input, armed. */
export const ARDUSUB_MANUAL_ARMED: HeartbeatFields = { type: 12, autopilot: 3, baseMode: 0b1100_0001, customMode: 19 };
/** BlueOS's companion computer: MAV_TYPE_ONBOARD_CONTROLLER, MAV_AUTOPILOT_INVALID, mode 0, the armed bit set. */
export const BLUEOS_COMPANION: HeartbeatFields = { type: 18, autopilot: 8, baseMode: 0b1000_0000, customMode: 0 };
/** PX4 in a mission: main mode AUTO (4), sub mode MISSION (4); custom mode, stabilized, guided, auto, armed. */
export const PX4_MISSION_ARMED: HeartbeatFields = { type: 2, autopilot: 12, baseMode: 0b1001_1101, customMode: (4 << 24) | (4 << 16) };

/**
 * An ArduSub dive of `seconds`: the autopilot (1/1, booted 600 s before) sends ATTITUDE at 10 Hz and
 * HEARTBEAT at 1 Hz (in MANUAL, armed, unless `autopilot` says otherwise for a second of the dive); the
 * companion computer (1/194, up for 2.5 hours) sends its HEARTBEAT and SYSTEM_TIME at 1 Hz, half a second
 * after the autopilot's.
 */
export function ardusubDiveWithCompanion(seconds = 20, autopilot: (second: number) => HeartbeatFields = () => ARDUSUB_MANUAL_ARMED): SyntheticFrame[] {
  const flight = new Flight();
  for (let tick = 0; tick < seconds * 10; tick++) {
    const atUs = tick * 100_000;
    flight.add(atUs, 1, 1, 30, attitudePayload(600_000 + tick * 100, 0.05 * Math.sin(tick / 10), 0.02, 1.2));
    if (tick % 10 === 0) flight.add(atUs + 50_000, 1, 1, 0, heartbeatPayload(autopilot(tick / 10)));
    if (tick % 10 === 5) {
      flight.add(atUs + 10_000, 1, 194, 0, heartbeatPayload(BLUEOS_COMPANION));
      flight.add(atUs + 20_000, 1, 194, 2, systemTimePayload(9_000_000 + tick * 100));
    }
  }
  return flight.sorted();
}

/** A PX4 quadrotor flying a mission for `seconds`: ATTITUDE at 50 Hz on a boot clock 3.5 hours in, HEARTBEAT at 1 Hz. */
export function px4Mission(seconds = 10): SyntheticFrame[] {
  const flight = new Flight();
  for (let tick = 0; tick < seconds * 50; tick++) {
    const atUs = tick * 20_000;
    flight.add(atUs, 1, 1, 30, attitudePayload(12_658_196 + tick * 20, 0.1 * Math.sin(tick / 25), 0.05, 1.5));
    if (tick % 50 === 13) flight.add(atUs + 500, 1, 1, 0, heartbeatPayload(PX4_MISSION_ARMED));
  }
  return flight.sorted();
}

/** The frames as a serial link carries them: bytes only, no timestamps (a `.bin` capture). */
export function rawCapture(frames: readonly SyntheticFrame[]): Uint8Array {
  return concat(...frames.map((f) => f.bytes));
}
