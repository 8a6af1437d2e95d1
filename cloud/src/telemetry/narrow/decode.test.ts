import { readFileSync } from 'node:fs';
import { FIXTURE_DIR } from '@sortie/contracts/testing';
import { join } from 'node:path';
import { MavLinkPacketSplitter, MavLinkProtocolV1, MavLinkProtocolV2 } from 'node-mavlink';
import type { MavLinkData } from 'node-mavlink';
import { describe, expect, it } from 'vitest';
import { crcExtraOf, frameBootTime, MAVLINK_REGISTRY, type MavlinkFrame, MavlinkFramer, messageClassOf, parseSignalName, TlogWalker } from '@sortie/contracts/mavlink';
import fc from 'fast-check';
import { decodeFrame, frameClocks, frameTime, messageLayoutOf, visitFrame, type FrameClocks } from './decode.ts';
import type { DecodedSample } from './decode.ts';

const read = (name: string) => new Uint8Array(readFileSync(join(FIXTURE_DIR, name)));

function feed<T>(walker: { push(c: Uint8Array): T[]; end(): T[] }, data: Uint8Array, size: number): T[] {
  const out: T[] = [];
  for (let i = 0; i < data.length; i += size) out.push(...walker.push(data.subarray(i, i + size)));
  out.push(...walker.end());
  return out;
}

const tlogFrames = (size = Number.MAX_SAFE_INTEGER) =>
  feed(new TlogWalker({ crcExtra: crcExtraOf }), read('arduplane-sitl-vtol.tlog'), size).map((r) => r.frame);
const rawFrames = (name: string, size = Number.MAX_SAFE_INTEGER) => {
  const framer = new MavlinkFramer({ crcExtra: crcExtraOf });
  return { frames: feed(framer, read(name), size), stats: framer.stats };
};

function account(frames: MavlinkFrame[]) {
  let decoded = 0;
  let unknown = 0;
  for (const frame of frames) {
    const samples = decodeFrame(frame);
    if (samples.length === 1 && samples[0]!.signal.startsWith('mavlink.UNKNOWN_')) unknown++;
    else if (samples.length > 0) decoded++;
  }
  return { decoded, unknown, total: frames.length };
}

const bySignal = (samples: DecodedSample[]) => new Map(samples.map((s) => [s.signal, s.value]));

describe('fixtures accounted frame by frame', () => {
  it.each([1, 7, 64, 4096, Number.MAX_SAFE_INTEGER])('arduplane-sitl-vtol.tlog: 23,894 v1 frames at chunk size %i', (size) => {
    const frames = tlogFrames(size);
    expect(account(frames)).toEqual({ decoded: 23894, unknown: 0, total: 23894 });
    expect(frames.every((f) => f.version === 1 && f.sysid === 1 && f.compid === 1)).toBe(true);
  });

  it('ardupilot-v2.mavlink: 1,476 v2 frames, all decoded', () => {
    const { frames, stats } = rawFrames('ardupilot-v2.mavlink');
    expect(account(frames)).toEqual({ decoded: 1476, unknown: 0, total: 1476 });
    expect(frames.every((f) => f.version === 2)).toBe(true);
    expect(stats.bytesDiscarded).toBe(11); // the capture ends 11 bytes into a SYSTEM_TIME frame
  });

  it('px4-mixed-v1v2-junk.bin: 26 v1 + 112 v2 frames, 136 decoded + 2 kept as UNKNOWN, 5 junk bytes', () => {
    for (const size of [1, 64, Number.MAX_SAFE_INTEGER]) {
      const { frames, stats } = rawFrames('px4-mixed-v1v2-junk.bin', size);
      expect(frames.filter((f) => f.version === 1)).toHaveLength(26);
      expect(frames.filter((f) => f.version === 2)).toHaveLength(112);
      expect(account(frames)).toEqual({ decoded: 136, unknown: 2, total: 138 });
      expect(stats.bytesDiscarded).toBe(5);
      const unknown = frames.filter((f) => messageClassOf(f.msgid) === undefined).map((f) => decodeFrame(f));
      expect(unknown.map((s) => s.map((x) => x.signal))).toEqual([['mavlink.UNKNOWN_300.raw'], ['mavlink.UNKNOWN_8.raw']]);
    }
  });

  it('agrees with node-mavlink\'s own splitter on which frames of the raw captures are valid', async () => {
    for (const name of ['ardupilot-v2.mavlink', 'px4-mixed-v1v2-junk.bin']) {
      const splitter = new MavLinkPacketSplitter();
      const theirs: string[] = [];
      splitter.on('data', (packet: { buffer: Buffer }) => theirs.push(packet.buffer.toString('hex')));
      const done = new Promise((resolve) => splitter.on('finish', resolve));
      splitter.end(Buffer.from(read(name)));
      await done;
      const ours = rawFrames(name).frames.filter((f) => f.crcChecked);
      expect(ours.map((f) => Buffer.from(f.bytes).toString('hex'))).toEqual(theirs);
    }
  });
});

