// The vehicle's flight mode and armed state from HEARTBEAT, named as the autopilot's own ground stations
// name them. One module for the console's mode band, `sortie modes` and the MODE events of an MCAP export,
// so a flight reads the same everywhere. Pure (no node-mavlink): the console bundles it.
//
// Which HEARTBEAT counts. Every MAVLink component sends HEARTBEAT, and a vehicle carries several: its
// autopilot, and a companion computer (BlueOS sends one as component 194 with custom_mode 0 and the armed
// bit set), gimbals, cameras, a ground station relayed into the stream. The spec (minimal.xml) says how a
// receiver tells them apart: `autopilot` is MAV_AUTOPILOT_INVALID for every component that is not a flight
// controller, and `type` is "for a flight controller component the vehicle type, for other components the
// component type (camera, gimbal, …); used in preference to component id". So a HEARTBEAT is the vehicle's
// autopilot's when its `autopilot` is not INVALID and its `type` is a vehicle, not a component type
// (NOT_A_VEHICLE). The component id decides nothing: it is a convention (MAV_COMP_ID_AUTOPILOT1 = 1) that the
// stored rows do not carry to Query, and the fields above say more.
//
// Naming. ArduPilot's custom_mode is a per-vehicle mode number (Mode::Number in each vehicle's mode.h, the
// COPTER_MODE/PLANE_MODE/ROVER_MODE/SUB_MODE/TRACKER_MODE enums of ardupilotmega.xml); the vehicle is chosen
// by MAV_TYPE, as pymavlink's mode_mapping_bynumber does, and named by ArduPilot's identifiers (what
// MAVProxy, Mission Planner and the vehicle's own messages print). PX4 packs a main mode into byte 2 and a
// sub mode into byte 3 of custom_mode (px4_custom_mode.h); they are named as QGroundControl's PX4 plugin
// names them ("Mission", "Position", "Hold"). Anything else is `mode N`: a number no table knows.

/** MAV_TYPE values this module names (minimal.xml). */
export const MAV_TYPE = {
  GENERIC: 0,
  FIXED_WING: 1,
  QUADROTOR: 2,
  COAXIAL: 3,
  HELICOPTER: 4,
  ANTENNA_TRACKER: 5,
  GCS: 6,
  AIRSHIP: 7,
  GROUND_ROVER: 10,
  SURFACE_BOAT: 11,
  SUBMARINE: 12,
  HEXAROTOR: 13,
  OCTOROTOR: 14,
  TRICOPTER: 15,
  ONBOARD_CONTROLLER: 18,
  VTOL_TAILSITTER_DUOROTOR: 19,
  VTOL_TAILSITTER_QUADROTOR: 20,
  VTOL_TILTROTOR: 21,
  VTOL_FIXEDROTOR: 22,
  VTOL_TAILSITTER: 23,
  VTOL_TILTWING: 24,
  VTOL_RESERVED5: 25,
  GIMBAL: 26,
  ADSB: 27,
  DODECAROTOR: 29,
  CAMERA: 30,
  CHARGING_STATION: 31,
  FLARM: 32,
  SERVO: 33,
  ODID: 34,
  DECAROTOR: 35,
  BATTERY: 36,
  PARACHUTE: 37,
  LOG: 38,
  OSD: 39,
  IMU: 40,
  GPS: 41,
  WINCH: 42,
  GENERIC_MULTIROTOR: 43,
  ILLUMINATOR: 44,
  GRIPPER: 48,
  RADIO: 49,
} as const;

/** MAV_AUTOPILOT values this module names (minimal.xml). */
export const MAV_AUTOPILOT = { GENERIC: 0, ARDUPILOTMEGA: 3, INVALID: 8, PX4: 12 } as const;

/** MAV_MODE_FLAG bits of base_mode (minimal.xml). */
export const MAV_MODE_FLAG = { CUSTOM_MODE_ENABLED: 1, SAFETY_ARMED: 128 } as const;

/**
 * MAV_TYPEs that name a component rather than a vehicle: a HEARTBEAT with one of them is never the
 * vehicle's autopilot, whatever its `autopilot` field says (some gimbals and companions fill it in).
 */
