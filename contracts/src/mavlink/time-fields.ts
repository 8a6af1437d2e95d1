// The time fields of the pinned dialect and what each one means for the clock of a message.
//
// MAVLink carries two kinds of time in its fields, and telling them apart is what keeps a flight on one
// timeline:
//  - a *sample clock*: when the sender took the message's values, on its own clock. `time_boot_ms` is
//    time since the sender booted; a 64-bit `time_usec` is either time since boot or Unix time, and the
//    spec tells receivers to judge by magnitude (UNIX_USEC_THRESHOLD). SYSTEM_TIME.time_unix_usec is the
//    vehicle's Unix (GPS) time.
//  - an *event time carried as data*: when something happened, stamped long before or after the message
//    was sent. PX4 fills HOME_POSITION.time_usec with the time home was set (6 s after boot in a flight
//    12,658 s into its boot); treating it as the message's clock moves that row 3.5 hours back and looks
//    like a reboot. Such fields are ordinary values of their signal, never a clock.
// Fields that only look like time (a wrapping 32-bit `time_usec`, another system's clock echoed back,
// durations, GPS week time) are data too. `timeFieldRole` answers for every field whose name says time;
// time-fields.test.ts fails when the dialect grows a time-like field this catalogue does not name, so a
// node-mavlink upgrade cannot slip a new clock (or a new event time) past it.

import { MAVLINK_REGISTRY } from './dialect.ts';

/** Above this a `time_usec` is Unix time, below it time since boot (10^15 µs: 31.7 years, or 2001-09-09). */
export const UNIX_USEC_THRESHOLD = 1_000_000_000_000_000n;

export type TimeFieldRole =
  /** Time since the sender booted: the component's boot clock. */
  | 'boot-clock'
  /** A sample clock in µs: boot time below UNIX_USEC_THRESHOLD, Unix time at or above it, 0 = not set. */
  | 'clock-by-magnitude'
  /** The vehicle's Unix (GPS) time; 0 = the vehicle has none yet. */
  | 'unix-clock'
  /** When something happened, carried as a value (not when the message's values were taken). */
  | 'event-time'
  /** Looks like a clock but is not one the sender's samples are on (wrapping, echoed, another system's, a duration). */
  | 'data';

