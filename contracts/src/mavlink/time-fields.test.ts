import { describe, expect, it } from 'vitest';
import { messageClocks, timeFieldCatalogue, timeFieldRole } from './time-fields.ts';

describe('the time-field catalogue of the dialect', () => {
  it('names a role for every field of the dialect whose name says time', () => {
    const missing = timeFieldCatalogue().filter((f) => f.role === undefined);
    expect(missing.map((f) => `${f.message}.${f.field} ${f.type}`)).toEqual([]);
  });

  it('keeps event times as data: HOME_POSITION.time_usec is when home was set, not a clock', () => {
    expect(timeFieldRole('HOME_POSITION', 'time_usec', 'uint64_t')).toBe('event-time');
    expect(messageClocks('HOME_POSITION')).toEqual({});
    expect(messageClocks('GPS_GLOBAL_ORIGIN')).toEqual({});
    expect(messageClocks('SERVO_OUTPUT_RAW')).toEqual({});
  });

  it('reads sample clocks where the message has them', () => {
    expect(messageClocks('ATTITUDE')).toEqual({ bootMs: 'time_boot_ms' });
    expect(messageClocks('SYSTEM_TIME')).toEqual({ bootMs: 'time_boot_ms', unixUsec: 'time_unix_usec' });
    expect(messageClocks('HIGHRES_IMU')).toEqual({ usec: 'time_usec' });
    expect(messageClocks('AUTOPILOT_STATE_FOR_GIMBAL_DEVICE')).toEqual({ bootUs: 'time_boot_us' });
    expect(messageClocks('HEARTBEAT')).toEqual({});
  });
});