const NOT_A_VEHICLE: ReadonlySet<number> = new Set([
  MAV_TYPE.GCS,
  MAV_TYPE.ONBOARD_CONTROLLER,
  MAV_TYPE.GIMBAL,
  MAV_TYPE.ADSB,
  MAV_TYPE.CAMERA,
  MAV_TYPE.CHARGING_STATION,
  MAV_TYPE.FLARM,
  MAV_TYPE.SERVO,
  MAV_TYPE.ODID,
  MAV_TYPE.BATTERY,
  MAV_TYPE.PARACHUTE,
  MAV_TYPE.LOG,
  MAV_TYPE.OSD,
  MAV_TYPE.IMU,
  MAV_TYPE.GPS,
  MAV_TYPE.WINCH,
  MAV_TYPE.ILLUMINATOR,
  MAV_TYPE.GRIPPER,
  MAV_TYPE.RADIO,
]);

/** Whether a HEARTBEAT with these `type` and `autopilot` fields is the vehicle's own autopilot (see the top of this file). */
export function isAutopilotHeartbeat(type: number, autopilot: number): boolean {
  return autopilot !== MAV_AUTOPILOT.INVALID && !NOT_A_VEHICLE.has(type);
}

export function isArmed(baseMode: number): boolean {
  return (baseMode & MAV_MODE_FLAG.SAFETY_ARMED) !== 0;
}

// ArduPilot, per vehicle: Mode::Number of ArduCopter/mode.h, ArduPlane/mode.h, Rover/mode.h, ArduSub/mode.h,
// Blimp/mode.h and AntennaTracker/mode.h (values checked against ardupilotmega.xml's enums in the test).
const COPTER: Readonly<Record<number, string>> = {
  0: 'STABILIZE', 1: 'ACRO', 2: 'ALT_HOLD', 3: 'AUTO', 4: 'GUIDED', 5: 'LOITER', 6: 'RTL', 7: 'CIRCLE', 9: 'LAND',
  11: 'DRIFT', 13: 'SPORT', 14: 'FLIP', 15: 'AUTOTUNE', 16: 'POSHOLD', 17: 'BRAKE', 18: 'THROW', 19: 'AVOID_ADSB',
  20: 'GUIDED_NOGPS', 21: 'SMART_RTL', 22: 'FLOWHOLD', 23: 'FOLLOW', 24: 'ZIGZAG', 25: 'SYSTEMID', 26: 'AUTOROTATE',
  27: 'AUTO_RTL', 28: 'TURTLE',
};
// FLY_BY_WIRE_A/B are FBWA/FBWB in ArduPlane's own mode names and in every ground station.
const PLANE: Readonly<Record<number, string>> = {
  0: 'MANUAL', 1: 'CIRCLE', 2: 'STABILIZE', 3: 'TRAINING', 4: 'ACRO', 5: 'FBWA', 6: 'FBWB', 7: 'CRUISE', 8: 'AUTOTUNE',
  10: 'AUTO', 11: 'RTL', 12: 'LOITER', 13: 'TAKEOFF', 14: 'AVOID_ADSB', 15: 'GUIDED', 16: 'INITIALISING',
  17: 'QSTABILIZE', 18: 'QHOVER', 19: 'QLOITER', 20: 'QLAND', 21: 'QRTL', 22: 'QAUTOTUNE', 23: 'QACRO', 24: 'THERMAL',
  25: 'LOITER_ALT_QLAND', 26: 'AUTOLAND',
};
const ROVER: Readonly<Record<number, string>> = {
  0: 'MANUAL', 1: 'ACRO', 3: 'STEERING', 4: 'HOLD', 5: 'LOITER', 6: 'FOLLOW', 7: 'SIMPLE', 8: 'DOCK', 9: 'CIRCLE',
  10: 'AUTO', 11: 'RTL', 12: 'SMART_RTL', 15: 'GUIDED', 16: 'INITIALISING',
};
const SUB: Readonly<Record<number, string>> = {
  0: 'STABILIZE', 1: 'ACRO', 2: 'ALT_HOLD', 3: 'AUTO', 4: 'GUIDED', 7: 'CIRCLE', 9: 'SURFACE', 16: 'POSHOLD', 19: 'MANUAL',
  20: 'MOTOR_DETECT', 21: 'SURFTRAK',
};
const BLIMP: Readonly<Record<number, string>> = { 0: 'LAND', 1: 'MANUAL', 2: 'VELOCITY', 3: 'LOITER', 4: 'RTL' };
const TRACKER: Readonly<Record<number, string>> = { 0: 'MANUAL', 1: 'STOP', 2: 'SCAN', 3: 'SERVOTEST', 4: 'GUIDED', 10: 'AUTO', 16: 'INITIALISING' };

export type ArduPilotVehicle = 'ArduCopter' | 'ArduPlane' | 'Rover' | 'ArduSub' | 'Blimp' | 'AntennaTracker';

