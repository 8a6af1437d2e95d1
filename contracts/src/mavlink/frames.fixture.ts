// Test support (`@sortie/contracts/testing`): the CRC_EXTRA of every message id with a known definition in
// the shared captures (values from the MAVLink XML as mavgen computes them, kept apart from dialect.ts so
// that the framing tests do not load node-mavlink and the dialect is checked against values it did not
// produce) and a frame builder. The synthetic flights build their frames with it, so it sits below both
// them and mavlink.fixture.ts, which re-exports it.

import { mavlinkChecksum } from './crc.ts';
import type { CrcExtraLookup } from './framer.ts';

export const FIXTURE_CRC_EXTRA: Readonly<Record<number, number>> = {
  0: 50, // HEARTBEAT
  1: 124, // SYS_STATUS
  2: 137, // SYSTEM_TIME
  4: 237, // PING
  22: 220, // PARAM_VALUE
  24: 24, // GPS_RAW_INT
  26: 170, // SCALED_IMU
  27: 144, // RAW_IMU
  29: 115, // SCALED_PRESSURE
  30: 39, // ATTITUDE
  31: 246, // ATTITUDE_QUATERNION
  32: 185, // LOCAL_POSITION_NED
  33: 104, // GLOBAL_POSITION_INT
  35: 244, // RC_CHANNELS_RAW
  36: 222, // SERVO_OUTPUT_RAW
  39: 254, // MISSION_ITEM
  42: 28, // MISSION_CURRENT
  44: 221, // MISSION_COUNT
  46: 11, // MISSION_ITEM_REACHED
  47: 153, // MISSION_ACK
  62: 183, // NAV_CONTROLLER_OUTPUT
  65: 118, // RC_CHANNELS
  73: 38, // MISSION_ITEM_INT
  74: 20, // VFR_HUD
  77: 143, // COMMAND_ACK
  87: 150, // POSITION_TARGET_GLOBAL_INT
  105: 93, // HIGHRES_IMU
  111: 34, // TIMESYNC
  116: 76, // SCALED_IMU2
  125: 203, // POWER_STATUS
  129: 46, // SCALED_IMU3
  136: 1, // TERRAIN_REPORT
  140: 181, // ACTUATOR_CONTROL_TARGET
  141: 47, // ALTITUDE
  147: 154, // BATTERY_STATUS
  148: 178, // AUTOPILOT_VERSION
  150: 134, // SENSOR_OFFSETS
  152: 208, // MEMINFO
  163: 127, // AHRS
  164: 154, // SIMSTATE
  165: 21, // HWSTATUS
  168: 1, // WIND
  174: 167, // AIRSPEED_AUTOCAL
  178: 47, // AHRS2
  182: 229, // AHRS3
  193: 71, // EKF_STATUS_REPORT
  230: 163, // ESTIMATOR_STATUS
  241: 90, // VIBRATION
  242: 104, // HOME_POSITION
  245: 130, // EXTENDED_SYS_STATE
  253: 83, // STATUSTEXT
  331: 91, // ODOMETRY
};

export const fixtureCrcExtra: CrcExtraLookup = (msgid) => FIXTURE_CRC_EXTRA[msgid];

export interface FrameSpec {
  version?: 1 | 2;
  msgid: number;
  payload: Uint8Array;
  crcExtra: number;
  seq?: number;
  sysid?: number;
  compid?: number;
  incompatFlags?: number;
  /** Appended after the CRC; the caller sets incompatFlags accordingly. */
  signature?: Uint8Array;
}

/** A frame with a valid CRC for `crcExtra` (pass a wrong one to get a frame that fails its CRC). */
export function buildFrame(spec: FrameSpec): Uint8Array {
  const { msgid, payload, crcExtra, seq = 0, sysid = 1, compid = 1 } = spec;
  const v2 = (spec.version ?? 2) === 2;
  const header = v2
    ? [0xfd, payload.length, spec.incompatFlags ?? 0, 0, seq, sysid, compid, msgid & 0xff, (msgid >> 8) & 0xff, msgid >> 16]
    : [0xfe, payload.length, seq, sysid, compid, msgid];
  const signature = spec.signature ?? new Uint8Array(0);
  const frame = new Uint8Array(header.length + payload.length + 2 + signature.length);
  frame.set(header);
  frame.set(payload, header.length);
  const crcOffset = header.length + payload.length;
  const crc = mavlinkChecksum(frame, 0, crcOffset, crcExtra);
  frame[crcOffset] = crc & 0xff;
  frame[crcOffset + 1] = crc >> 8;
  frame.set(signature, crcOffset + 2);
  return frame;
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
