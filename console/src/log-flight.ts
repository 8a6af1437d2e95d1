// Which signals a flight view reads for its GPS track and its mode band, and how they become a track and
// mode spans, for every kind of flight: a MAVLink flight (streamed by the agent or an imported tlog) by
// GLOBAL_POSITION_INT and HEARTBEAT, a PX4 ULog by its own topics, an ArduPilot DataFlash log by its own
// messages. No browser here: the flight view asks `flightSources` what to query and hands the answers back.
import {
  ardupilotModeName,
  ardupilotVehicleOfLog,
  PX4_ARMING_STATE_ARMED,
  px4NavStateName,
  type ArduPilotVehicle,
  type ModeSpan,
} from '@sortie/contracts';
import { heartbeatSpans } from './heartbeat.ts';

/** What a flight view needs of a channel: its address and stored type. */
export interface ChannelLike {
  hypertableColName: string;
  dataType: string;
}

interface Series {
  times: ArrayLike<number>;
  values: ArrayLike<number>;
}

/** A dataset as the experiments list describes it. */
export interface DatasetKind {
  codec: string | null;
  format: string | null;
}

/** Where a flight's positions are: two signals, and how many of their units make a degree. */
export interface TrackSource {
  lat: string;
  lon: string;
  unitsPerDegree: number;
  /** Where the positions come from, as the page names it (`GLOBAL_POSITION_INT`, `vehicle_gps_position`, `GPS`). */
  label: string;
}

export type ModeSource =
  | { kind: 'heartbeat'; type: string; autopilot: string; baseMode: string; customMode: string }
  /** ULog: vehicle_status.nav_state; armed by vehicle_status.arming_state, else actuator_armed.armed. */
  | { kind: 'px4'; navState: string; armingState?: string; armed?: string }
  /** DataFlash: MODE's number, named by the vehicle's table; armed by ARM messages and ARMED/DISARMED events. */
  | { kind: 'ardupilot'; mode: string; vehicle: ArduPilotVehicle | undefined; armState?: string; event?: string };

export interface FlightSources {
  track?: TrackSource;
  modes?: ModeSource;
}

const MAVLINK: Required<FlightSources> = {
  track: { lat: 'mavlink.GLOBAL_POSITION_INT.lat', lon: 'mavlink.GLOBAL_POSITION_INT.lon', unitsPerDegree: 1e7, label: 'GLOBAL_POSITION_INT' },
  modes: {
    kind: 'heartbeat',
    type: 'mavlink.HEARTBEAT.type',
    autopilot: 'mavlink.HEARTBEAT.autopilot',
    baseMode: 'mavlink.HEARTBEAT.base_mode',
    customMode: 'mavlink.HEARTBEAT.custom_mode',
  },
};

// Positions in the order they are preferred: the estimator's fused position, else the receiver's fixes.
// PX4 renamed the receiver's fields with their type: `lat`/`lon` in 1e-7 degrees as int32 up to v1.13,
// `latitude_deg`/`longitude_deg` in degrees as float64 since; vehicle_global_position has always been
// float64 degrees. DataFlash's GPS and POS Lat/Lng are stored in degrees (the reader scales them).
const ULOG_POSITIONS: ReadonlyArray<readonly [string, string, string]> = [
  ['vehicle_global_position', 'lat', 'lon'],
  ['vehicle_gps_position', 'latitude_deg', 'longitude_deg'],
  ['vehicle_gps_position', 'lat', 'lon'],
  ['sensor_gps', 'latitude_deg', 'longitude_deg'],
  ['sensor_gps', 'lat', 'lon'],
];
const DATAFLASH_POSITIONS: ReadonlyArray<readonly [string, string, string]> = [
  ['GPS', 'Lat', 'Lng'],
  ['POS', 'Lat', 'Lng'],
];

// A position stored as an integer is in 1e-7 degrees (PX4's int32 lat/lon); a float is in degrees.
const INTEGER_TYPES = new Set(['int8', 'int16', 'int32', 'int64', 'uint8', 'uint16', 'uint32', 'uint64']);

/** Whether the dataset is a vehicle's own log (ULog or DataFlash), not MAVLink. */
export function isLogDataset(d: DatasetKind): boolean {
  return logNamespace(d) !== undefined;
}