const ARDUPILOT_TABLES: Readonly<Record<ArduPilotVehicle, Readonly<Record<number, string>>>> = {
  ArduCopter: COPTER,
  ArduPlane: PLANE,
  Rover: ROVER,
  ArduSub: SUB,
  Blimp: BLIMP,
  AntennaTracker: TRACKER,
};

/**
 * Which ArduPilot firmware sends this MAV_TYPE: what each reports as its frame type (Copter's
 * get_frame_mav_type, QuadPlane's VTOL types, Rover's boat frame, …). ArduCopter reports MAV_TYPE_GENERIC
 * for a frame class it has no type for, so GENERIC is Copter's too. Undefined for a type no ArduPilot
 * vehicle reports.
 */
export function ardupilotVehicle(mavType: number): ArduPilotVehicle | undefined {
  switch (mavType) {
    case MAV_TYPE.GENERIC:
    case MAV_TYPE.QUADROTOR:
    case MAV_TYPE.COAXIAL:
    case MAV_TYPE.HELICOPTER:
    case MAV_TYPE.HEXAROTOR:
    case MAV_TYPE.OCTOROTOR:
    case MAV_TYPE.TRICOPTER:
    case MAV_TYPE.DODECAROTOR:
    case MAV_TYPE.DECAROTOR:
    case MAV_TYPE.GENERIC_MULTIROTOR:
      return 'ArduCopter';
    case MAV_TYPE.FIXED_WING:
    case MAV_TYPE.VTOL_TAILSITTER_DUOROTOR:
    case MAV_TYPE.VTOL_TAILSITTER_QUADROTOR:
    case MAV_TYPE.VTOL_TILTROTOR:
    case MAV_TYPE.VTOL_FIXEDROTOR:
    case MAV_TYPE.VTOL_TAILSITTER:
    case MAV_TYPE.VTOL_TILTWING:
    case MAV_TYPE.VTOL_RESERVED5:
      return 'ArduPlane';
    case MAV_TYPE.GROUND_ROVER:
    case MAV_TYPE.SURFACE_BOAT:
      return 'Rover';
    case MAV_TYPE.SUBMARINE:
      return 'ArduSub';
    case MAV_TYPE.AIRSHIP:
      return 'Blimp';
    case MAV_TYPE.ANTENNA_TRACKER:
      return 'AntennaTracker';
    default:
      return undefined;
  }
}

// PX4: main mode (custom_mode byte 2) and, for AUTO and POSCTL, sub mode (byte 3), px4_custom_mode.h;
// named by QGroundControl's PX4FirmwarePlugin. Termination, VTOL Takeoff and the external modes are in
// PX4's enums but not in QGroundControl's list: named here in its style.
const PX4_MAIN = { MANUAL: 1, ALTCTL: 2, POSCTL: 3, AUTO: 4, ACRO: 5, OFFBOARD: 6, STABILIZED: 7, RATTITUDE: 8, SIMPLE: 9, TERMINATION: 10 } as const;
const PX4_MAIN_ONLY: Readonly<Record<number, string>> = {
  [PX4_MAIN.MANUAL]: 'Manual',
  [PX4_MAIN.ALTCTL]: 'Altitude',
  [PX4_MAIN.ACRO]: 'Acro',
  [PX4_MAIN.OFFBOARD]: 'Offboard',
  [PX4_MAIN.STABILIZED]: 'Stabilized',
  [PX4_MAIN.RATTITUDE]: 'Rattitude',
  [PX4_MAIN.SIMPLE]: 'Simple',
  [PX4_MAIN.TERMINATION]: 'Termination',
};
const PX4_POSCTL: Readonly<Record<number, string>> = { 0: 'Position', 1: 'Orbit' };
const PX4_AUTO: Readonly<Record<number, string>> = {
  1: 'Ready',
  2: 'Takeoff',
  3: 'Hold',
  4: 'Mission',
  5: 'Return',
  6: 'Land',
  7: 'Return to Groundstation',
  8: 'Follow Me',
  9: 'Precision Land',
  10: 'VTOL Takeoff',
  ...Object.fromEntries(Array.from({ length: 8 }, (_, i) => [11 + i, `External ${i + 1}`])),
};

function px4ModeName(customMode: number): string | undefined {
  const main = (customMode >>> 16) & 0xff;
  const sub = (customMode >>> 24) & 0xff;
  if (main === PX4_MAIN.AUTO) return PX4_AUTO[sub];
  if (main === PX4_MAIN.POSCTL) return PX4_POSCTL[sub];
  return sub === 0 ? PX4_MAIN_ONLY[main] : undefined;
}

