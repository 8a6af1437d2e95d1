import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isSignalName } from '../mavlink/signal-names.ts';
import { isLogSignalName, logSignalName, parseLogSignalName } from './signal-names.ts';

describe('log signal names', () => {
  it('spells instance 0 without brackets and other instances with them', () => {
    expect(logSignalName('ulog', 'vehicle_attitude', 0, 'q[0]')).toBe('ulog.vehicle_attitude.q[0]');
    expect(logSignalName('ulog', 'actuator_outputs', 1, 'output[3]')).toBe('ulog.actuator_outputs[1].output[3]');
    expect(logSignalName('dataflash', 'IMU', 2, 'GyrX')).toBe('dataflash.IMU[2].GyrX');
    expect(logSignalName('ulog', 'esc_status', 0, 'esc[2].esc_rpm')).toBe('ulog.esc_status.esc[2].esc_rpm');
  });

  it('parses back what it spells', () => {
    expect(parseLogSignalName('ulog.esc_status[1].esc[2].esc_rpm')).toEqual({ namespace: 'ulog', message: 'esc_status', instance: 1, field: 'esc[2].esc_rpm' });
    expect(parseLogSignalName('dataflash.GPS.Lat')).toEqual({ namespace: 'dataflash', message: 'GPS', instance: 0, field: 'Lat' });
  });

  it('accepts one spelling only', () => {
    for (const bad of ['ulog.x[0].y', 'ulog.x[01].y', 'ulog.x.y[01]', 'ulog..y', 'ulog.x.', 'px4.x.y', 'ulog.x.y.', 'ulog.x.1y', 'mavlink.ATTITUDE.roll']) {
      expect(parseLogSignalName(bad), bad).toBeNull();
    }
  });

  it('never overlaps MAVLink signal names', () => {
    expect(isLogSignalName('mavlink.ATTITUDE.roll')).toBe(false);
    expect(isSignalName('ulog.vehicle_attitude.roll')).toBe(false);
  });

  it('round-trips any valid parts', () => {
    const ident = fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,20}$/);
    const field = fc.array(fc.tuple(ident, fc.option(fc.nat(300), { nil: undefined })), { minLength: 1, maxLength: 3 })
      .map((parts) => parts.map(([n, i]) => (i === undefined ? n : `${n}[${i}]`)).join('.'));
    fc.assert(
      fc.property(fc.constantFrom('ulog' as const, 'dataflash' as const), ident, fc.nat(20), field, (ns, message, instance, f) => {
        const name = logSignalName(ns, message, instance, f);
        expect(parseLogSignalName(name)).toEqual({ namespace: ns, message, instance, field: f });
      }),
    );
  });
});