/** Why each field that is not a plain sample clock is classified as it is (the decision record quotes this). */
const NOT_A_CLOCK: Readonly<Record<string, Readonly<Record<string, TimeFieldRole>>>> = {
  // Event times: when home / the GPS origin was set (PX4 sends the time it was set, again and again).
  HOME_POSITION: { time_usec: 'event-time' },
  SET_HOME_POSITION: { time_usec: 'event-time' },
  GPS_GLOBAL_ORIGIN: { time_usec: 'event-time' },
  SET_GPS_GLOBAL_ORIGIN: { time_usec: 'event-time' },
  // A ping carries the requester's time back to it: another system's clock.
  PING: { time_usec: 'data' },
  // uint32 µs: wraps after 71.6 minutes, so it cannot place a sample in a flight.
  SERVO_OUTPUT_RAW: { time_usec: 'data' },
  // Sent by an external vision / mocap system on its own clock, to the autopilot.
  GLOBAL_VISION_POSITION_ESTIMATE: { usec: 'data' },
  VISION_POSITION_ESTIMATE: { usec: 'data' },
  VISION_SPEED_ESTIMATE: { usec: 'data' },
  VICON_POSITION_ESTIMATE: { usec: 'data' },
  // Event times and durations named otherwise.
  FLIGHT_INFORMATION: { arming_time_utc: 'event-time', takeoff_time_utc: 'event-time', landing_time: 'event-time' },
  CAMERA_IMAGE_CAPTURED: { time_utc: 'event-time' },
  LOG_ENTRY: { time_utc: 'event-time' },
  FENCE_STATUS: { breach_time: 'event-time' },
  BUTTON_CHANGE: { last_change_ms: 'event-time' },
  GPS_RTK: { time_last_baseline_ms: 'event-time' },
  GPS2_RTK: { time_last_baseline_ms: 'event-time' },
  SETUP_SIGNING: { initial_timestamp: 'data' },
  COMPONENT_INFORMATION_BASIC: { time_manufacture_s: 'event-time' },
  UTM_GLOBAL_POSITION: { time: 'event-time' },
  FOLLOW_TARGET: { timestamp: 'data' },
  ISBD_LINK_STATUS: { timestamp: 'data' },
  HIGH_LATENCY2: { timestamp: 'data' },
  OPEN_DRONE_ID_LOCATION: { timestamp: 'data', timestamp_accuracy: 'data' },
  OPEN_DRONE_ID_AUTHENTICATION: { timestamp: 'data' },
  OPEN_DRONE_ID_SYSTEM: { timestamp: 'data' },
  OPEN_DRONE_ID_SYSTEM_UPDATE: { timestamp: 'data' },
  UAVIONIX_ADSB_OUT_DYNAMIC: { utcTime: 'data' },
  GPS_INPUT: { time_week: 'data', time_week_ms: 'data' },
  VISION_POSITION_DELTA: { time_delta_usec: 'data' },
  OPTICAL_FLOW_RAD: { integration_time_us: 'data', time_delta_distance_us: 'data' },
  HIL_OPTICAL_FLOW: { integration_time_us: 'data', time_delta_distance_us: 'data' },
  CAMERA_CAPTURE_STATUS: { recording_time_ms: 'data' },
  UAVCAN_NODE_STATUS: { uptime_sec: 'data' },
  UAVCAN_NODE_INFO: { uptime_sec: 'data' },
  ILLUMINATOR_STATUS: { uptime_ms: 'data' },
  BATTERY_STATUS: { time_remaining: 'data' },
  GENERATOR_STATUS: { runtime: 'data', time_until_maintenance: 'data' },
  GIMBAL_REPORT: { delta_time: 'data' },
  EFI_STATUS: { injection_time: 'data', spark_dwell_time: 'data' },
  COLLISION: { time_to_minimum_delta: 'data' },
  SERIAL_CONTROL: { timeout: 'data' },
};

/** A field name that says time; every such field of the dialect has a role (checked by the test). */
export const TIME_LIKE_FIELD = /time|stamp|usec|_ms$|epoch|boot|utc/i;

/**
 * The role of one field of one message (XML names, e.g. `HOME_POSITION`, `time_usec`); undefined for a
 * field whose name does not say time.
 */
export function timeFieldRole(message: string, field: string, type: string): TimeFieldRole | undefined {
  const listed = NOT_A_CLOCK[message]?.[field];
  if (listed) return listed;
  if (field === 'time_boot_ms' && type === 'uint32_t') return 'boot-clock';
  if (field === 'time_boot_us' && type === 'uint64_t') return 'boot-clock';
  if (field === 'time_usec' && type === 'uint64_t') return 'clock-by-magnitude';
  if (message === 'SYSTEM_TIME' && field === 'time_unix_usec') return 'unix-clock';
  return undefined;
}

/** The sample clocks of one message: the fields the decoder reads a message's time from. */
export interface MessageClocks {
  /** A `boot-clock` field in ms (time_boot_ms). */
  bootMs?: string;
  /** A `boot-clock` field in µs (time_boot_us). */
  bootUs?: string;
  /** A `clock-by-magnitude` field (time_usec). */
  usec?: string;
  /** The `unix-clock` field (SYSTEM_TIME.time_unix_usec). */
  unixUsec?: string;
}

/** Sample clocks of a message by name; empty when its values carry no time of their own (HEARTBEAT, HOME_POSITION, …). */
export function messageClocks(message: string): MessageClocks {
  return CLOCKS.get(message) ?? {};
}

