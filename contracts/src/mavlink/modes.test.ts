import { ardupilotmega, minimal } from 'node-mavlink';
import { describe, expect, it } from 'vitest';
import {
  ardupilotModeName,
  ardupilotVehicle,
  ardupilotVehicleOfLog,
  autopilotName,
  flightModeName,
  isAutopilotHeartbeat,
  MAV_AUTOPILOT,
  MAV_TYPE,
  modeSpans,
  PX4_NAV_STATES,
  px4NavStateName,
} from './modes.ts';

const ARDUPILOT = MAV_AUTOPILOT.ARDUPILOTMEGA;
const PX4 = MAV_AUTOPILOT.PX4;
/** base_mode of a vehicle in a custom mode, disarmed (MAV_MODE_FLAG_CUSTOM_MODE_ENABLED). */
const CUSTOM = 1;
const name = (type: number, autopilot: number, customMode: number, baseMode = CUSTOM) => flightModeName({ type, autopilot, baseMode, customMode });
/** PX4's custom_mode: main mode in byte 2, sub mode in byte 3 (px4_custom_mode.h). */
const px4 = (main: number, sub = 0) => ((sub << 24) | (main << 16)) >>> 0;

describe('flight mode names', () => {
  it('name every ArduPilot vehicle by its own table, chosen by MAV_TYPE (custom mode 19 is MANUAL on a Sub, AVOID_ADSB on a Copter)', () => {
    expect(name(MAV_TYPE.SUBMARINE, ARDUPILOT, 19)).toBe('MANUAL');
    expect(name(MAV_TYPE.QUADROTOR, ARDUPILOT, 19)).toBe('AVOID_ADSB');
    expect(name(MAV_TYPE.FIXED_WING, ARDUPILOT, 19)).toBe('QLOITER');
    expect(name(MAV_TYPE.VTOL_TILTROTOR, ARDUPILOT, 5)).toBe('FBWA');
    expect(name(MAV_TYPE.GROUND_ROVER, ARDUPILOT, 4)).toBe('HOLD');
    expect(name(MAV_TYPE.SURFACE_BOAT, ARDUPILOT, 8)).toBe('DOCK');
    expect(name(MAV_TYPE.SUBMARINE, ARDUPILOT, 21)).toBe('SURFTRAK');
    expect(name(MAV_TYPE.SUBMARINE, ARDUPILOT, 9)).toBe('SURFACE');
    expect(name(MAV_TYPE.AIRSHIP, ARDUPILOT, 0)).toBe('LAND');
    expect(name(MAV_TYPE.AIRSHIP, ARDUPILOT, 1)).toBe('MANUAL');
    expect(name(MAV_TYPE.ANTENNA_TRACKER, ARDUPILOT, 2)).toBe('SCAN');
    expect(name(MAV_TYPE.HELICOPTER, ARDUPILOT, 6)).toBe('RTL');
    // ArduCopter reports MAV_TYPE_GENERIC for a frame class it has no type for.
    expect(name(MAV_TYPE.GENERIC, ARDUPILOT, 0)).toBe('STABILIZE');
  });

  it("agree with ardupilotmega.xml's mode enums for every value each defines", () => {
    const enums: Array<[number, Record<string, string | number>]> = [
      [MAV_TYPE.QUADROTOR, ardupilotmega.CopterMode as unknown as Record<string, string | number>],
      [MAV_TYPE.FIXED_WING, ardupilotmega.PlaneMode as unknown as Record<string, string | number>],
      [MAV_TYPE.GROUND_ROVER, ardupilotmega.RoverMode as unknown as Record<string, string | number>],
      [MAV_TYPE.SUBMARINE, ardupilotmega.SubMode as unknown as Record<string, string | number>],
      [MAV_TYPE.ANTENNA_TRACKER, ardupilotmega.TrackerMode as unknown as Record<string, string | number>],
    ];
    // The dialect spells a few as ArduPilot's code does not (FLY_BY_WIRE_A is FBWA, INITIALIZING is INITIALISING).
    const spelling = (s: string) => s.replace(/^FLY_BY_WIRE_/, 'FBW').replace('INITIALIZING', 'INITIALISING').replace('MOTORDETECT', 'MOTOR_DETECT').replace('SERVO_TEST', 'SERVOTEST');
    for (const [type, values] of enums) {
      const numbers = Object.values(values).filter((v): v is number => typeof v === 'number');
      expect(numbers.length).toBeGreaterThan(5);
      for (const n of numbers) expect(name(type, ARDUPILOT, n), `${type}/${n}`).toBe(spelling(values[n] as string));
    }
  });

  it('name PX4 modes from main and sub mode as QGroundControl does', () => {
    expect(name(MAV_TYPE.QUADROTOR, PX4, px4(4, 4))).toBe('Mission');
    expect(px4(4, 4)).toBe(67371008);
    // The value the issue saw on a PX4 stream: main AUTO, sub LOITER.
    expect(name(MAV_TYPE.QUADROTOR, PX4, 50593792)).toBe('Hold');
    expect(name(MAV_TYPE.FIXED_WING, PX4, px4(3))).toBe('Position');
    expect(name(MAV_TYPE.FIXED_WING, PX4, px4(3, 1))).toBe('Orbit');
    expect(name(MAV_TYPE.QUADROTOR, PX4, px4(1))).toBe('Manual');
    expect(name(MAV_TYPE.QUADROTOR, PX4, px4(2))).toBe('Altitude');
    expect(name(MAV_TYPE.QUADROTOR, PX4, px4(7))).toBe('Stabilized');
    expect(name(MAV_TYPE.QUADROTOR, PX4, px4(6))).toBe('Offboard');
    expect(name(MAV_TYPE.QUADROTOR, PX4, px4(4, 5))).toBe('Return');
    expect(name(MAV_TYPE.QUADROTOR, PX4, px4(4, 6))).toBe('Land');
    expect(name(MAV_TYPE.QUADROTOR, PX4, px4(4, 2))).toBe('Takeoff');
    expect(name(MAV_TYPE.QUADROTOR, PX4, px4(4, 9))).toBe('Precision Land');
    expect(name(MAV_TYPE.QUADROTOR, PX4, px4(4, 12))).toBe('External 2');
    // PX4 leaves the low 16 bits reserved; QGroundControl reads main and sub only.
    expect(name(MAV_TYPE.QUADROTOR, PX4, px4(4, 4) | 0x1234)).toBe('Mission');
    // The real PX4 capture's HEARTBEAT (px4-mixed-v1v2-junk.bin): custom_mode 65536, base_mode 65.
    expect(flightModeName({ type: MAV_TYPE.FIXED_WING, autopilot: PX4, baseMode: 65, customMode: 65536 })).toBe('Manual');
  });

  it('say "mode N" only for a value no table knows', () => {
    expect(name(MAV_TYPE.QUADROTOR, ARDUPILOT, 12)).toBe('mode 12');
    expect(name(MAV_TYPE.SUBMARINE, ARDUPILOT, 5)).toBe('mode 5');
    expect(name(MAV_TYPE.QUADROTOR, PX4, px4(4, 99))).toBe(`mode ${px4(4, 99)}`);
    expect(name(MAV_TYPE.QUADROTOR, PX4, px4(1, 1))).toBe(`mode ${px4(1, 1)}`);
    expect(name(MAV_TYPE.QUADROTOR, MAV_AUTOPILOT.GENERIC, 3)).toBe('mode 3');
    // No ArduPilot vehicle reports a kite.
    expect(name(17, ARDUPILOT, 0)).toBe('mode 0');
    // custom_mode means nothing unless base_mode says it is in use.
    expect(name(MAV_TYPE.SUBMARINE, ARDUPILOT, 19, 0x80)).toBe('mode 19');
  });

  it('choose the ArduPilot vehicle of every type an ArduPilot firmware reports, and none for component types', () => {
    expect(ardupilotVehicle(MAV_TYPE.VTOL_TAILSITTER_QUADROTOR)).toBe('ArduPlane');
    expect(ardupilotVehicle(MAV_TYPE.OCTOROTOR)).toBe('ArduCopter');
    expect(ardupilotVehicle(MAV_TYPE.DECAROTOR)).toBe('ArduCopter');
    expect(ardupilotVehicle(MAV_TYPE.SURFACE_BOAT)).toBe('Rover');
    expect(ardupilotVehicle(MAV_TYPE.SUBMARINE)).toBe('ArduSub');
    expect(ardupilotVehicle(MAV_TYPE.AIRSHIP)).toBe('Blimp');
    expect(ardupilotVehicle(MAV_TYPE.ANTENNA_TRACKER)).toBe('AntennaTracker');
    expect(ardupilotVehicle(MAV_TYPE.ONBOARD_CONTROLLER)).toBeUndefined();
    expect(autopilotName(MAV_TYPE.SUBMARINE, ARDUPILOT)).toBe('ArduSub');
    expect(autopilotName(MAV_TYPE.QUADROTOR, PX4)).toBe('PX4');
  });

  it('use the MAV_TYPE and MAV_AUTOPILOT numbers of minimal.xml', () => {
    for (const [key, value] of Object.entries(MAV_TYPE)) expect(minimal.MavType[key as keyof typeof minimal.MavType], key).toBe(value);
    for (const [key, value] of Object.entries(MAV_AUTOPILOT)) expect(minimal.MavAutopilot[key as keyof typeof minimal.MavAutopilot], key).toBe(value);
  });
});

