// How the console reads a flight imported from a vehicle's own log, without a browser: which signals draw
// its track and its mode band (as the fixtures' imports stored them: the channels' names and types below are
// theirs), the spans those signals make, what its header says of the vehicle, how the channel list groups
// its signals, and how its logged strings are marked on the timeline.
import type { Channel, TimelineEvent } from '@sortie/contracts';
import { describe, expect, it } from 'vitest';
import { localTrack } from './geo.ts';
import { datasetKindLabel, flightSources, logFacts, px4Release, sourceSignals, sourceSpans, type ModeSource } from './log-flight.ts';
import { markColour, markName, marksOf } from './marks.ts';
import { fieldOf, groupChannels } from './signals.ts';

const ULOG = { codec: 'ulog', format: 'px4-ulog' };
const DATAFLASH = { codec: 'dataflash', format: 'ardupilot-dataflash' };
const channels = (list: Array<[string, string]>) => list.map(([hypertableColName, dataType]) => ({ hypertableColName, dataType }));
const series = (times: number[], values: number[]) => ({ times, values });

// sample_log_small.ulg (PX4 v1.11, 2021): the receiver's lat/lon as int32, no vehicle_global_position.
const SMALL = channels([
  ['ulog.actuator_armed.armed', 'int32'],
  ['ulog.vehicle_attitude.q[0]', 'float'],
  ['ulog.vehicle_gps_position.lat', 'int32'],
  ['ulog.vehicle_gps_position.lon', 'int32'],
  ['ulog.vehicle_status.arming_state', 'int32'],
  ['ulog.vehicle_status.nav_state', 'int32'],
]);
// sample_px4_events.ulg (PX4 v1.15 SITL, 2024): float64 degrees everywhere, the estimator's position too.
const EVENTS = channels([
  ['ulog.sensor_gps.latitude_deg', 'double'],
  ['ulog.sensor_gps.longitude_deg', 'double'],
  ['ulog.vehicle_global_position.lat', 'double'],
  ['ulog.vehicle_global_position.lon', 'double'],
  ['ulog.vehicle_gps_position.latitude_deg', 'double'],
  ['ulog.vehicle_gps_position.longitude_deg', 'double'],
  ['ulog.vehicle_status.arming_state', 'int32'],
  ['ulog.vehicle_status.nav_state', 'int32'],
]);
// ardusub-small.BIN (ArduSub 4.1 on a bench): modes and arming, no GPS or POS message.
const SUB = channels([
  ['dataflash.ARM.ArmState', 'int32'],
  ['dataflash.ATT.Roll', 'double'],
  ['dataflash.EV.Id', 'int32'],
  ['dataflash.MODE.Mode', 'int32'],
  ['dataflash.MODE.ModeNum', 'int32'],
]);

