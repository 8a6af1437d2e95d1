import { describe, expect, it } from 'vitest';
import { MavlinkFramer, parseSingleFrame } from './framer.ts';
import type { MavlinkFrame } from './framer.ts';
import { buildFrame, concat, feed, fixtureCrcExtra, prng, readFixture } from './mavlink.fixture.ts';

const CHUNK_SIZES = [1, 2, 7, 64, 4096, Number.MAX_SAFE_INTEGER];
const HEARTBEAT = { msgid: 0, crcExtra: 50, payload: Uint8Array.from([3, 0, 0, 0, 1, 3, 0x51, 4, 3]) };
// An id no dialect defines, with a CRC_EXTRA the framer cannot know.
const UNKNOWN_ID = 0x00abcd;

function frameAll(data: Uint8Array, size: number | (() => number), options = { crcExtra: fixtureCrcExtra }) {
  const framer = new MavlinkFramer(options);
  const frames = feed(framer, data, size);
  return { frames, stats: { ...framer.stats } };
}

const hex = (frames: MavlinkFrame[]) => frames.map((f) => Buffer.from(f.bytes).toString('hex'));

/** Every input byte is either inside exactly one frame or counted as discarded. */
function expectAccounted(data: Uint8Array, frames: MavlinkFrame[], discarded: number) {
  expect(frames.reduce((n, f) => n + f.bytes.length, 0) + discarded).toBe(data.length);
}

describe('MavlinkFramer on real captures', () => {
  const v2 = readFixture('ardupilot-v2.mavlink');
  const px4 = readFixture('px4-mixed-v1v2-junk.bin');
  const whole = frameAll(v2, v2.length);

  it.each(CHUNK_SIZES)('ardupilot-v2.mavlink: 1,476 v2 frames at chunk size %i', (size) => {
    const { frames, stats } = frameAll(v2, size);
    expect(frames).toHaveLength(1476);
    expect(frames.every((f) => f.version === 2 && f.crcChecked && f.sysid === 1 && f.compid === 1)).toBe(true);
    // The capture ends inside a SYSTEM_TIME frame: its 11 bytes are all that is discarded.
    expect(stats).toEqual({ frames: 1476, bytesDiscarded: 11, crcFailures: 0, unknownIds: 0 });
    expectAccounted(v2, frames, stats.bytesDiscarded);
    expect(hex(frames)).toEqual(hex(whole.frames));
  });

  it.each(CHUNK_SIZES)('px4-mixed-v1v2-junk.bin: 26 v1 + 112 v2 frames, 5 junk bytes at chunk size %i', (size) => {
    const { frames, stats } = frameAll(px4, size);
    expect(frames.filter((f) => f.version === 1)).toHaveLength(26);
    expect(frames.filter((f) => f.version === 2)).toHaveLength(112);
    expect(stats).toEqual({ frames: 138, bytesDiscarded: 5, crcFailures: 0, unknownIds: 2 });
    // The two ids no dialect defines (8, and 300 = PROTOCOL_VERSION, absent from node-mavlink's tables).
    expect(frames.filter((f) => !f.crcChecked).map((f) => f.msgid)).toEqual([300, 8]);
    const first = frames[0]!.bytes;
    expect(Array.from(first)).toEqual(Array.from(px4.subarray(5, 5 + first.length)));
    expectAccounted(px4, frames, stats.bytesDiscarded);
  });

  it('gives identical frames at random chunk sizes', () => {
    const random = prng(7);
    for (const data of [v2, px4]) {
      const reference = hex(frameAll(data, data.length).frames);
      for (let run = 0; run < 5; run++) {
        expect(hex(frameAll(data, () => 1 + Math.floor(random() * 300)).frames)).toEqual(reference);
      }
    }
  });

  it('walks clean captures by length alone when no CRC_EXTRA is known (lookahead policy)', () => {
    for (const size of [1, 64, Number.MAX_SAFE_INTEGER]) {
      const { frames, stats } = frameAll(v2, size, { crcExtra: () => undefined });
      expect(frames).toHaveLength(1476);
      expect(frames.every((f) => !f.crcChecked)).toBe(true);
      expect(stats.unknownIds).toBe(1476);
      expect(hex(frames)).toEqual(hex(whole.frames));
    }
  });

  it('reads header fields and leaves payloads as on the wire', () => {
    const first = whole.frames[0]!;
    expect(first).toMatchObject({ version: 2, msgid: 0, sysid: 1, compid: 1, incompatFlags: 0, signed: false });
    expect(first.payload).toHaveLength(v2[1]!);
    expect(first.bytes.length).toBe(10 + v2[1]! + 2);
    const seqs = whole.frames.slice(0, 3).map((f) => f.seq);
    expect(seqs[1]).toBe((seqs[0]! + 1) & 0xff);
  });
});