describe('decoded values match node-mavlink protocol.data()', () => {
  function reference(frame: MavlinkFrame): MavLinkData {
    const protocol = frame.version === 1 ? new MavLinkProtocolV1() : new MavLinkProtocolV2();
    return protocol.data(protocol.payload(Buffer.from(frame.bytes)), messageClassOf(frame.msgid)!);
  }

  function mismatches(frame: MavlinkFrame): string[] {
    const clazz = messageClassOf(frame.msgid)!;
    const ours = bySignal(decodeFrame(frame));
    const theirs = reference(frame) as unknown as Record<string, unknown>;
    const problems: string[] = [];
    let expected = 0;
    for (const field of clazz.FIELDS) {
      if (field.extension && frame.version === 1) continue;
      const value = theirs[field.name];
      const entries: [string, unknown][] =
        Array.isArray(value) ? value.map((v, i) => [`mavlink.${clazz.MSG_NAME}.${field.source}[${i}]`, v]) : [[`mavlink.${clazz.MSG_NAME}.${field.source}`, value]];
      for (const [signal, v] of entries) {
        expected++;
        if (!Object.is(ours.get(signal), v)) problems.push(`${signal}: ${String(ours.get(signal))} != ${String(v)}`);
      }
    }
    if (ours.size !== expected) problems.push(`${clazz.MSG_NAME}: ${ours.size} samples, expected ${expected}`);
    return problems;
  }

  it('for every decodable frame of all three captures', () => {
    const frames = [...tlogFrames(), ...rawFrames('ardupilot-v2.mavlink').frames, ...rawFrames('px4-mixed-v1v2-junk.bin').frames];
    const problems = frames.filter((f) => messageClassOf(f.msgid)).flatMap(mismatches);
    expect(problems.slice(0, 10)).toEqual([]);
    expect(frames.length).toBe(23894 + 1476 + 138);
  });

  it('ATTITUDE.roll of the first ATTITUDE in the tlog', () => {
    const attitude = tlogFrames().find((f) => f.msgid === 30)!;
    const roll = bySignal(decodeFrame(attitude)).get('mavlink.ATTITUDE.roll');
    expect(roll).toBe((reference(attitude) as unknown as { roll: number }).roll);
    expect(roll).toBeCloseTo(-0.02465, 5);
  });

  it('v2 payloads truncated on the wire, which most of ardupilot-v2.mavlink is', () => {
    const truncated = rawFrames('ardupilot-v2.mavlink').frames.filter(
      (f) => f.payload.length < messageLayoutOf(f.msgid)!.payloadLength,
    );
    expect(truncated.length).toBeGreaterThan(1000);
    expect(truncated.flatMap(mismatches)).toEqual([]);
  });
});