export interface HeartbeatMode {
  /** MAV_TYPE */
  type: number;
  /** MAV_AUTOPILOT */
  autopilot: number;
  baseMode: number;
  customMode: number;
}

/** The mode's name as the autopilot's ground stations show it; `mode N` (custom_mode) when no table knows it. */
export function flightModeName(hb: HeartbeatMode): string {
  const customMode = hb.customMode >>> 0;
  const unknown = `mode ${customMode}`;
  // Without this flag custom_mode carries nothing (both autopilots always set it).
  if ((hb.baseMode & MAV_MODE_FLAG.CUSTOM_MODE_ENABLED) === 0) return unknown;
  if (hb.autopilot === MAV_AUTOPILOT.PX4) return px4ModeName(customMode) ?? unknown;
  if (hb.autopilot === MAV_AUTOPILOT.ARDUPILOTMEGA) {
    const vehicle = ardupilotVehicle(hb.type);
    return (vehicle && ARDUPILOT_TABLES[vehicle][customMode]) ?? unknown;
  }
  return unknown;
}

/** The autopilot firmware a vehicle HEARTBEAT says it runs, for lists and headers: ArduSub, PX4, … */
export function autopilotName(type: number, autopilot: number): string {
  if (autopilot === MAV_AUTOPILOT.ARDUPILOTMEGA) return ardupilotVehicle(type) ?? 'ArduPilot';
  if (autopilot === MAV_AUTOPILOT.PX4) return 'PX4';
  return `autopilot ${autopilot}`;
}

/** A run of one mode and armed state: from its first HEARTBEAT to the next change (or the end given). */
export interface ModeSpan {
  from: number;
  to: number;
  mode: string;
  armed: boolean;
}

/** HEARTBEAT fields as columns on one time axis, one entry per HEARTBEAT in time order (as Query returns signals). */
export interface HeartbeatColumns {
  times: ArrayLike<number>;
  type: ArrayLike<number>;
  autopilot: ArrayLike<number>;
  baseMode: ArrayLike<number>;
  customMode: ArrayLike<number>;
}

/**
 * Runs of equal (mode, armed) over the vehicle's autopilot HEARTBEATs: any other component's are skipped,
 * so a companion computer's heartbeat between two of the autopilot's changes nothing. Each span ends where
 * the next begins, the last at `end`.
 */
export function modeSpans(hb: HeartbeatColumns, end: number): ModeSpan[] {
  const spans: ModeSpan[] = [];
  const n = Math.min(hb.times.length, hb.type.length, hb.autopilot.length, hb.baseMode.length, hb.customMode.length);
  for (let i = 0; i < n; i++) {
    const type = hb.type[i]!;
    const autopilot = hb.autopilot[i]!;
    if (!isAutopilotHeartbeat(type, autopilot)) continue;
    const mode = flightModeName({ type, autopilot, baseMode: hb.baseMode[i]!, customMode: hb.customMode[i]! });
    const armed = isArmed(hb.baseMode[i]!);
    const last = spans.at(-1);
    if (last && last.mode === mode && last.armed === armed) continue;
    if (last) last.to = hb.times[i]!;
    spans.push({ from: hb.times[i]!, to: Math.max(end, hb.times[i]!), mode, armed });
  }
  return spans;
}

// --- Onboard logs ---------------------------------------------------------------------------------
// A vehicle's own log says its mode without MAVLink: PX4's ULog as vehicle_status.nav_state (PX4's
// internal navigation state, not HEARTBEAT's custom_mode), ArduPilot's DataFlash as the MODE message's
// mode number, the same per-vehicle number HEARTBEAT carries, with the vehicle told by the log's firmware
// line or VER message rather than by MAV_TYPE.

/**
 * vehicle_status.msg's NAVIGATION_STATE_* constants (PX4-Autopilot msg/vehicle_status.msg), each with the
 * name QGroundControl shows for the mode PX4 reports that state as over MAVLink, so one flight reads the
 * same from its log and from its telemetry; where PX4 reports several states as one mode (the failure
 * landings as AUTO_LAND) a state keeps its own words. A value is named only if every version of the file
 * consulted (2014's, the v1.11 era's with RATTITUDE at 16, today's with EXTERNAL1-8 at 23-30) gives it one
 * meaning or leaves it free: 6 (AUTO_RCRECOVER, later POSITION_SLOW), 8 (AUTO_LANDENGFAIL, later
 * ALTITUDE_CRUISE) and 11 (LAND in 2014, later free) had two, and a log does not say which it means.
 */