const CLOCKS: ReadonlyMap<string, MessageClocks> = new Map(
  [...MAVLINK_REGISTRY.values()].map((clazz) => {
    const clocks: MessageClocks = {};
    for (const f of clazz.FIELDS) {
      const role = timeFieldRole(clazz.MSG_NAME, f.source, f.type);
      if (role === 'boot-clock') {
        if (f.source === 'time_boot_ms') clocks.bootMs = f.source;
        else clocks.bootUs = f.source;
      } else if (role === 'clock-by-magnitude') clocks.usec = f.source;
      else if (role === 'unix-clock') clocks.unixUsec = f.source;
    }
    return [clazz.MSG_NAME, clocks] as const;
  }),
);

/** Every time-like field of the dialect and its role (undefined = not catalogued); for the test and the decision record. */
export function timeFieldCatalogue(): Array<{ message: string; field: string; type: string; role: TimeFieldRole | undefined }> {
  const out = [];
  for (const clazz of MAVLINK_REGISTRY.values()) {
    for (const f of clazz.FIELDS) {
      if (TIME_LIKE_FIELD.test(f.source)) out.push({ message: clazz.MSG_NAME, field: f.source, type: f.type, role: timeFieldRole(clazz.MSG_NAME, f.source, f.type) });
    }
  }
  return out.sort((a, b) => a.message.localeCompare(b.message) || a.field.localeCompare(b.field));
}

/** Where a message's boot clock is in its payload, for reading it without decoding the message. */
interface BootClockField {
  /** `ATTITUDE.time_boot_ms`: what the agent names when it says what a file is paced by. */
  name: string;
  offset: number;
  /** µs per unit: 1000 for time_boot_ms, 1 for time_boot_us and time_usec. */
  scale: number;
  size: 4 | 8;
  /** Absent from MAVLink 1 frames. */
  extension: boolean;
}

// In the order the server reads them (narrow/decode.ts frameClocks): time_boot_ms, time_boot_us, time_usec.
const BOOT_CLOCK_FIELDS: ReadonlyMap<number, readonly BootClockField[]> = new Map(
  [...MAVLINK_REGISTRY.values()].flatMap((clazz) => {
    const clocks = messageClocks(clazz.MSG_NAME);
    const fields = [clocks.bootMs, clocks.bootUs, clocks.usec].flatMap((source) => {
      const f = source === undefined ? undefined : clazz.FIELDS.find((x) => x.source === source);
      if (!f) return [];
      return [{ name: `${clazz.MSG_NAME}.${f.source}`, offset: f.offset, scale: f.source === 'time_boot_ms' ? 1000 : 1, size: f.size === 8 ? 8 : 4, extension: f.extension } satisfies BootClockField];
    });
    return fields.length > 0 ? [[clazz.MSG_ID, fields] as const] : [];
  }),
);

const UNIX_USEC_THRESHOLD_NUMBER = Number(UNIX_USEC_THRESHOLD);

function readUintLE(payload: Uint8Array, offset: number, size: number): number {
  let value = 0;
  // Bytes past a truncated MAVLink 2 payload are zeros.
  for (let i = size - 1; i >= 0; i--) value = value * 256 + (payload[offset + i] ?? 0);
  return value;
}

/**
 * A frame's time since its sender booted, in µs, by the sample clocks of the catalogue (time_boot_ms, else
 * a non-zero time_boot_us, else a non-zero time_usec below UNIX_USEC_THRESHOLD), with the field it came
 * from; undefined for a frame that carries none (HEARTBEAT, an event time such as HOME_POSITION.time_usec,
 * Unix time, an unknown message id). What pacing a raw capture without timestamps rests on.
 */
export function frameBootTime(frame: { msgid: number; payload: Uint8Array; version?: 1 | 2 }): { us: number; field: string } | undefined {
  const fields = BOOT_CLOCK_FIELDS.get(frame.msgid);
  if (!fields) return undefined;
  for (const f of fields) {
    if (f.extension && frame.version === 1) continue;
    const raw = readUintLE(frame.payload, f.offset, f.size);
    if (f.scale === 1000) return { us: raw * 1000, field: f.name };
    // 0 is what senders put in a time they do not fill; at or above the threshold it is Unix time.
    if (raw !== 0 && raw < UNIX_USEC_THRESHOLD_NUMBER) return { us: raw, field: f.name };
  }
  return undefined;
}