describe('which HEARTBEAT is the vehicle autopilot', () => {
  it("counts a flight controller's and no companion, gimbal, camera or ground station", () => {
    expect(isAutopilotHeartbeat(MAV_TYPE.SUBMARINE, ARDUPILOT)).toBe(true);
    expect(isAutopilotHeartbeat(MAV_TYPE.QUADROTOR, PX4)).toBe(true);
    expect(isAutopilotHeartbeat(MAV_TYPE.ANTENNA_TRACKER, ARDUPILOT)).toBe(true);
    // BlueOS's companion: MAV_TYPE_ONBOARD_CONTROLLER, MAV_AUTOPILOT_INVALID.
    expect(isAutopilotHeartbeat(MAV_TYPE.ONBOARD_CONTROLLER, MAV_AUTOPILOT.INVALID)).toBe(false);
    expect(isAutopilotHeartbeat(MAV_TYPE.GCS, MAV_AUTOPILOT.INVALID)).toBe(false);
    // A component that fills in the autopilot field is still told apart by its type.
    expect(isAutopilotHeartbeat(MAV_TYPE.GIMBAL, ARDUPILOT)).toBe(false);
    expect(isAutopilotHeartbeat(MAV_TYPE.CAMERA, ARDUPILOT)).toBe(false);
    expect(isAutopilotHeartbeat(MAV_TYPE.ONBOARD_CONTROLLER, ARDUPILOT)).toBe(false);
    // A vehicle type without an autopilot is a component imitating one.
    expect(isAutopilotHeartbeat(MAV_TYPE.SUBMARINE, MAV_AUTOPILOT.INVALID)).toBe(false);
  });

  it("spans follow the autopilot's HEARTBEATs only: a companion's armed heartbeat between them changes nothing", () => {
    // An ArduSub dive: the autopilot (MANUAL, armed) and a companion (type 18, autopilot 8, mode 0, armed bit) interleaved.
    const times = [0, 0.4, 1, 1.4, 2, 2.4, 3];
    const spans = modeSpans(
      {
        times,
        type: [12, 18, 12, 18, 12, 18, 12],
        autopilot: [3, 8, 3, 8, 3, 8, 3],
        baseMode: [0x81, 0x80, 0x81, 0x80, 0x81, 0x80, 0x01],
        customMode: [19, 0, 19, 0, 19, 0, 19],
      },
      4,
    );
    expect(spans).toEqual([
      { from: 0, to: 3, mode: 'MANUAL', armed: true },
      { from: 3, to: 4, mode: 'MANUAL', armed: false },
    ]);
  });
});

