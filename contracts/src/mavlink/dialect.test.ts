import { MSG_ID_MAGIC_NUMBER, ardupilotmega, common, minimal } from 'node-mavlink';
import { describe, expect, it } from 'vitest';
import { MAVLINK_REGISTRY, crcExtraOf, mergeRegistries, messageClassOf } from './dialect.ts';
import { FIXTURE_CRC_EXTRA } from './mavlink.fixture.ts';

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

  it('agrees with the CRC_EXTRA values the framing tests carry (taken from the XML, not from node-mavlink)', () => {
    for (const [id, extra] of Object.entries(FIXTURE_CRC_EXTRA)) expect(crcExtraOf(Number(id)), `msgid ${id}`).toBe(extra);
  });

  it('keeps node-mavlink classes, with the original XML names', () => {
    const attitude = messageClassOf(30)!;
    expect(attitude).toBe(common.Attitude);
    expect(attitude.FIELDS.map((f) => f.source)).toContain('time_boot_ms');
  });
});

describe('mergeRegistries', () => {
  it('refuses an id two registries define with different classes, naming both', () => {
    // A vendor's own HEARTBEAT: same id and name, another class (another layout, another CRC_EXTRA).
    class OtherHeartbeat extends minimal.Heartbeat {}
    const redefined = { 0: OtherHeartbeat } as unknown as typeof minimal.REGISTRY;
    expect(() => mergeRegistries([['minimal', minimal.REGISTRY], ['vendor', redefined]])).toThrow(
      'MAVLink id 0 defined twice: HEARTBEAT and HEARTBEAT (vendor)',
    );
  });

  it('takes the same class listed by two registries once', () => {
    const merged = mergeRegistries([['minimal', minimal.REGISTRY], ['again', minimal.REGISTRY]]);
    expect([...merged]).toEqual([[0, minimal.Heartbeat]]);
  });
});
