import { MavlinkFramer, TlogWalker, crcExtraOf } from '@sortie/contracts/mavlink';
import { describe, expect, it } from 'vitest';
import { FIXTURES, prng, readFixture } from '../testing/fixtures.ts';
import { PositionedFramer, PositionedTlogWalker } from './positioned-walkers.ts';

function feed<T>(walker: { push(c: Uint8Array): T[]; end(): T[] }, data: Uint8Array, size: () => number): T[] {
  const out: T[] = [];
  for (let i = 0; i < data.length; ) {
    const n = size();
    out.push(...walker.push(data.subarray(i, i + n)));
    i += n;
  }
  out.push(...walker.end());
  return out;
}

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

describe('PositionedFramer', () => {
  it.each([FIXTURES.v2, FIXTURES.px4Junk])('%s: each frame sits at its reported range, at any chunking', (name) => {
    const data = readFixture(name);
    const reference = feed(new MavlinkFramer({ crcExtra: crcExtraOf }), data, () => data.length);
    const random = prng(11);
    for (const size of [() => 1, () => 7, () => 1 + Math.floor(random() * 600), () => data.length]) {
      const frames = feed(new PositionedFramer({ crcExtra: crcExtraOf }), data, size);
      expect(frames.map((f) => hex(f.frame.bytes))).toEqual(reference.map((f) => hex(f.bytes)));
      expect(frames.filter((f) => hex(data.subarray(f.start, f.end)) !== hex(f.frame.bytes))).toEqual([]);
    }
  });

  it('offsets by base, as when a replay resumes mid-file', () => {
    const data = readFixture(FIXTURES.v2);
    const all = feed(new PositionedFramer({ crcExtra: crcExtraOf }), data, () => 100);
    const cut = all[500]!.end;
    const rest = feed(new PositionedFramer({ crcExtra: crcExtraOf, base: cut }), data.subarray(cut), () => 333);
    expect(rest.map((f) => [f.start, f.end])).toEqual(all.slice(501).map((f) => [f.start, f.end]));
  });
});

describe('PositionedTlogWalker', () => {
  it('reports each record range and timestamp like TlogWalker, at any chunking', () => {
    const data = readFixture(FIXTURES.tlog);
    const reference = feed(new TlogWalker({ crcExtra: crcExtraOf }), data, () => data.length);
    expect(reference).toHaveLength(23_894);
    const random = prng(5);
    for (const size of [() => 1 + Math.floor(random() * 5000), () => 65_536]) {
      const records = feed(new PositionedTlogWalker({ crcExtra: crcExtraOf }), data, size);
      expect(records.map((r) => r.timestampUs)).toEqual(reference.map((r) => r.timestampUs));
      let expectedStart = 0;
      let misplaced = 0;
      for (const r of records) {
        // Records are back to back in this capture: no junk anywhere.
        if (r.start !== expectedStart || Buffer.compare(data.subarray(r.end - r.frame.bytes.length, r.end), r.frame.bytes) !== 0) misplaced++;
        expectedStart = r.end;
      }
      expect(misplaced).toBe(0);
      expect(expectedStart).toBe(data.length);
    }
  });
});