describe("modes in a vehicle's own log", () => {
  it("name a ULog's nav_state by vehicle_status.msg's constants, as QGroundControl names the mode PX4 reports for it", () => {
    // The constants of today's vehicle_status.msg whose number never meant anything else.
    const current = { MANUAL: 0, ALTCTL: 1, POSCTL: 2, AUTO_MISSION: 3, AUTO_LOITER: 4, AUTO_RTL: 5, ACRO: 10, DESCEND: 12, TERMINATION: 13, OFFBOARD: 14, STAB: 15, AUTO_TAKEOFF: 17, AUTO_LAND: 18, AUTO_FOLLOW_TARGET: 19, AUTO_PRECLAND: 20, ORBIT: 21, AUTO_VTOL_TAKEOFF: 22, EXTERNAL1: 23, EXTERNAL8: 30 };
    for (const [constant, value] of Object.entries(current)) expect(PX4_NAV_STATES[value]?.[0], constant).toBe(constant);
    // The two fixtures' states: a v1.11 log in MANUAL, a v1.15 SITL flight through takeoff, hold and return.
    expect([0, 17, 4, 5].map(px4NavStateName)).toEqual(['Manual', 'Takeoff', 'Hold', 'Return']);
    // Named as the MAVLink band names the same flight's HEARTBEATs (main AUTO, sub LOITER is Hold).
    expect(px4NavStateName(4)).toBe(name(MAV_TYPE.QUADROTOR, PX4, px4(4, 3)));
    expect(px4NavStateName(3)).toBe(name(MAV_TYPE.QUADROTOR, PX4, px4(4, 4)));
    expect(px4NavStateName(2)).toBe(name(MAV_TYPE.QUADROTOR, PX4, px4(3)));
    expect(px4NavStateName(26)).toBe('External 4');
    // A number PX4 gave two meanings over time is not guessed.
    expect(px4NavStateName(6)).toBe('nav_state 6');
    expect(px4NavStateName(8)).toBe('nav_state 8');
    expect(px4NavStateName(11)).toBe('nav_state 11');
  });

  it("tell a DataFlash log's vehicle by VER's build type, else by its firmware line, and name MODE numbers by it", () => {
    expect(ardupilotVehicleOfLog({ firmware: 'ArduSub V4.1.0 (89639005)' })).toBe('ArduSub');
    expect(ardupilotVehicleOfLog({ firmware: 'ArduRover V4.2.0 (1a2b3c4d)' })).toBe('Rover');
    expect(ardupilotVehicleOfLog({ firmware: 'APM:Copter V3.5.5 (b1a9b4a4)' })).toBe('ArduCopter');
    expect(ardupilotVehicleOfLog({ firmware: 'ArduPlane V4.5.1 (5e8a9bc9)' })).toBe('ArduPlane');
    expect(ardupilotVehicleOfLog({ 'ver.FWS': 'Blimp V4.7.0-dev (abcdef01)' })).toBe('Blimp');
    expect(ardupilotVehicleOfLog({ 'ver.BU': 7, firmware: 'ArduCopter V4.5.0' })).toBe('ArduSub');
    // A helicopter build flies ArduCopter's modes.
    expect(ardupilotVehicleOfLog({ 'ver.BU': 13 })).toBe('ArduCopter');
    expect(ardupilotVehicleOfLog({ firmware: 'PX4 v1.14' })).toBeUndefined();
    expect(ardupilotModeName('ArduSub', 19)).toBe('MANUAL');
    expect(ardupilotModeName('ArduCopter', 19)).toBe('AVOID_ADSB');
    expect(ardupilotModeName(undefined, 19)).toBe('mode 19');
    expect(ardupilotModeName('ArduSub', 5)).toBe('mode 5');
  });
});