describe('the sources of a flight view', () => {
  it('are GLOBAL_POSITION_INT and HEARTBEAT for a MAVLink flight, stored yet or not (a live flight follows them before they are)', () => {
    const s = flightSources({ codec: 'mavlink', format: 'mavlink-raw-v1' }, []);
    expect(s.track).toEqual({ lat: 'mavlink.GLOBAL_POSITION_INT.lat', lon: 'mavlink.GLOBAL_POSITION_INT.lon', unitsPerDegree: 1e7, label: 'GLOBAL_POSITION_INT' });
    expect(sourceSignals(s).modes).toEqual(['mavlink.HEARTBEAT.type', 'mavlink.HEARTBEAT.autopilot', 'mavlink.HEARTBEAT.base_mode', 'mavlink.HEARTBEAT.custom_mode']);
    expect(flightSources({ codec: null, format: null }, []).track?.label).toBe('GLOBAL_POSITION_INT');
  });

  it("are an older PX4 log's receiver positions in 1e-7 degrees, and its vehicle_status", () => {
    const s = flightSources(ULOG, SMALL);
    expect(s.track).toEqual({ lat: 'ulog.vehicle_gps_position.lat', lon: 'ulog.vehicle_gps_position.lon', unitsPerDegree: 1e7, label: 'vehicle_gps_position' });
    expect(s.modes).toEqual({ kind: 'px4', navState: 'ulog.vehicle_status.nav_state', armingState: 'ulog.vehicle_status.arming_state' });
  });

  it("prefer a newer PX4 log's estimated position, in degrees", () => {
    expect(flightSources(ULOG, EVENTS).track).toEqual({ lat: 'ulog.vehicle_global_position.lat', lon: 'ulog.vehicle_global_position.lon', unitsPerDegree: 1, label: 'vehicle_global_position' });
    // Without it, the receiver's renamed fields; armed from actuator_armed when vehicle_status lacks arming_state.
    const receiverOnly = channels([['ulog.vehicle_gps_position.latitude_deg', 'double'], ['ulog.vehicle_gps_position.longitude_deg', 'double'], ['ulog.vehicle_status.nav_state', 'int32'], ['ulog.actuator_armed.armed', 'int32']]);
    const s = flightSources(ULOG, receiverOnly);
    expect(s.track).toMatchObject({ lat: 'ulog.vehicle_gps_position.latitude_deg', unitsPerDegree: 1 });
    expect(s.modes).toEqual({ kind: 'px4', navState: 'ulog.vehicle_status.nav_state', armed: 'ulog.actuator_armed.armed' });
  });

  it("name a DataFlash log's modes by the vehicle its firmware line names, and draw no track without GPS or POS", () => {
    const s = flightSources(DATAFLASH, SUB, { firmware: 'ArduSub V4.1.0 (89639005)' });
    expect(s.track).toBeUndefined();
    expect(s.modes).toEqual({ kind: 'ardupilot', mode: 'dataflash.MODE.Mode', vehicle: 'ArduSub', armState: 'dataflash.ARM.ArmState', event: 'dataflash.EV.Id' });
    expect(sourceSignals(s)).toEqual({ track: [], modes: ['dataflash.MODE.Mode', 'dataflash.ARM.ArmState', 'dataflash.EV.Id'] });
    const withGps = flightSources(DATAFLASH, [...SUB, ...channels([['dataflash.GPS.Lat', 'double'], ['dataflash.GPS.Lng', 'double'], ['dataflash.POS.Lat', 'double'], ['dataflash.POS.Lng', 'double']])], {});
    expect(withGps.track).toEqual({ lat: 'dataflash.GPS.Lat', lon: 'dataflash.GPS.Lng', unitsPerDegree: 1, label: 'GPS' });
    expect(withGps.modes).toMatchObject({ vehicle: undefined });
  });

  it('draw a track in degrees as in 1e-7 degrees', () => {
    const degrees = localTrack([1, 2], [47.397742, 47.397751], [8.545594, 8.545594], 1);
    const e7 = localTrack([1, 2], [473977420, 473977510], [85455940, 85455940]);
    expect(degrees.y[1]).toBeCloseTo(1.0, 1);
    expect(degrees.y[1]).toBeCloseTo(e7.y[1]!, 6);
    expect(degrees.x[1]).toBeCloseTo(0, 6);
  });
});

