import { TlogWalker, crcExtraOf } from '@sortie/contracts/mavlink';
import { describe, expect, it } from 'vitest';
import { FIXTURES, readFixture } from '../testing/fixtures.ts';
import { LinkLossDetector } from './link-loss-detector.ts';
import type { LinkEvent } from './link-loss-detector.ts';

const S = 1_000_000;

/** Frames every `periodUs` from `from` to `to` (inclusive), ticking at every step as a live clock would. */
function stream(d: LinkLossDetector, sysid: number, from: number, to: number, periodUs: number): LinkEvent[] {
  const events: LinkEvent[] = [];
  for (let t = from; t <= to; t += periodUs) events.push(...d.tick(t), ...d.frame(sysid, t));
  return events;
}

describe('LinkLossDetector', () => {
  it('stays quiet while frames keep coming', () => {
    const d = new LinkLossDetector({ thresholdUs: 5 * S });
    d.watch(1, 0);
    expect(stream(d, 1, 0, 600 * S, S / 10)).toEqual([]);
    expect(d.systems()).toEqual([{ sysid: 1, state: 'up', lastFrameUs: 600 * S }]);
  });

  it('reports exactly one LINK_LOSS per outage, however often it is ticked, then LINK_REGAINED with the duration', () => {
    const d = new LinkLossDetector({ thresholdUs: 5 * S });
    d.watch(1, 0);
    d.frame(1, 10 * S);
    const events: LinkEvent[] = [];
    for (let t = 10 * S; t <= 60 * S; t += S / 4) events.push(...d.tick(t)); // a 50 s silence, ticked 4×/s
    expect(events).toEqual([{ type: 'LINK_LOSS', sysid: 1, lastFrameUs: 10 * S, detectedAtUs: 15 * S, thresholdUs: 5 * S }]);
    expect(d.systems()[0]?.state).toBe('lost');
    expect(d.frame(1, 61 * S)).toEqual([
      { type: 'LINK_REGAINED', sysid: 1, lastFrameUs: 10 * S, regainedAtUs: 61 * S, outageUs: 51 * S },
    ]);
    expect(d.tick(62 * S)).toEqual([]);
  });

  it('counts each of several outages once', () => {
    const d = new LinkLossDetector({ thresholdUs: 5 * S });
    d.watch(1, 0);
    const events = [
      ...stream(d, 1, 0, 20 * S, S),
      ...stream(d, 1, 30 * S, 40 * S, S), // 10 s silence
      ...stream(d, 1, 46 * S, 50 * S, S), // 6 s silence
      ...stream(d, 1, 54 * S, 60 * S, S), // 4 s: under the threshold
    ];
    expect(events.map((e) => `${e.type}@${e.type === 'LINK_LOSS' ? e.lastFrameUs / S : e.regainedAtUs / S}`)).toEqual([
      'LINK_LOSS@20',
      'LINK_REGAINED@30',
      'LINK_LOSS@40',
      'LINK_REGAINED@46',
    ]);
  });

  it('needs silence longer than the threshold, not equal to it', () => {
    const d = new LinkLossDetector({ thresholdUs: 5 * S });
    d.watch(1, 0);
    expect(d.tick(5 * S)).toEqual([]);
    expect(d.tick(5 * S + 1)).toHaveLength(1);
  });

  it('reports a gap seen only when the next frame arrives (no tick in between) as loss and regain', () => {
    const d = new LinkLossDetector({ thresholdUs: 5 * S });
    d.watch(7, 0);
    expect(d.frame(7, 8 * S).map((e) => e.type)).toEqual(['LINK_LOSS', 'LINK_REGAINED']);
    expect(d.frame(7, 9 * S)).toEqual([]);
  });

  it('watches systems independently and ignores unwatched ones', () => {
    const d = new LinkLossDetector({ thresholdUs: 5 * S });
    d.watch(1, 0);
    d.watch(2, 0);
    for (let t = 0; t <= 20 * S; t += S) {
      d.frame(1, t);
      d.frame(255, t); // a ground station: never watched
      if (t <= 3 * S) d.frame(2, t);
    }
    expect(d.tick(20 * S)).toEqual([{ type: 'LINK_LOSS', sysid: 2, lastFrameUs: 3 * S, detectedAtUs: 8 * S, thresholdUs: 5 * S }]);
    expect(d.isWatched(255)).toBe(false);
    // System 2 is already lost and is not reported again; 255 is not watched.
    expect(d.tick(40 * S).map((e) => e.sysid)).toEqual([1]);
  });

  it('measures silence from the latest frame when a recording steps back in time', () => {
    const d = new LinkLossDetector({ thresholdUs: 5 * S });
    d.watch(1, 10 * S);
    d.frame(1, 2 * S);
    expect(d.tick(14 * S)).toEqual([]);
    expect(d.tick(16 * S)).toHaveLength(1);
  });

  describe('on the recorded clock of arduplane-sitl-vtol.tlog (longest silence 4.236 s)', () => {
    const records = new TlogWalker({ crcExtra: crcExtraOf }).push(readFixture(FIXTURES.tlog));

    function replay(thresholdUs: number): LinkEvent[] {
      const d = new LinkLossDetector({ thresholdUs });
      const events: LinkEvent[] = [];
      for (const r of records) {
        const t = Number(r.timestampUs);
        events.push(...d.tick(t));
        if (r.frame.msgid === 0) d.watch(r.frame.sysid, t);
        events.push(...d.frame(r.frame.sysid, t));
      }
      return events;
    }

    it('finds no outage at the 5 s default', () => {
      expect(replay(5 * S)).toEqual([]);
    });

    it('finds exactly the one 4.236 s silence at a 3 s threshold', () => {
      const events = replay(3 * S);
      expect(events.map((e) => e.type)).toEqual(['LINK_LOSS', 'LINK_REGAINED']);
      expect(events[1]).toMatchObject({ sysid: 1, outageUs: 4_236_000 });
      expect(events[0]?.lastFrameUs).toBe(Number(records[2259]!.timestampUs));
    });
  });
});