export const PX4_NAV_STATES: Readonly<Record<number, readonly [constant: string, name: string]>> = {
  0: ['MANUAL', 'Manual'],
  1: ['ALTCTL', 'Altitude'],
  2: ['POSCTL', 'Position'],
  3: ['AUTO_MISSION', 'Mission'],
  4: ['AUTO_LOITER', 'Hold'],
  5: ['AUTO_RTL', 'Return'],
  7: ['AUTO_RTGS', 'Return to Groundstation'],
  9: ['AUTO_LANDGPSFAIL', 'Land (GPS failure)'],
  10: ['ACRO', 'Acro'],
  12: ['DESCEND', 'Descend'],
  13: ['TERMINATION', 'Termination'],
  14: ['OFFBOARD', 'Offboard'],
  15: ['STAB', 'Stabilized'],
  16: ['RATTITUDE', 'Rattitude'],
  17: ['AUTO_TAKEOFF', 'Takeoff'],
  18: ['AUTO_LAND', 'Land'],
  19: ['AUTO_FOLLOW_TARGET', 'Follow Me'],
  20: ['AUTO_PRECLAND', 'Precision Land'],
  21: ['ORBIT', 'Orbit'],
  22: ['AUTO_VTOL_TAKEOFF', 'VTOL Takeoff'],
  ...Object.fromEntries(Array.from({ length: 8 }, (_, i) => [23 + i, [`EXTERNAL${i + 1}`, `External ${i + 1}`] as const])),
};

/** vehicle_status.arming_state when armed: ARMING_STATE_ARMED, 2 in every version of vehicle_status.msg. */
export const PX4_ARMING_STATE_ARMED = 2;

/** A ULog's vehicle_status.nav_state as a ground station names the mode; `nav_state N` when no table knows it. */
export function px4NavStateName(navState: number): string {
  return PX4_NAV_STATES[navState]?.[1] ?? `nav_state ${navState}`;
}

/**
 * ArduPilot's APM_BUILD_DIRECTORY values (libraries/AP_Vehicle/AP_Vehicle_Type.h), as a DataFlash VER
 * message's BU field carries them. A helicopter build (Heli) runs ArduCopter's modes.
 */
const APM_BUILD: Readonly<Record<number, ArduPilotVehicle>> = { 1: 'Rover', 2: 'ArduCopter', 3: 'ArduPlane', 4: 'AntennaTracker', 7: 'ArduSub', 12: 'Blimp', 13: 'ArduCopter' };

/**
 * Each vehicle's THISFIRMWARE prefix, which ArduPilot logs as its first MSG and in VER's FWS:
 * `ArduSub V4.1.0 (89639005)`, `ArduRover V4.2.0`, and before 4.0 `APM:Copter V3.5.5`.
 */
const FIRMWARE_PREFIXES: ReadonlyArray<readonly [RegExp, ArduPilotVehicle]> = [
  [/^(ArduCopter|APM:Copter)\b/, 'ArduCopter'],
  [/^(ArduPlane|APM:Plane)\b/, 'ArduPlane'],
  [/^(ArduRover|APM:Rover|Rover)\b/, 'Rover'],
  [/^ArduSub\b/, 'ArduSub'],
  [/^(AntennaTracker|APM:AntennaTracker)\b/, 'AntennaTracker'],
  [/^Blimp\b/, 'Blimp'],
];

/** The ArduPilot vehicle a DataFlash log is from, by its metadata: VER's build type, else the firmware line. */
export function ardupilotVehicleOfLog(metadata: Readonly<Record<string, string | number>>): ArduPilotVehicle | undefined {
  const build = APM_BUILD[Number(metadata['ver.BU'])];
  if (build) return build;
  for (const line of [metadata['firmware'], metadata['ver.FWS']]) {
    if (typeof line !== 'string') continue;
    const found = FIRMWARE_PREFIXES.find(([prefix]) => prefix.test(line.trim()));
    if (found) return found[1];
  }
  return undefined;
}

/** A DataFlash MODE number as the vehicle names it; `mode N` for a vehicle not known or a number its table lacks. */
export function ardupilotModeName(vehicle: ArduPilotVehicle | undefined, mode: number): string {
  return (vehicle && ARDUPILOT_TABLES[vehicle][mode]) ?? `mode ${mode}`;
}
