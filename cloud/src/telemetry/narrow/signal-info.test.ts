import { describe, expect, it } from 'vitest';
import { signalInfo } from './signal-info.ts';

describe('signalInfo', () => {
  it('takes type and unit from the pinned dialect', () => {
    expect(signalInfo('mavlink.ATTITUDE.roll')).toEqual({ dataType: 'float', unit: 'rad', kind: 'double' });
    expect(signalInfo('mavlink.ATTITUDE.time_boot_ms')).toEqual({ dataType: 'uint32', unit: 'ms', kind: 'double' });
    expect(signalInfo('mavlink.GLOBAL_POSITION_INT.relative_alt')).toEqual({ dataType: 'int32', unit: 'mm', kind: 'double' });
    expect(signalInfo('mavlink.SYSTEM_TIME.time_unix_usec')).toEqual({ dataType: 'uint64', unit: 'us', kind: 'double' });
    expect(signalInfo('mavlink.HEARTBEAT.mavlink_version')).toMatchObject({ dataType: 'uint32', kind: 'double' });
  });

  it('char arrays are text, numeric arrays are addressed by element, raw payloads are bytes', () => {
    expect(signalInfo('mavlink.STATUSTEXT.text')).toEqual({ dataType: 'string', unit: '', kind: 'text' });
    expect(signalInfo('mavlink.STATUSTEXT.text[0]')).toBeUndefined();
    expect(signalInfo('mavlink.SERVO_OUTPUT_RAW.servo1_raw')).toMatchObject({ dataType: 'uint32', kind: 'double' });
    expect(signalInfo('mavlink.AUTOPILOT_VERSION.flight_custom_version[7]')).toMatchObject({ dataType: 'uint32', kind: 'double' });
    expect(signalInfo('mavlink.AUTOPILOT_VERSION.flight_custom_version[8]')).toBeUndefined();
    expect(signalInfo('mavlink.AUTOPILOT_VERSION.flight_custom_version')).toBeUndefined();
    expect(signalInfo('mavlink.UNKNOWN_300.raw')).toEqual({ dataType: 'bytes', unit: '', kind: 'bytes' });
  });

  it('knows nothing of names the dialect cannot produce', () => {
    expect(signalInfo('mavlink.NO_SUCH_MESSAGE.x')).toBeUndefined();
    expect(signalInfo('mavlink.ATTITUDE.no_such_field')).toBeUndefined();
    expect(signalInfo('ATTITUDE.roll')).toBeUndefined();
  });
});
