import { MSG_ID_MAGIC_NUMBER, ardupilotmega, common } from 'node-mavlink';
import { describe, expect, it } from 'vitest';
import { MAVLINK_REGISTRY, crcExtraOf, messageClassOf } from './registry.ts';

describe('merged MAVLink registry', () => {
  it('merges minimal, standard, common, ardupilotmega, uavionix and icarous', () => {
    expect(messageClassOf(0)?.MSG_NAME).toBe('HEARTBEAT'); // minimal
    expect(messageClassOf(148)?.MSG_NAME).toBe('AUTOPILOT_VERSION'); // standard only
    expect(messageClassOf(30)?.MSG_NAME).toBe('ATTITUDE'); // common
    expect(messageClassOf(163)?.MSG_NAME).toBe('AHRS'); // ardupilotmega
    expect(messageClassOf(10001)?.MSG_NAME).toBe('UAVIONIX_ADSB_OUT_CFG'); // uavionix
    expect(messageClassOf(42000)?.MSG_NAME).toBe('ICAROUS_HEARTBEAT'); // icarous
    // The trap: one dialect module alone is not the dialect.
    expect(ardupilotmega.REGISTRY[30]).toBeUndefined();
    expect(MAVLINK_REGISTRY.size).toBe(298);
  });

  it('gives each known id its CRC_EXTRA and none to ids outside the dialect', () => {
    expect(crcExtraOf(0)).toBe(50);
    expect(crcExtraOf(30)).toBe(39);
    expect(crcExtraOf(148)).toBe(178);
    for (const [id, clazz] of MAVLINK_REGISTRY) {
      expect(crcExtraOf(id)).toBe(clazz.MAGIC_NUMBER);
      expect(crcExtraOf(id)).toBe(MSG_ID_MAGIC_NUMBER[id]);
    }
    for (const id of [8, 300, 65535, 99999, 0xffffff]) expect(crcExtraOf(id)).toBeUndefined();
  });

  it('keeps node-mavlink classes, with the original XML names', () => {
    const attitude = messageClassOf(30)!;
    expect(attitude).toBe(common.Attitude);
    expect(attitude.FIELDS.map((f) => f.source)).toContain('time_boot_ms');
  });
});