function logNamespace(d: DatasetKind): 'ulog' | 'dataflash' | undefined {
  if (d.codec === 'ulog' || d.format === 'px4-ulog') return 'ulog';
  if (d.codec === 'dataflash' || d.format === 'ardupilot-dataflash') return 'dataflash';
  return undefined;
}

/**
 * The signals a flight view reads for its track and band. A MAVLink flight always reads the same ones
 * (a live flight may not have stored them yet, and Follow takes them before it has); a log is finished,
 * so its sources are chosen among the channels it stored. `metadata` is its import's (the vehicle of a
 * DataFlash log, which names its modes).
 */
export function flightSources(dataset: DatasetKind, channels: readonly ChannelLike[], metadata: Readonly<Record<string, string | number>> = {}): FlightSources {
  const namespace = logNamespace(dataset);
  if (!namespace) return MAVLINK;
  const types = new Map(channels.map((c) => [c.hypertableColName, c.dataType]));
  const has = (signal: string) => types.has(signal);
  const sources: FlightSources = {};
  for (const [message, lat, lon] of namespace === 'ulog' ? ULOG_POSITIONS : DATAFLASH_POSITIONS) {
    const latSignal = `${namespace}.${message}.${lat}`;
    const lonSignal = `${namespace}.${message}.${lon}`;
    if (!has(latSignal) || !has(lonSignal)) continue;
    sources.track = { lat: latSignal, lon: lonSignal, unitsPerDegree: INTEGER_TYPES.has(types.get(latSignal)!) ? 1e7 : 1, label: message };
    break;
  }
  const pick = (...signals: string[]) => signals.find(has);
  if (namespace === 'ulog') {
    const navState = pick('ulog.vehicle_status.nav_state');
    if (navState) {
      const armingState = pick('ulog.vehicle_status.arming_state');
      const armed = armingState ? undefined : pick('ulog.actuator_armed.armed');
      sources.modes = { kind: 'px4', navState, ...(armingState && { armingState }), ...(armed && { armed }) };
    }
  } else {
    const mode = pick('dataflash.MODE.Mode', 'dataflash.MODE.ModeNum');
    if (mode) {
      const armState = pick('dataflash.ARM.ArmState');
      const event = pick('dataflash.EV.Id');
      sources.modes = { kind: 'ardupilot', mode, vehicle: ardupilotVehicleOfLog(metadata), ...(armState && { armState }), ...(event && { event }) };
    }
  }
  return sources;
}

/** The track's signals, then the band's: what the view queries (the band's with every sample). */
export function sourceSignals(sources: FlightSources): { track: string[]; modes: string[] } {
  const track = sources.track ? [sources.track.lat, sources.track.lon] : [];
  const m = sources.modes;
  if (!m) return { track, modes: [] };
  const modes =
    m.kind === 'heartbeat'
      ? [m.type, m.autopilot, m.baseMode, m.customMode]
      : m.kind === 'px4'
        ? [m.navState, m.armingState, m.armed]
        : [m.mode, m.armState, m.event];
  return { track, modes: modes.filter((s): s is string => s !== undefined) };
}

// ArduPilot's LogEvent ids (AP_Logger.h) that say the vehicle armed or disarmed.
const EV_ARMED = new Set([10, 15]); // ARMED, AUTO_ARMED
const EV_DISARMED = 11;

const NONE: Series = { times: [], values: [] };

/**
 * The band's spans from the answers to its signals (`series` by signal; a missing one reads as empty),
 * the last ending at `end`. For a log: one span per run of equal (mode, armed), from the first mode the
 * log gives; armed is what the latest arming message said, disarmed before any.
 */