describe('MavlinkFramer resync', () => {
  const frames = frameAll(readFixture('ardupilot-v2.mavlink'), Number.MAX_SAFE_INTEGER).frames.slice(0, 300);

  function withJunk(seed: number, noise: (random: () => number) => number) {
    const random = prng(seed);
    const parts: Uint8Array[] = [];
    let junk = 0;
    for (const frame of frames) {
      const n = Math.floor(random() * 40);
      junk += n;
      parts.push(Uint8Array.from({ length: n }, () => noise(random)), frame.bytes);
    }
    return { data: concat(...parts), junk };
  }

  it('recovers every frame from between uniform random junk and invents none', () => {
    const { data, junk } = withJunk(42, (random) => Math.floor(random() * 256));
    for (const size of [1, 13, 4096, data.length]) {
      const result = frameAll(data, size);
      expect(hex(result.frames)).toEqual(hex(frames));
      expect(result.stats.bytesDiscarded).toBe(junk);
    }
  });

  it('loses no real frame in junk full of start bytes, and invents only unchecked ones', () => {
    // 30% start bytes and 10% zeros: many candidate headers, the worst case for a length walk. Junk
    // whose length byte lands exactly on the next frame is indistinguishable from an unknown-id frame,
    // so a few may be kept, but never one that claims a CRC and never at the cost of a real frame.
    const { data } = withJunk(43, (random) => {
      const r = random();
      return r < 0.15 ? 0xfd : r < 0.3 ? 0xfe : r < 0.4 ? 0 : Math.floor(random() * 256);
    });
    const real = new Set(hex(frames));
    for (const size of [1, 13, 4096, data.length]) {
      const result = frameAll(data, size);
      const checked = result.frames.filter((f) => f.crcChecked);
      expect(hex(checked)).toEqual(hex(frames));
      const invented = result.frames.filter((f) => !real.has(hex([f])[0]!));
      expect(invented.every((f) => !f.crcChecked)).toBe(true);
      expect(invented.length).toBeLessThan(frames.length / 20);
      expect(result.stats.crcFailures).toBeGreaterThan(0);
      expectAccounted(data, result.frames, result.stats.bytesDiscarded);
    }
  });

  it('drops a corrupted frame, counts a CRC failure and keeps its neighbours', () => {
    const corrupted = frames[1]!.bytes.slice();
    corrupted[12]! ^= 0x40;
    const data = concat(frames[0]!.bytes, corrupted, frames[2]!.bytes);
    const result = frameAll(data, 1);
    expect(hex(result.frames)).toEqual(hex([frames[0]!, frames[2]!]));
    expect(result.stats.crcFailures).toBe(1);
    expect(result.stats.bytesDiscarded).toBe(corrupted.length);
  });

  it('rejects v2 frames with incompat flags it does not understand', () => {
    const odd = buildFrame({ ...HEARTBEAT, incompatFlags: 0x02 });
    const ok = buildFrame(HEARTBEAT);
    const result = frameAll(concat(odd, ok), Number.MAX_SAFE_INTEGER);
    expect(hex(result.frames)).toEqual([Buffer.from(ok).toString('hex')]);
    expect(result.stats.bytesDiscarded).toBe(odd.length);
  });

  it('discards a truncated frame at the end of the input only when the input ends', () => {
    const ok = buildFrame(HEARTBEAT);
    const framer = new MavlinkFramer({ crcExtra: fixtureCrcExtra });
    expect(framer.push(concat(ok, ok.subarray(0, 6)))).toHaveLength(1);
    expect(framer.stats.bytesDiscarded).toBe(0);
    expect(framer.end()).toHaveLength(0);
    expect(framer.stats.bytesDiscarded).toBe(6);
  });
});

