import { describe, expect, it } from 'vitest';
import { TlogWalker } from './tlog.ts';
import type { TlogRecord } from './tlog.ts';
import { buildFrame, concat, feed, fixtureCrcExtra, prng, readFixture } from './mavlink.fixture.ts';

const tlog = readFixture('arduplane-sitl-vtol.tlog');

function walkAll(data: Uint8Array, size: number | (() => number)) {
  const walker = new TlogWalker({ crcExtra: fixtureCrcExtra });
  const records = feed(walker, data, size);
  return { records, stats: { ...walker.stats } };
}

const key = (records: TlogRecord[]) => records.map((r) => `${r.timestampUs}:${Buffer.from(r.frame.bytes).toString('hex')}`);

function timestampBytes(us: bigint): Uint8Array {
  const bytes = new Uint8Array(8);
  new DataView(bytes.buffer).setBigUint64(0, us, false);
  return bytes;
}

describe('TlogWalker on arduplane-sitl-vtol.tlog', () => {
  const whole = walkAll(tlog, tlog.length);

  it.each([1, 7, 64, 4096, 65536, Number.MAX_SAFE_INTEGER])('finds all 23,894 v1 frames at chunk size %i', (size) => {
    const { records, stats } = walkAll(tlog, size);
    expect(records).toHaveLength(23894);
    expect(stats).toEqual({ frames: 23894, bytesDiscarded: 0, crcFailures: 0, unknownIds: 0 });
    expect(records.every((r) => r.frame.version === 1 && r.frame.sysid === 1 && r.frame.compid === 1)).toBe(true);
    expect(key(records)).toEqual(key(whole.records));
  });

  it('accounts for every byte: 8-byte timestamp + frame per record', () => {
    const total = whole.records.reduce((n, r) => n + 8 + r.frame.bytes.length, 0);
    expect(total).toBe(tlog.length);
  });

  it('reads big-endian Unix microsecond timestamps (2018-08-08, about 207.6 s of flight)', () => {
    const first = whole.records[0]!.timestampUs;
    const last = whole.records.at(-1)!.timestampUs;
    expect(new Date(Number(first / 1000n)).toISOString().slice(0, 10)).toBe('2018-08-08');
    expect(Number(last - first) / 1e6).toBeCloseTo(207.6, 0);
    expect(whole.records.every((r, i) => i === 0 || r.timestampUs >= whole.records[i - 1]!.timestampUs)).toBe(true);
  });

  it('gives identical records at random chunk sizes', () => {
    const random = prng(3);
    const reference = key(whole.records);
    for (let run = 0; run < 3; run++) {
      expect(key(walkAll(tlog, () => 1 + Math.floor(random() * 2000)).records)).toEqual(reference);
    }
  });
});

describe('TlogWalker resync and edges', () => {
  const heartbeat = buildFrame({ version: 1, msgid: 0, crcExtra: 50, payload: Uint8Array.from([0, 0, 0, 0, 1, 3, 0x51, 4, 3]) });
  const record = (us: bigint, frame = heartbeat) => concat(timestampBytes(us), frame);

  it('skips junk between records and keeps the records around it', () => {
    const junk = Uint8Array.from([0xfe, 0x09, 0x00, 0x33, 0xfd, 0x01]);
    const data = concat(record(1n), junk, record(2n), record(3n));
    for (const size of [1, 5, 1000]) {
      const { records, stats } = walkAll(data, size);
      expect(records.map((r) => r.timestampUs)).toEqual([1n, 2n, 3n]);
      expect(stats.bytesDiscarded).toBe(junk.length);
    }
  });

  it('keeps a record whose timestamp bytes contain start bytes', () => {
    const us = 0xfefdfefd_fefdfefdn;
    const { records } = walkAll(concat(record(us), record(us)), 1);
    expect(records.map((r) => r.timestampUs)).toEqual([us, us]);
  });

  it('keeps an unknown-id frame confirmed by the next record', () => {
    const unknown = buildFrame({ version: 1, msgid: 250, crcExtra: 77, payload: Uint8Array.of(9, 8, 7) });
    const { records, stats } = walkAll(concat(record(1n), record(2n, unknown), record(3n)), 1);
    expect(records.map((r) => [r.timestampUs, r.frame.msgid, r.frame.crcChecked])).toEqual([
      [1n, 0, true],
      [2n, 250, false],
      [3n, 0, true],
    ]);
    expect(stats.unknownIds).toBe(1);
  });

  it('discards a truncated last record only at the end of the input', () => {
    const walker = new TlogWalker({ crcExtra: fixtureCrcExtra });
    const data = concat(record(1n), record(2n).subarray(0, 12));
    expect(walker.push(data)).toHaveLength(1);
    expect(walker.stats.bytesDiscarded).toBe(0);
    expect(walker.end()).toHaveLength(0);
    expect(walker.stats.bytesDiscarded).toBe(12);
  });
});
