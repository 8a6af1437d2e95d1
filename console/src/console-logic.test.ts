// The console's pure logic, without a browser: what the browser tests see through the page rests on
// these (channel grouping and addressing, the shareable URL, the template form, the track, the
// HEARTBEAT band, the marks on the time axis).
import type { Channel, CommandRecord, TimelineEvent } from '@sortie/contracts';
import { describe, expect, it } from 'vitest';
import { argFields, argsFromForm } from './args-form.ts';
import { formatUtc, timestampSeconds } from './format.ts';
import { indexAtOrBefore, localTrack, offsetText, scaleBarMetres } from './geo.ts';
import { bandLabel, heartbeatSpans } from './heartbeat.ts';
import { marksOf } from './marks.ts';
import { groupChannels, plottable, queryChannelId, systemIdOf } from './signals.ts';
import { formatLocation, parseLocation } from './url-state.ts';

const channel = (name: string, dataType = 'float', unit = '', hypertableColName = name): Channel => ({
  id: crypto.randomUUID(),
  name,
  unit,
  dataType,
  hypertableColName,
});

describe('channels', () => {
  const signals = [
    channel('mavlink.ATTITUDE.roll', 'float', 'rad'),
    channel('mavlink.ATTITUDE.rollspeed', 'float', 'rad/s'),
    channel('mavlink.ATTITUDE.pitch', 'float', 'rad'),
    channel('mavlink.AHRS2.roll', 'float', 'rad'),
    channel('mavlink.STATUSTEXT.text', 'string'),
  ];

  it('groups MAVLink signals by message, in order, keeping those matching every word of the filter', () => {
    expect(groupChannels(signals, '').map((g) => [g.message, g.channels.length])).toEqual([
      ['AHRS2', 1],
      ['ATTITUDE', 3],
      ['STATUSTEXT', 1],
    ]);
    expect(groupChannels(signals, 'Attitude ROLL').map((g) => g.channels.map((c) => c.name))).toEqual([['mavlink.ATTITUDE.roll', 'mavlink.ATTITUDE.rollspeed']]);
    expect(groupChannels(signals, 'rad/s').flatMap((g) => g.channels.map((c) => c.name))).toEqual(['mavlink.ATTITUDE.rollspeed']);
    // A wide dataset's channels are one group without a message.
    expect(groupChannels([channel('thrust', 'double', 'N', 'ch_0')], '')).toEqual([{ message: '', channels: [expect.objectContaining({ name: 'thrust' })] }]);
  });

  it('addresses a wide channel by its ch_N index and a signal by name; text is not plottable', () => {
    expect(queryChannelId(channel('thrust', 'double', 'N', 'ch_17'))).toBe('17');
    expect(queryChannelId(channel('mavlink.ATTITUDE.roll'))).toBe('mavlink.ATTITUDE.roll');
    expect(plottable(channel('mavlink.STATUSTEXT.text', 'string'))).toBe(false);
    expect(plottable(channel('payload', 'bytes'))).toBe(false);
    expect(plottable(channel('mavlink.VIBRATION.time_usec', 'uint64'))).toBe(true);
    expect(plottable(channel('armed', 'bool'))).toBe(true);
  });

  it('reads the system id from the agent-made dataset name', () => {
    expect(systemIdOf('vtol-sys1')).toBe(1);
    expect(systemIdOf('flight-7-sys255')).toBe(255);
    expect(systemIdOf('bench rig')).toBeUndefined();
  });
});

describe('the page address', () => {
  it('round-trips view, dataset, channels and window to whole milliseconds, rounded as Query rounds', () => {
    const location = { view: 'data' as const, experimentId: 'e1', datasetId: 'd1', channels: ['mavlink.ATTITUDE.roll', 'ch_0'], from: 1533737228.7584999, to: 1533737235.0445 };
    const search = formatLocation(location);
    expect(search).toBe('?experiment=e1&dataset=d1&channel=mavlink.ATTITUDE.roll&channel=ch_0&from=2018-08-08T14%3A07%3A08.758Z&to=2018-08-08T14%3A07%3A15.045Z');
    expect(parseLocation(search)).toEqual({ ...location, from: 1533737228.758, to: 1533737235.045 });
  });

  it('drops a window that is missing an edge or runs backwards', () => {
    expect(parseLocation('?from=2018-08-08T14:07:08Z')).toEqual({ view: 'data', experimentId: undefined, datasetId: undefined, channels: [] });
    expect(parseLocation('?from=2018-08-08T14:07:08Z&to=2018-08-08T14:07:01Z').from).toBeUndefined();
    expect(parseLocation('?view=webhooks').view).toBe('webhooks');
  });
});