describe('MavlinkFramer unknown-id policy', () => {
  const known = buildFrame(HEARTBEAT);
  const unknown = buildFrame({ msgid: UNKNOWN_ID, crcExtra: 99, payload: Uint8Array.from([1, 2, 3, 4, 5]) });

  it('keeps an unknown-id frame confirmed by the next frame, unchecked', () => {
    for (const size of [1, 3, 1000]) {
      const { frames, stats } = frameAll(concat(known, unknown, known), size);
      expect(frames.map((f) => [f.msgid, f.crcChecked])).toEqual([
        [0, true],
        [UNKNOWN_ID, false],
        [0, true],
      ]);
      expect(Array.from(frames[1]!.payload)).toEqual([1, 2, 3, 4, 5]);
      expect(stats.unknownIds).toBe(1);
    }
  });

  it('waits for lookahead in a live stream and settles at the end of the input', () => {
    const framer = new MavlinkFramer({ crcExtra: fixtureCrcExtra });
    expect(framer.push(concat(known, unknown)).map((f) => f.msgid)).toEqual([0]);
    expect(framer.end().map((f) => f.msgid)).toEqual([UNKNOWN_ID]);
  });

  it('keeps a run of unknown-id frames', () => {
    const run = concat(known, unknown, unknown, unknown, unknown, unknown, unknown, known);
    expect(frameAll(run, 1).frames.map((f) => f.crcChecked)).toEqual([true, false, false, false, false, false, false, true]);
  });

  it('does not accept an unknown-id frame followed by garbage', () => {
    const garbage = Uint8Array.from([0x11, 0x22, 0x33, 0x44]);
    const { frames, stats } = frameAll(concat(known, unknown, garbage, known), 1);
    expect(frames.map((f) => f.msgid)).toEqual([0, 0]);
    expect(stats.bytesDiscarded).toBe(unknown.length + garbage.length);
  });

  it('does not accept an unknown-id frame whose follower fails its CRC', () => {
    const bad = buildFrame({ ...HEARTBEAT, crcExtra: 51 });
    const { frames } = frameAll(concat(known, unknown, bad, known), 1);
    expect(frames.map((f) => f.msgid)).toEqual([0, 0]);
  });

  it('does not invent frames from junk shaped like an unknown-id header', () => {
    // 0xFD, a length, flags 0, then ids no dialect knows: the claimed length does not land on a frame.
    const junk = Uint8Array.from([0xfd, 0x03, 0x00, 0x00, 0x07, 0x01, 0x01, 0x99, 0x99, 0x99, 0xfd, 0x40, 0x00]);
    const { frames, stats } = frameAll(concat(junk, known, known), 1);
    expect(frames.map((f) => [f.msgid, f.crcChecked])).toEqual([
      [0, true],
      [0, true],
    ]);
    expect(stats.bytesDiscarded).toBe(junk.length);
  });
});

describe('MavlinkFramer signed frames', () => {
  it('frames a signed v2 frame together with its 13-byte signature', () => {
    const signature = Uint8Array.from({ length: 13 }, (_, i) => 0xa0 + i);
    const signed = buildFrame({ ...HEARTBEAT, incompatFlags: 0x01, signature });
    const plain = buildFrame(HEARTBEAT);
    for (const size of [1, 5, 1000]) {
      const { frames, stats } = frameAll(concat(signed, plain), size);
      expect(frames).toHaveLength(2);
      const [first, second] = frames as [MavlinkFrame, MavlinkFrame];
      expect(first).toMatchObject({ version: 2, msgid: 0, signed: true, incompatFlags: 1, crcChecked: true });
      expect(first.bytes).toHaveLength(10 + 9 + 2 + 13);
      expect(Array.from(first.bytes.subarray(-13))).toEqual(Array.from(signature));
      expect(Array.from(first.payload)).toEqual(Array.from(HEARTBEAT.payload));
      expect(second.signed).toBe(false);
      expect(stats.bytesDiscarded).toBe(0);
    }
  });
});

describe('MavlinkFramer v1', () => {
  it('frames hand-built v1 frames', () => {
    const v1 = buildFrame({ ...HEARTBEAT, version: 1, seq: 9, sysid: 3, compid: 190 });
    const { frames } = frameAll(concat(v1, v1), 1);
    expect(frames).toHaveLength(2);
    expect(frames[0]).toMatchObject({ version: 1, msgid: 0, seq: 9, sysid: 3, compid: 190, signed: false, crcChecked: true });
  });
});

describe('parseSingleFrame', () => {
  const frame = buildFrame(HEARTBEAT);

  it('accepts exactly one complete frame', () => {
    const result = parseSingleFrame(frame, fixtureCrcExtra);
    expect(result.ok && result.frame.msgid === 0 && result.frame.crcChecked).toBe(true);
  });

  it('names what is wrong', () => {
    expect(parseSingleFrame(new Uint8Array(0))).toEqual({ ok: false, reason: 'start-byte' });
    expect(parseSingleFrame(concat(Uint8Array.of(0), frame))).toEqual({ ok: false, reason: 'start-byte' });
    expect(parseSingleFrame(frame.subarray(0, -1))).toEqual({ ok: false, reason: 'length' });
    expect(parseSingleFrame(concat(frame, frame))).toEqual({ ok: false, reason: 'length' });
    expect(parseSingleFrame(buildFrame({ ...HEARTBEAT, crcExtra: 1 }), fixtureCrcExtra)).toEqual({ ok: false, reason: 'crc' });
    expect(parseSingleFrame(buildFrame({ ...HEARTBEAT, incompatFlags: 4 }))).toEqual({ ok: false, reason: 'incompat-flags' });
  });

  it('returns an unknown id unchecked', () => {
    const result = parseSingleFrame(buildFrame({ msgid: UNKNOWN_ID, crcExtra: 7, payload: Uint8Array.of(1) }), fixtureCrcExtra);
    expect(result.ok && !result.frame.crcChecked && result.frame.msgid === UNKNOWN_ID).toBe(true);
  });
});