describe('the mode band of a log', () => {
  const px4: ModeSource = { kind: 'px4', navState: 'nav', armingState: 'arming' };

  it("follows nav_state and arming_state: sample_log_small's manual flight, armed then standby", () => {
    const s = { nav: series([20, 21, 25], [0, 0, 0]), arming: series([20, 21, 25], [2, 2, 1]) };
    expect(sourceSpans(px4, (id) => s[id as keyof typeof s], 26)).toEqual([
      { from: 20, to: 25, mode: 'Manual', armed: true },
      { from: 25, to: 26, mode: 'Manual', armed: false },
    ]);
  });

  it("names sample_px4_events' takeoff, hold and return", () => {
    const s = { nav: series([0, 10, 20, 30, 40], [4, 17, 4, 5, 5]), arming: series([0, 10, 20, 30, 40], [1, 2, 2, 2, 1]) };
    expect(sourceSpans(px4, (id) => s[id as keyof typeof s], 50).map((x) => `${x.mode}${x.armed ? ' armed' : ''} ${x.from}-${x.to}`)).toEqual([
      'Hold 0-10',
      'Takeoff armed 10-20',
      'Hold armed 20-30',
      'Return armed 30-40',
      'Return 40-50',
    ]);
  });

  it('takes arming from actuator_armed when that is what the log has', () => {
    const s = { nav: series([0, 5], [2, 2]), armed: series([1, 4], [1, 0]) };
    expect(sourceSpans({ kind: 'px4', navState: 'nav', armed: 'armed' }, (id) => s[id as keyof typeof s], 6)).toEqual([
      { from: 0, to: 1, mode: 'Position', armed: false },
      { from: 1, to: 4, mode: 'Position', armed: true },
      { from: 4, to: 6, mode: 'Position', armed: false },
    ]);
  });

  it('follows an ArduSub log: MODE by the vehicle, armed by ARM messages and ARMED / DISARMED events', () => {
    const sub: ModeSource = { kind: 'ardupilot', mode: 'mode', vehicle: 'ArduSub', armState: 'arm', event: 'ev' };
    // ardusub-small.BIN: MODE 19 (MANUAL), then ARM 0 with EV 11 (DISARMED); here later an EV 10 (ARMED) and MODE 2.
    const s = { mode: series([265, 400], [19, 2]), arm: series([274], [0]), ev: series([274, 274.1, 300], [11, 164, 10]) };
    expect(sourceSpans(sub, (id) => s[id as keyof typeof s], 500)).toEqual([
      { from: 265, to: 300, mode: 'MANUAL', armed: false },
      { from: 300, to: 400, mode: 'MANUAL', armed: true },
      { from: 400, to: 500, mode: 'ALT_HOLD', armed: true },
    ]);
    // A vehicle the log does not name: numbers, not another vehicle's names.
    expect(sourceSpans({ ...sub, vehicle: undefined }, (id) => s[id as keyof typeof s], 500)[0]!.mode).toBe('mode 19');
  });

  it('starts at the first mode, and an arming change at the same instant as a mode counts for it', () => {
    const s = { nav: series([5], [3]), arming: series([2, 5], [1, 2]) };
    expect(sourceSpans(px4, (id) => s[id as keyof typeof s], 9)).toEqual([{ from: 5, to: 9, mode: 'Mission', armed: true }]);
    expect(sourceSpans(px4, () => undefined, 9)).toEqual([]);
  });
});

describe("an imported flight's header and list entry", () => {
  it("say a ULog's system, hardware and software (release decoded from ver_sw_release)", () => {
    // sample_log_small.ulg's information messages.
    const facts = logFacts({
      sys_name: 'PX4',
      sys_os_name: 'NuttX',
      ver_hw: 'CUBEPILOT_CUBEORANGE',
      sys_mcu: 'STM32H7[4|5]xxx, rev. V',
      ver_sw: '8583f1da30b63154d6ba0bc187d86135dfe33cf9',
      ver_sw_branch: 'v1.11.2_w_rc_sysid',
      ver_sw_release: 17498624,
      sys_uuid: '000600000000383638393239510d0035002d',
      boot_console_output: 'sercon: Registering CDC/ACM serial driver',
    });
    expect(facts).toEqual([
      { label: 'System', value: 'PX4 on NuttX' },
      { label: 'Hardware', value: 'CUBEPILOT_CUBEORANGE · STM32H7[4|5]xxx, rev. V' },
      { label: 'Software', value: 'v1.11.2 dev · 8583f1da · branch v1.11.2_w_rc_sysid' },
      { label: 'Vehicle id', value: '000600000000383638393239510d0035002d' },
    ]);
  });

  it('decode PX4 release numbers as pyulog does', () => {
    expect(px4Release(17498624)).toBe('v1.11.2 dev');
    expect(px4Release(17760256)).toBe('v1.15.0 dev');
    expect(px4Release(0x010e03ff)).toBe('v1.14.3');
    expect(px4Release(0x010e03c0)).toBe('v1.14.3 rc');
    expect(px4Release(0x010e0381)).toBe('v1.14.3 beta');
    expect(px4Release(0)).toBeUndefined();
  });

  it("say a DataFlash log's firmware line, and its build when VER gives one", () => {
    expect(logFacts({ firmware: 'ArduSub V4.1.0 (89639005)' })).toEqual([{ label: 'Firmware', value: 'ArduSub V4.1.0 (89639005)' }]);
    expect(logFacts({ 'ver.FWS': 'ArduCopter V4.5.7 (2a3bc0b7)', 'ver.BU': 2, 'ver.APJ': 140, 'ver.GH': 708559031 })).toEqual([
      { label: 'Firmware', value: 'ArduCopter V4.5.7 (2a3bc0b7)' },
      { label: 'Build', value: 'ArduCopter · board 140 · git 2a3bc0b7' },
    ]);
  });

  it('name the kind of each flight in the list', () => {
    expect(datasetKindLabel({ ...ULOG, storageShape: 'narrow' }, undefined)).toBe('PX4 ULog');
    expect(datasetKindLabel({ ...DATAFLASH, storageShape: 'narrow' }, undefined)).toBe('ArduPilot DataFlash');
    expect(datasetKindLabel({ codec: 'mavlink', format: 'mavlink-raw-v1', storageShape: 'narrow' }, 1)).toBe('MAVLink, system 1');
    expect(datasetKindLabel({ codec: null, format: null, storageShape: 'wide' }, undefined)).toBe('wide');
  });
});