export function sourceSpans(source: ModeSource, series: (signal: string) => Series | undefined, end: number): ModeSpan[] {
  const get = (signal: string | undefined) => (signal ? (series(signal) ?? NONE) : NONE);
  if (source.kind === 'heartbeat') return heartbeatSpans(get(source.type), get(source.autopilot), get(source.baseMode), get(source.customMode), end);
  const changes: Array<{ t: number; mode?: string; armed?: boolean }> = [];
  const each = (s: Series, f: (value: number) => { mode?: string; armed?: boolean } | undefined) => {
    for (let i = 0; i < Math.min(s.times.length, s.values.length); i++) {
      const change = f(s.values[i]!);
      if (change) changes.push({ t: s.times[i]!, ...change });
    }
  };
  if (source.kind === 'px4') {
    each(get(source.navState), (v) => ({ mode: px4NavStateName(v) }));
    each(get(source.armingState), (v) => ({ armed: v === PX4_ARMING_STATE_ARMED }));
    each(get(source.armed), (v) => ({ armed: v !== 0 }));
  } else {
    each(get(source.mode), (v) => ({ mode: ardupilotModeName(source.vehicle, v) }));
    each(get(source.armState), (v) => ({ armed: v !== 0 }));
    each(get(source.event), (v) => (EV_ARMED.has(v) ? { armed: true } : v === EV_DISARMED ? { armed: false } : undefined));
  }
  changes.sort((a, b) => a.t - b.t);
  const spans: ModeSpan[] = [];
  let mode: string | undefined;
  let armed = false;
  for (let i = 0; i < changes.length; i++) {
    const c = changes[i]!;
    if (c.mode !== undefined) mode = c.mode;
    if (c.armed !== undefined) armed = c.armed;
    // Every change of one instant first: a mode and an arming logged together make one span, not two.
    if (mode === undefined || changes[i + 1]?.t === c.t) continue;
    const last = spans.at(-1);
    if (last && last.mode === mode && last.armed === armed) continue;
    if (last) last.to = c.t;
    spans.push({ from: c.t, to: Math.max(end, c.t), mode, armed });
  }
  return spans;
}

// --- What the flight's header says of an imported log -----------------------------------------------

/** PX4's release types: the low byte of ver_sw_release, each the highest of these at or below it (pyulog). */
const PX4_RELEASE_TYPES: ReadonlyArray<readonly [number, string]> = [
  [255, 'release'],
  [192, 'rc'],
  [128, 'beta'],
  [64, 'alpha'],
  [0, 'dev'],
];

/** `v1.11.2 dev` from ULog's ver_sw_release (0xMMmmppTT); a release reads as the bare version. */
export function px4Release(release: number): string | undefined {
  if (!Number.isInteger(release) || release <= 0) return undefined;
  const type = release & 0xff;
  const version = `v${(release >>> 24) & 0xff}.${(release >>> 16) & 0xff}.${(release >>> 8) & 0xff}`;
  const name = PX4_RELEASE_TYPES.find(([at]) => type >= at)![1];
  return name === 'release' ? version : `${version} ${name}`;
}

export interface LogFact {
  label: string;
  value: string;
}

/**
 * The vehicle as its log describes itself, for the flight's header: system, hardware and software of a
 * ULog (its information messages), the firmware line and build of a DataFlash log (MSG and VER). Facts
 * the log does not give are left out.
 */
export function logFacts(metadata: Readonly<Record<string, string | number>>): LogFact[] {
  const text = (key: string) => {
    const v = metadata[key];
    return v === undefined || v === '' ? undefined : String(v);
  };
  const facts: LogFact[] = [];
  const add = (label: string, ...parts: Array<string | undefined>) => {
    const value = parts.filter(Boolean).join(' · ');
    if (value) facts.push({ label, value });
  };
  add('System', [text('sys_name'), text('sys_os_name') && `on ${text('sys_os_name')}`].filter(Boolean).join(' '));
  add('Hardware', text('ver_hw'), text('ver_hw_subtype'), text('sys_mcu'));
  const release = px4Release(Number(metadata['ver_sw_release']));
  add('Software', release, text('ver_sw')?.slice(0, 8), text('ver_sw_branch') && `branch ${text('ver_sw_branch')}`);
  add('Vehicle id', text('sys_uuid'));
  add('Firmware', text('firmware') ?? text('ver.FWS'));
  const vehicle = ardupilotVehicleOfLog(metadata);
  if (text('ver.BU') !== undefined || text('ver.APJ') !== undefined) add('Build', vehicle, text('ver.APJ') && `board ${text('ver.APJ')}`, text('ver.GH') && `git ${Number(metadata['ver.GH']).toString(16).padStart(8, '0')}`);
  return facts;
}

/** How the list names a dataset's kind beside its name. */
export function datasetKindLabel(d: DatasetKind & { storageShape: string }, systemId: number | undefined): string {
  const namespace = logNamespace(d);
  if (namespace === 'ulog') return 'PX4 ULog';
  if (namespace === 'dataflash') return 'ArduPilot DataFlash';
  if (d.storageShape === 'narrow') return `MAVLink${systemId !== undefined ? `, system ${systemId}` : ''}`;
  return 'wide';
}