describe('decoding details', () => {
  const tlog = tlogFrames();
  const first = (msgid: number, frames = tlog) => decodeFrame(frames.find((f) => f.msgid === msgid)!);

  it('names signals mavlink.<MESSAGE>.<field> with the XML field names', () => {
    const signals = first(30).map((s) => s.signal);
    expect(signals).toEqual([
      'mavlink.ATTITUDE.time_boot_ms',
      'mavlink.ATTITUDE.roll',
      'mavlink.ATTITUDE.pitch',
      'mavlink.ATTITUDE.yaw',
      'mavlink.ATTITUDE.rollspeed',
      'mavlink.ATTITUDE.pitchspeed',
      'mavlink.ATTITUDE.yawspeed',
    ]);
    expect(first(33).map((s) => s.signal)).toContain('mavlink.GLOBAL_POSITION_INT.relative_alt');
  });

  it('gives one sample per element of a numeric array, indexed [i]', () => {
    const home = bySignal(first(242));
    expect([0, 1, 2, 3].map((i) => typeof home.get(`mavlink.HOME_POSITION.q[${i}]`))).toEqual(['number', 'number', 'number', 'number']);
    expect(home.has('mavlink.HOME_POSITION.q')).toBe(false);
    const px4 = rawFrames('px4-mixed-v1v2-junk.bin').frames;
    const odometry = bySignal(first(331, px4));
    expect([...odometry.keys()].filter((s) => s.startsWith('mavlink.ODOMETRY.pose_covariance['))).toHaveLength(21);
  });

  it('gives one text sample per char array, cut at the first NUL', () => {
    expect(bySignal(first(253)).get('mavlink.STATUSTEXT.text')).toBe('ArduPlane V3.10.0-dev (f2b4e06a)');
    const paramIds = tlog.filter((f) => f.msgid === 22).map((f) => bySignal(decodeFrame(f)).get('mavlink.PARAM_VALUE.param_id'));
    expect(paramIds).toContain('SR0_RAW_SENS');
    expect(paramIds.every((id) => typeof id === 'string' && id.length > 0 && id.length <= 16 && !id.includes('\0'))).toBe(true);
  });

  it('reads 64-bit integers as bigint', () => {
    const unix = bySignal(first(2)).get('mavlink.SYSTEM_TIME.time_unix_usec');
    expect(typeof unix).toBe('bigint');
    expect(new Date(Number((unix as bigint) / 1000n)).toISOString().slice(0, 10)).toBe('2018-08-08');
  });

  it('yields no extension fields for v1 frames and all of them for v2', () => {
    const v1 = bySignal(first(36));
    expect(v1.has('mavlink.SERVO_OUTPUT_RAW.servo8_raw')).toBe(true);
    expect(v1.has('mavlink.SERVO_OUTPUT_RAW.servo9_raw')).toBe(false);
    const v2 = bySignal(first(36, rawFrames('ardupilot-v2.mavlink').frames));
    expect(v2.has('mavlink.SERVO_OUTPUT_RAW.servo16_raw')).toBe(true);
  });

  it('pads a hand-truncated payload with zeros', () => {
    const full = new Uint8Array(28);
    new DataView(full.buffer).setUint32(0, 1234, true);
    new DataView(full.buffer).setFloat32(4, 0.5, true);
    const samples = decodeFrame({ msgid: 30, payload: full.subarray(0, 8) });
    expect(samples.map((s) => s.value)).toEqual([1234, 0.5, 0, 0, 0, 0, 0]);
    expect(decodeFrame({ msgid: 30, payload: full })).toEqual(samples);
  });

  it('keeps an unknown id as one raw sample of the payload bytes', () => {
    const payload = Uint8Array.of(1, 2, 3);
    const [sample, ...rest] = decodeFrame({ msgid: 8, payload });
    expect(rest).toEqual([]);
    expect(sample!.signal).toBe('mavlink.UNKNOWN_8.raw');
    expect(Array.from(sample!.value as Uint8Array)).toEqual([1, 2, 3]);
  });

  it('visitFrame yields the same samples as decodeFrame, with interned signal strings', () => {
    const frame = tlog.find((f) => f.msgid === 30)!;
    const visited: DecodedSample[] = [];
    visitFrame(frame, (signal, value) => visited.push({ signal, value }));
    expect(visited).toEqual(decodeFrame(frame));
    expect(messageLayoutOf(30)!.fields[1]!.signals[0]).toBe(visited[1]!.signal);
  });

  it('compiles every message of the dialect to signal names that parse back', () => {
    for (const id of MAVLINK_REGISTRY.keys()) {
      const layout = messageLayoutOf(id)!;
      for (const field of layout.fields) {
        for (const signal of field.signals) expect(parseSignalName(signal)?.message).toBe(layout.name);
      }
      // Extensions after base fields, which the v1 cut relies on.
      expect(layout.fields.slice(layout.baseFieldCount).every((f) => f.extension)).toBe(true);
      expect(layout.fields.slice(0, layout.baseFieldCount).some((f) => f.extension)).toBe(false);
      expect(decodeFrame({ msgid: id, payload: new Uint8Array(0) })).toHaveLength(layout.sampleCount);
    }
  });
});