describe("a log's signals in the channel list", () => {
  const channel = (name: string): Channel => ({ id: crypto.randomUUID(), name, unit: '', dataType: 'float', hypertableColName: name });

  it('are grouped by topic or message and instance, each named by its field', () => {
    const groups = groupChannels(
      ['ulog.vehicle_attitude.q[0]', 'ulog.vehicle_attitude.q[1]', 'ulog.actuator_outputs[1].output[0]', 'ulog.actuator_outputs.output[0]', 'ulog.esc_status.esc[2].esc_rpm'].map(channel),
      '',
    );
    expect(groups.map((g) => [g.message, g.channels.map((c) => fieldOf(c.name))])).toEqual([
      ['actuator_outputs', ['output[0]']],
      ['actuator_outputs[1]', ['output[0]']],
      ['esc_status', ['esc[2].esc_rpm']],
      ['vehicle_attitude', ['q[0]', 'q[1]']],
    ]);
    expect(groupChannels(['dataflash.ATT.Roll', 'dataflash.IMU[1].GyrX'].map(channel), 'roll').map((g) => g.message)).toEqual(['ATT']);
    expect(fieldOf('mavlink.ATTITUDE.roll')).toBe('roll');
    expect(fieldOf('thrust')).toBe('thrust');
  });
});

describe("a log's strings on the timeline", () => {
  const event = (kind: string, message: string, data: Record<string, unknown>): TimelineEvent => ({
    id: crypto.randomUUID(),
    datasetId: crypto.randomUUID(),
    timestamp: '2024-03-18T14:49:10.346Z',
    kind,
    message,
    data,
    createdAt: '2024-03-18T14:49:10.346Z',
  });

  it('are LOG marks coloured by their severity, named with it in the legend', () => {
    const [info, warning, error, note] = marksOf(
      [
        event('LOG', '[commander] Takeoff detected', { source: 'ulog.logging', level: 6, severity: 'info' }),
        event('LOG', 'Preflight Fail: ekf2 missing data', { source: 'ulog.logging', level: 4, severity: 'warning' }),
        event('LOG', 'ERR EKFCHECK code 2', { source: 'dataflash.ERR', level: 3, severity: 'error' }),
        event('NOTE', 'wind picking up', {}),
      ],
      [],
    );
    expect(info).toMatchObject({ event: 'LOG', severity: 'info', label: 'LOG info: [commander] Takeoff detected' });
    expect(markName(warning!)).toBe('LOG warning');
    expect(new Set([info, warning, error].map((m) => markColour(m!))).size).toBe(3);
    expect(markColour(error!)).toBe('#d62728');
    expect(note).not.toHaveProperty('severity');
    expect(markName(note!)).toBe('NOTE');
  });
});
