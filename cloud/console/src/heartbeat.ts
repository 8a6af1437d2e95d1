// Flight mode and armed state from HEARTBEAT (common.xml): base_mode bit 7 is MAV_MODE_FLAG_SAFETY_ARMED;
// custom_mode is the autopilot's own mode number, named here for ArduPilot's vehicle kinds by MAV_TYPE.

const SAFETY_ARMED = 128;

const COPTER: Record<number, string> = {
  0: 'STABILIZE', 1: 'ACRO', 2: 'ALT_HOLD', 3: 'AUTO', 4: 'GUIDED', 5: 'LOITER', 6: 'RTL', 7: 'CIRCLE', 9: 'LAND',
  11: 'DRIFT', 13: 'SPORT', 14: 'FLIP', 15: 'AUTOTUNE', 16: 'POSHOLD', 17: 'BRAKE', 18: 'THROW', 19: 'AVOID_ADSB',
  20: 'GUIDED_NOGPS', 21: 'SMART_RTL', 22: 'FLOWHOLD', 23: 'FOLLOW', 24: 'ZIGZAG', 25: 'SYSTEMID', 26: 'AUTOROTATE', 27: 'AUTO_RTL',
};
const PLANE: Record<number, string> = {
  0: 'MANUAL', 1: 'CIRCLE', 2: 'STABILIZE', 3: 'TRAINING', 4: 'ACRO', 5: 'FBWA', 6: 'FBWB', 7: 'CRUISE', 8: 'AUTOTUNE',
  10: 'AUTO', 11: 'RTL', 12: 'LOITER', 13: 'TAKEOFF', 14: 'AVOID_ADSB', 15: 'GUIDED', 17: 'QSTABILIZE', 18: 'QHOVER',
  19: 'QLOITER', 20: 'QLAND', 21: 'QRTL', 22: 'QAUTOTUNE', 23: 'QACRO', 24: 'THERMAL', 25: 'LOITER_ALT_QLAND',
};
const ROVER: Record<number, string> = {
  0: 'MANUAL', 1: 'ACRO', 3: 'STEERING', 4: 'HOLD', 5: 'LOITER', 6: 'FOLLOW', 7: 'SIMPLE', 10: 'AUTO', 11: 'RTL', 12: 'SMART_RTL', 15: 'GUIDED',
};
// MAV_TYPE: 1 fixed wing, 2 quadrotor, 3 coaxial, 4 helicopter, 10 ground rover, 11 surface boat,
// 13 hexarotor, 14 octorotor, 15 tricopter, 19-25 VTOLs (which run ArduPlane).
const PLANE_TYPES = new Set([1, 19, 20, 21, 22, 23, 24, 25]);
const ROVER_TYPES = new Set([10, 11]);

export function modeName(mavType: number, customMode: number): string {
  const table = PLANE_TYPES.has(mavType) ? PLANE : ROVER_TYPES.has(mavType) ? ROVER : COPTER;
  return table[customMode] ?? `mode ${customMode}`;
}

export function isArmed(baseMode: number): boolean {
  return (baseMode & SAFETY_ARMED) !== 0;
}

export interface StateSpan {
  from: number;
  to: number;
  mode: string;
  armed: boolean;
}

/**
 * Runs of equal (mode, armed) from HEARTBEAT samples on one time axis; each span ends where the next
 * begins, the last at `end`. Heartbeats from a ground station (MAV_TYPE 6) are not the vehicle's and
 * should be filtered before (the dataset is one system id, so they rarely appear).
 */
export function stateSpans(times: ArrayLike<number>, types: ArrayLike<number>, baseModes: ArrayLike<number>, customModes: ArrayLike<number>, end: number): StateSpan[] {
  const spans: StateSpan[] = [];
  const n = Math.min(times.length, types.length, baseModes.length, customModes.length);
  for (let i = 0; i < n; i++) {
    const mode = modeName(types[i]!, customModes[i]!);
    const armed = isArmed(baseModes[i]!);
    const last = spans.at(-1);
    if (last && last.mode === mode && last.armed === armed) continue;
    if (last) last.to = times[i]!;
    spans.push({ from: times[i]!, to: end, mode, armed });
  }
  return spans;
}