describe('frameTime', () => {
  const tlog = tlogFrames();
  const v2 = rawFrames('ardupilot-v2.mavlink').frames;

  it('reads SYSTEM_TIME: GPS time in the tlog, none (0) in the v2 capture', () => {
    const withGps = frameTime(tlog.find((f) => f.msgid === 2)!)!;
    expect(withGps.timeUnixUsec).toBe(1533737145465009n);
    expect(withGps.unixUs).toBe(1533737145465009n);
    expect(withGps.bootUs).toBe(BigInt(withGps.timeBootMs!) * 1000n);
    const noFix = frameTime(v2.find((f) => f.msgid === 2)!)!;
    expect(noFix.timeUnixUsec).toBe(0n);
    expect(noFix.unixUs).toBeUndefined();
    expect(noFix.bootUs).toBeGreaterThan(0n);
  });

  it('reads time_boot_ms and time_usec of any message, nothing from messages without', () => {
    const attitude = tlog.find((f) => f.msgid === 30)!;
    const boot = bySignal(decodeFrame(attitude)).get('mavlink.ATTITUDE.time_boot_ms') as number;
    expect(frameTime(attitude)).toEqual({ timeBootMs: boot, bootUs: BigInt(boot) * 1000n });
    const gps = v2.find((f) => f.msgid === 24)!;
    const usec = bySignal(decodeFrame(gps)).get('mavlink.GPS_RAW_INT.time_usec') as bigint;
    expect(frameTime(gps)!.timeUsec).toBe(usec);
    expect(frameTime(tlog.find((f) => f.msgid === 0)!)).toBeUndefined();
    expect(frameTime({ msgid: 8, payload: new Uint8Array(4) })).toBeUndefined();
  });

  /** frameTime's answer as the ingest path stores it: numbers, NaN where absent or beyond 2^53 µs. */
  function expected(frame: Parameters<typeof frameTime>[0]): FrameClocks {
    const time = frameTime(frame);
    const unix = time?.unixUs !== undefined && time.unixUs <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(time.unixUs) : NaN;
    const gps = time?.timeUnixUsec !== undefined && time.timeUnixUsec !== 0n && time.timeBootMs !== undefined && !Number.isNaN(unix) ? unix - time.timeBootMs * 1000 : NaN;
    return { bootUs: time?.bootUs === undefined ? NaN : Number(time.bootUs), unixUs: unix, gpsOffsetUs: gps };
  }
  const clocksOf = (frame: Parameters<typeof frameTime>[0]) => {
    const out: FrameClocks = { bootUs: 0, unixUs: 0, gpsOffsetUs: 0 };
    frameClocks(frame, out);
    return out;
  };

  it('frameClocks (the ingest path, numbers, nothing allocated) agrees with frameTime on every fixture frame', () => {
    const all = [...tlog, ...v2, ...rawFrames('px4-mixed-v1v2-junk.bin').frames];
    for (const frame of all) expect(clocksOf(frame)).toEqual(expected(frame));
  });

  it('frameClocks agrees with frameTime on random payloads of every message of the dialect (64-bit extremes included)', () => {
    const ids = [...MAVLINK_REGISTRY.keys()].filter((id) => messageLayoutOf(id) !== undefined);
    const u64 = fc.oneof(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), fc.constantFrom(0n, 999_999_999_999_999n, 1_000_000_000_000_000n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n));
    fc.assert(
      fc.property(fc.constantFrom(...ids), fc.uint8Array({ minLength: 280, maxLength: 280 }), fc.array(u64, { minLength: 4, maxLength: 4 }), fc.constantFrom(1, 2), (msgid, bytes, words, version) => {
        // Random bytes, with 64-bit extremes written at every offset a 64-bit time field may sit.
        const view = new DataView(bytes.buffer);
        for (let o = 0, w = 0; o + 8 <= 64; o += 8, w++) view.setBigUint64(o, words[w % words.length]!, true);
        const frame = { msgid, version, payload: bytes.subarray(0, messageLayoutOf(msgid)!.payloadLength) } as Parameters<typeof frameTime>[0];
        expect(clocksOf(frame)).toEqual(expected(frame));
      }),
      { numRuns: 3000, seed: 7 },
    );
  });

  it("agrees with the contracts' frameBootTime, which paces the agent's replay of a raw capture, on every fixture frame and on random payloads", () => {
    const bootOf = (frame: Parameters<typeof frameTime>[0]) => frameBootTime(frame)?.us ?? NaN;
    for (const frame of [...tlog, ...v2, ...rawFrames('px4-mixed-v1v2-junk.bin').frames]) expect(bootOf(frame)).toBe(clocksOf(frame).bootUs);
    const ids = [...MAVLINK_REGISTRY.keys()].filter((id) => messageLayoutOf(id) !== undefined);
    const u64 = fc.oneof(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), fc.constantFrom(0n, 999_999_999_999_999n, 1_000_000_000_000_000n));
    fc.assert(
      fc.property(fc.constantFrom(...ids), fc.uint8Array({ minLength: 280, maxLength: 280 }), fc.array(u64, { minLength: 4, maxLength: 4 }), fc.constantFrom(1, 2), (msgid, bytes, words, version) => {
        const view = new DataView(bytes.buffer);
        for (let o = 0, w = 0; o + 8 <= 64; o += 8, w++) view.setBigUint64(o, words[w % words.length]!, true);
        const frame = { msgid, version, payload: bytes.subarray(0, messageLayoutOf(msgid)!.payloadLength) } as Parameters<typeof frameTime>[0];
        expect(bootOf(frame)).toBe(clocksOf(frame).bootUs);
      }),
      { numRuns: 2000, seed: 11 },
    );
  });

  it('does not report a v1 frame\'s absent extension time_usec', () => {
    const home = tlog.find((f) => f.msgid === 242)!;
    expect(home.version).toBe(1);
    expect(frameTime(home)).toBeUndefined();
  });
});