describe('the form of a template', () => {
  const schema = {
    type: 'object',
    properties: {
      altitude: { type: 'number', minimum: 0, description: 'metres AGL' },
      count: { type: 'integer' },
      mode: { enum: ['soft', 'hard'] },
      confirm: { type: 'boolean' },
      waypoints: { type: 'array' },
    },
    required: ['altitude'],
  };

  it('has one field per property, typed, with bounds and what is required', () => {
    expect(argFields(schema)).toEqual([
      { name: 'altitude', kind: 'number', required: true, options: [], title: 'metres AGL', min: 0 },
      { name: 'count', kind: 'integer', required: false, options: [], title: '' },
      { name: 'mode', kind: 'enum', required: false, options: ['soft', 'hard'], title: '' },
      { name: 'confirm', kind: 'boolean', required: false, options: [], title: '' },
      { name: 'waypoints', kind: 'json', required: false, options: [], title: '' },
    ]);
    expect(argFields(null)).toEqual([]);
  });

  it('turns the strings back into typed args; empty optional fields are left out, bad input stays text for the server to name', () => {
    const fields = argFields(schema);
    expect(argsFromForm(fields, { altitude: '30', mode: 'hard', confirm: 'false', waypoints: '[1,2]' })).toEqual({ altitude: 30, mode: 'hard', confirm: false, waypoints: [1, 2] });
    expect(argsFromForm(fields, { altitude: 'thirty', count: '', waypoints: '[1,' })).toEqual({ altitude: 'thirty', waypoints: '[1,' });
  });
});

describe('the GPS track', () => {
  it('is local metres from the first fix, skipping (0, 0) no-fix samples', () => {
    // 0.001° of latitude ≈ 111.2 m; 0.001° of longitude at 47° ≈ 75.8 m.
    const track = localTrack([1, 2, 3, 4], [0, 47e7, 47.001e7, 47e7], [0, 8e7, 8e7, 8.001e7]);
    expect(Array.from(track.times)).toEqual([2, 3, 4]);
    expect(track.x[0]).toBe(0);
    expect(track.y[1]).toBeCloseTo(111.2, 0);
    expect(track.x[2]).toBeCloseTo(75.8, 0);
    expect(track.y[2]).toBeCloseTo(0, 6);
  });

  it('finds the last fix at or before the cursor', () => {
    const times = [10, 20, 30];
    expect([5, 10, 25, 30, 99].map((t) => indexAtOrBefore(times, t))).toEqual([-1, 0, 1, 2, 2]);
  });
});

describe('the HEARTBEAT band', () => {
  const series = (times: number[], values: number[]) => ({ times, values });

  it("joins the HEARTBEAT fields back into heartbeats and follows the vehicle's autopilot, not its companion computer", () => {
    // An ArduSub dive (MAV_TYPE_SUBMARINE, ArduPilot, MANUAL = 19) with BlueOS's companion heartbeat between
    // (MAV_TYPE_ONBOARD_CONTROLLER, MAV_AUTOPILOT_INVALID, mode 0, armed bit), two of them at one instant.
    const times = [0, 0, 1, 1.5, 2, 2.5, 3];
    const spans = heartbeatSpans(
      series(times, [12, 18, 12, 18, 12, 18, 12]),
      series(times, [3, 8, 3, 8, 3, 8, 3]),
      series(times, [0x81, 0x80, 0x81, 0x80, 0x81, 0x80, 0x81]),
      series(times, [19, 0, 19, 0, 2, 0, 2]),
      9,
    );
    expect(spans).toEqual([
      { from: 0, to: 2, mode: 'MANUAL', armed: true },
      { from: 2, to: 9, mode: 'ALT_HOLD', armed: true },
    ]);
  });

  it('names a PX4 mission as QGroundControl does', () => {
    const t = [0, 1];
    expect(heartbeatSpans(series(t, [2, 2]), series(t, [12, 12]), series(t, [0x9d, 0x9d]), series(t, [0x04040000, 0x04040000]), 5)).toEqual([{ from: 0, to: 5, mode: 'Mission', armed: true }]);
  });

  it('fits a label to its span: whole, the mode alone, a clean abbreviation of three letters or more, or nothing', () => {
    const span = { from: 0, to: 1, mode: 'AVOID_ADSB', armed: true };
    const measure = (text: string) => text.length * 7;
    expect(bandLabel(span, 200, measure)).toBe('AVOID_ADSB · armed');
    expect(bandLabel(span, 80, measure)).toBe('AVOID_ADSB');
    expect(bandLabel(span, 50, measure)).toBe('AVOID_…');
    expect(bandLabel(span, 28, measure)).toBe('AVO…');
    // Two letters and an ellipsis ("AV…") read as nonsense: the colour and the tooltip say it instead.
    expect(bandLabel(span, 27, measure)).toBe('');
    expect(bandLabel({ ...span, mode: 'Mission', armed: false }, 49, measure)).toBe('Mission');
  });
});

