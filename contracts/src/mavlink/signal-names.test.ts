import { describe, expect, it } from 'vitest';
import {
  MAX_MAVLINK_MSGID,
  MAX_SIGNAL_INDEX,
  isSignalName,
  parseSignalName,
  signalName,
  unknownSignalName,
} from './signal-names.ts';

describe('signalName', () => {
  it('builds scalar and indexed names', () => {
    expect(signalName('ATTITUDE', 'roll')).toBe('mavlink.ATTITUDE.roll');
    expect(signalName('GPS_RAW_INT', 'foo', 3)).toBe('mavlink.GPS_RAW_INT.foo[3]');
    expect(signalName('SERVO_OUTPUT_RAW', 'servo1_raw')).toBe('mavlink.SERVO_OUTPUT_RAW.servo1_raw');
    expect(signalName('ATTITUDE_QUATERNION_COV', 'covariance', 0)).toBe('mavlink.ATTITUDE_QUATERNION_COV.covariance[0]');
    expect(signalName('POWER_STATUS', 'Vcc')).toBe('mavlink.POWER_STATUS.Vcc');
    expect(signalName('A', 'b', MAX_SIGNAL_INDEX)).toBe(`mavlink.A.b[${MAX_SIGNAL_INDEX}]`);
  });

  it('refuses parts that would not parse back', () => {
    const bad: Array<[string, string, number?]> = [
      ['', 'roll'],
      ['ATTITUDE', ''],
      ['attitude', 'roll'], // message names are upper case
      ['1ATTITUDE', 'roll'],
      ['ATT.ITUDE', 'roll'],
      ['ATTITUDE', 'ro.ll'],
      ['ATTITUDE', 'roll[1]'],
      ['ATTITUDE', '9roll'],
      ['ATTITUDE', 'roll', -1],
      ['ATTITUDE', 'roll', 1.5],
      ['ATTITUDE', 'roll', MAX_SIGNAL_INDEX + 1],
      ['ATTITUDE', 'roll', Number.NaN],
      ['UNKNOWN_5', 'raw'], // reserved: use unknownSignalName
      ['UNKNOWN_X', 'foo'],
      ['A'.repeat(65), 'roll'],
      ['ATTITUDE', 'r'.repeat(65)],
    ];
    for (const [m, f, i] of bad) expect(() => signalName(m, f, i), `${m}.${f}[${i}]`).toThrow(RangeError);
  });
});

describe('unknownSignalName', () => {
  it('builds mavlink.UNKNOWN_<id>.raw', () => {
    expect(unknownSignalName(0)).toBe('mavlink.UNKNOWN_0.raw');
    expect(unknownSignalName(42000)).toBe('mavlink.UNKNOWN_42000.raw');
    expect(unknownSignalName(MAX_MAVLINK_MSGID)).toBe('mavlink.UNKNOWN_16777215.raw');
  });

  it('refuses ids outside MAVLink 2 24-bit range', () => {
    for (const bad of [-1, 1.5, MAX_MAVLINK_MSGID + 1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => unknownSignalName(bad)).toThrow(RangeError);
    }
  });
});

describe('parseSignalName', () => {
  it('parses scalar, indexed and unknown names', () => {
    expect(parseSignalName('mavlink.ATTITUDE.roll')).toEqual({ message: 'ATTITUDE', field: 'roll' });
    expect(parseSignalName('mavlink.GPS_RAW_INT.foo[3]')).toEqual({ message: 'GPS_RAW_INT', field: 'foo', index: 3 });
    expect(parseSignalName('mavlink.A.b[0]')).toEqual({ message: 'A', field: 'b', index: 0 });
    expect(parseSignalName('mavlink.UNKNOWN_42000.raw')).toEqual({ message: 'UNKNOWN_42000', field: 'raw', unknown: 42000 });
    expect(parseSignalName('mavlink.UNKNOWN_0.raw')).toEqual({ message: 'UNKNOWN_0', field: 'raw', unknown: 0 });
  });

  it('omits index and unknown keys when absent', () => {
    const p = parseSignalName('mavlink.ATTITUDE.roll');
    expect(p && 'index' in p).toBe(false);
    expect(p && 'unknown' in p).toBe(false);
  });

  it('round-trips what signalName and unknownSignalName build', () => {
    const cases: Array<[string, string, number?]> = [
      ['ATTITUDE', 'roll'],
      ['GPS_RAW_INT', 'foo', 3],
      ['HIGH_LATENCY2', 'custom0'],
      ['POWER_STATUS', 'Vservo'],
      ['DISTANCE_SENSOR', 'quaternion', 3],
      ['X', '_f', 0],
      ['X', 'f', MAX_SIGNAL_INDEX],
    ];
    for (const [m, f, i] of cases) {
      const name = signalName(m, f, i);
      const parsed = parseSignalName(name);
      expect(parsed).toEqual(i === undefined ? { message: m, field: f } : { message: m, field: f, index: i });
      expect(signalName(parsed!.message, parsed!.field, parsed!.index)).toBe(name);
    }
    for (const id of [0, 1, 255, 12_345, MAX_MAVLINK_MSGID]) {
      const parsed = parseSignalName(unknownSignalName(id));
      expect(parsed?.unknown).toBe(id);
      expect(unknownSignalName(parsed!.unknown!)).toBe(`mavlink.${parsed!.message}.${parsed!.field}`);
    }
  });

  it('returns null for anything not of the shape', () => {
    const bad = [
      '',
      'mavlink',
      'mavlink.',
      'mavlink..x', // empty message
      'mavlink.A.', // empty field
      'mavlink.A', // no field
      'mavlink.A.b.c', // extra segment
      'MAVLINK.A.b',
      'mavproxy.A.b',
      ' mavlink.A.b',
      'mavlink.A.b ',
      'mavlink.A.b\n',
      'mavlink.a.b', // lower-case message
      'mavlink.A.1b',
      'mavlink.A.b[-1]', // negative index
      'mavlink.A.b[01]', // non-canonical index: one spelling per signal
      'mavlink.A.b[00]',
      'mavlink.A.b[+1]',
      'mavlink.A.b[1.0]',
      'mavlink.A.b[ 1]',
      'mavlink.A.b[]',
      'mavlink.A.b[1][2]',
      'mavlink.A.b[1',
      'mavlink.A.b1]',
      `mavlink.A.b[${MAX_SIGNAL_INDEX + 1}]`,
      'mavlink.A.b[99999999999]',
      'mavlink.UNKNOWN_5.foo', // UNKNOWN_ holds only raw
      'mavlink.UNKNOWN_5.raw[0]',
      'mavlink.UNKNOWN_05.raw', // non-canonical id
      'mavlink.UNKNOWN_.raw',
      'mavlink.UNKNOWN_X.raw',
      `mavlink.UNKNOWN_${MAX_MAVLINK_MSGID + 1}.raw`,
      `mavlink.${'A'.repeat(65)}.b`,
      `mavlink.A.${'b'.repeat(65)}`,
      'ch_0',
    ];
    for (const name of bad) expect(parseSignalName(name), name).toBeNull();
  });
});

describe('isSignalName', () => {
  it('agrees with parseSignalName and rejects non-strings', () => {
    expect(isSignalName('mavlink.ATTITUDE.roll')).toBe(true);
    expect(isSignalName('mavlink.UNKNOWN_7.raw')).toBe(true);
    expect(isSignalName('mavlink.A.b[01]')).toBe(false);
    expect(isSignalName('mavlink..x')).toBe(false);
    for (const v of [undefined, null, 1, {}, ['mavlink.A.b']]) expect(isSignalName(v)).toBe(false);
  });
});