describe('marks on the time axis', () => {
  const command = (over: Partial<CommandRecord>): CommandRecord =>
    ({ commandText: 'RTL', status: 'logged', queuedAt: null, deliveredAt: null, ackedAt: null, vehicleTime: null, ackDeadlineAt: null, statusDetail: '', ...over }) as CommandRecord;

  it("puts events and each step of a command's life in time order, an ack at the vehicle's time when it gave one", () => {
    const events = [{ kind: 'LINK_LOSS', message: 'no frames for 4.0 s', timestamp: '2018-08-08T14:06:40.000Z' }] as TimelineEvent[];
    const marks = marksOf(events, [
      command({ status: 'acked', queuedAt: '2018-08-08T14:06:30Z', deliveredAt: '2018-08-08T14:06:30.5Z', ackedAt: '2018-08-08T14:06:50Z', vehicleTime: '2018-08-08T14:06:31.25Z', statusDetail: 'done' }),
      command({ commandText: 'LAND', status: 'timed_out', queuedAt: '2018-08-08T14:06:45Z', ackDeadlineAt: '2018-08-08T14:07:45Z' }),
    ]);
    expect(marks.map((m) => [formatUtc(m.t), m.kind, m.label])).toEqual([
      ['2018-08-08 14:06:30.000', 'dispatched', 'RTL: dispatched'],
      ['2018-08-08 14:06:30.500', 'delivered', 'RTL: delivered'],
      ['2018-08-08 14:06:31.250', 'acked', 'RTL: acked (vehicle time) — done'],
      ['2018-08-08 14:06:40.000', 'event', 'LINK_LOSS: no frames for 4.0 s'],
      ['2018-08-08 14:06:45.000', 'dispatched', 'LAND: dispatched'],
      ['2018-08-08 14:07:45.000', 'timed_out', 'LAND: timed out'],
    ]);
  });

  it('keeps the microseconds of an RFC 3339 time', () => {
    expect(timestampSeconds('2018-08-08T14:06:30.123456Z') - Date.UTC(2018, 7, 8, 14, 6, 30) / 1000).toBeCloseTo(0.123456, 6); // within half a microsecond: float64 seconds near 2018 resolve ~0.24 µs
  });
});

describe('offsetText', () => {
  it('names the direction instead of a minus sign, and calls a rounded zero by the positive name', () => {
    expect(offsetText(80.2, -151.4)).toBe('80 m east, 151 m south');
    expect(offsetText(-14, 231)).toBe('14 m west, 231 m north');
    expect(offsetText(-0.4, 0)).toBe('0 m east, 0 m north');
  });
});

describe('scaleBarMetres', () => {
  it('is the largest 1, 2 or 5 × 10^n that fits', () => {
    expect(scaleBarMetres(115)).toBe(100);
    expect(scaleBarMetres(460 / 4)).toBe(100);
    expect(scaleBarMetres(240)).toBe(200);
    expect(scaleBarMetres(999)).toBe(500);
    expect(scaleBarMetres(5)).toBe(5);
    expect(scaleBarMetres(0.3)).toBe(0.2);
    expect(scaleBarMetres(0)).toBe(0);
  });
});
