import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BootSessions, REBOOT_BACKWARDS_US, REBOOT_CONFIRMATIONS, type BootSession, type FrameClock } from './boot-sessions.ts';

const S = 1_000_000;
const T0 = 1_700_000_000 * S;

/** Frames of compid 1 with boot times (s) received 10 ms after the vehicle's clock, seq from 1. */
function frames(bootSeconds: Array<number | undefined>, options: { compid?: number; firstSeq?: number; receivedAt?: (i: number) => number } = {}): FrameClock[] {
  return bootSeconds.map((boot, i) => ({
    frameSeq: (options.firstSeq ?? 1) + i,
    compid: options.compid ?? 1,
    receivedUs: options.receivedAt?.(i) ?? T0 + i * S,
    ...(boot !== undefined && { bootUs: boot * S }),
  }));
}

/** Feed in parts, the state carried between parts as the writer stores it; the final label of every frame. */
function labels(list: readonly FrameClock[], parts: ReadonlyArray<readonly FrameClock[]> = [list]): { labels: number[]; sessions: BootSession[] } {
  let stored: BootSession[] = [];
  const relabelled = new Map<number, number>();
  for (const part of parts) {
    const sessions = new BootSessions(JSON.parse(JSON.stringify(stored)));
    for (const f of [...part].sort((a, b) => a.frameSeq - b.frameSeq)) sessions.assign(f);
    for (const f of part) relabelled.set(f.frameSeq, sessions.sessionOf(f.compid, f.frameSeq));
    // What the writer's update does to rows stored by earlier parts.
    for (const r of sessions.relabels()) for (const [seq, s] of relabelled) if (s === r.from && seq >= r.fromFrameSeq) relabelled.set(seq, r.to);
    stored = sessions.all();
  }
  return { labels: list.map((f) => relabelled.get(f.frameSeq)!), sessions: stored };
}

describe('BootSessions', () => {
  it('opens session 1 on the first frame and keeps it while boot time moves on', () => {
    const { labels: got, sessions } = labels(frames([undefined, 10, 11, 12, undefined, 13]));
    expect(got).toEqual([1, 1, 1, 1, 1, 1]);
    expect(sessions).toHaveLength(1);
    expect(sessions[0]).toMatchObject({ firstFrameSeq: 1, lastFrameSeq: 6, lastBootUs: 13 * S });
  });

  it(`a jump back of more than 30 s that stays back for ${REBOOT_CONFIRMATIONS} observations is a reboot; up to 30 s is not`, () => {
    const boots = [100, 101, 101 - REBOOT_BACKWARDS_US / S, 102, 5, 6, 7, 200, 201, 202, 3, 4, 5];
    // 71 s is exactly 30 s back from 101: not a reboot. 5, 6, 7 after 102, and 3, 4, 5 after 202, are.
    expect(labels(frames(boots)).labels).toEqual([1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 3, 3, 3]);
  });

  it('one message with an old time in it is not a reboot (PX4 HOME_POSITION-like), nor are two', () => {
    const boots = [12_658, 12_658.1, 6.3, 12_658.2, 12_658.3, 6.3, 6.3, 12_658.4, 12_658.5];
    const { labels: got, sessions } = labels(frames(boots));
    expect(got).toEqual(boots.map(() => 1));
    // The strays do not move the session's clock or its agent offset.
    expect(sessions[0]).toMatchObject({ lastBootUs: 12_658.5 * S, agentOffsetUs: T0 - 12_658 * S });
  });

  it('frames without boot time never open a session after the first; during a candidate they follow its decision', () => {
    expect(labels(frames([500, undefined, 1, undefined, 2, 3, undefined])).labels).toEqual([1, 1, 2, 2, 2, 2, 2]);
    expect(labels(frames([500, undefined, 1, undefined, 501, undefined])).labels).toEqual([1, 1, 1, 1, 1, 1]);
  });

  it('an older frame (redelivery, a gap filled late) joins the session holding its frame_seq and moves no boundary', () => {
    const sessions = new BootSessions([]);
    for (const f of frames([100, 101, 5, 6, 7, 8])) sessions.assign(f);
    // Seq 2 again, with a boot time that would look like a reboot if it moved the clock.
    sessions.assign({ frameSeq: 2, compid: 1, receivedUs: T0, bootUs: 1 * S });
    sessions.assign({ frameSeq: 4, compid: 1, receivedUs: T0, bootUs: 500 * S });
    expect([sessions.sessionOf(1, 2), sessions.sessionOf(1, 4)]).toEqual([1, 2]);
    expect(sessions.all().map((s) => [s.session, s.firstFrameSeq, s.lastFrameSeq, s.lastBootUs])).toEqual([
      [1, 1, 2, 101 * S],
      [2, 3, 6, 8 * S],
    ]);
  });

  it('keeps one boot clock per component; session numbers are unique in the dataset', () => {
    const autopilot = frames([100, 101], { compid: 1 });
    const companion = frames([86_400, 86_401], { compid: 191 });
    const list = [autopilot[0]!, companion[0]!, autopilot[1]!, companion[1]!, ...frames([1, 2, 3], { compid: 191 })].map((f, i) => ({ ...f, frameSeq: i + 1 }));
    const { labels: got, sessions } = labels(list);
    expect(got).toEqual([1, 2, 1, 2, 3, 3, 3]);
    expect(sessions.map((s) => [s.session, s.compid])).toEqual([
      [1, 1],
      [2, 191],
      [3, 191],
    ]);
  });

  it('agent offset is the least receive − boot; gps offset comes from the lowest frame_seq pair', () => {
    const sessions = new BootSessions([]);
    const received = [T0 + 10_050, T0 + S + 10_010, T0 + 2 * S + 10_400];
    sessions.assign({ frameSeq: 10, compid: 1, receivedUs: received[0]!, bootUs: 10_000 });
    sessions.assign({ frameSeq: 11, compid: 1, receivedUs: received[1]!, bootUs: S + 10_000, gpsOffsetUs: 42 });
    sessions.assign({ frameSeq: 12, compid: 1, receivedUs: received[2]!, bootUs: 2 * S + 10_000, gpsOffsetUs: 43 });
    // A late pair with a lower frame_seq wins whatever the arrival order.
    sessions.assign({ frameSeq: 9, compid: 1, receivedUs: T0, gpsOffsetUs: 41 });
    expect(sessions.all()[0]).toMatchObject({ agentOffsetUs: T0 + 10, gpsOffsetUs: 41, gpsOffsetFrameSeq: 9, firstReceivedUs: T0, lastReceivedUs: received[2] });
  });

  it('changes copies, never the sessions it was given (the writer keeps those as its cache until the write commits)', () => {
    // Stop inside a reboot candidate, so the stored clock state holds nested arrays.
    const first = new BootSessions([]);
    for (const f of frames([100, 101, 102, 103, 10])) first.assign(f);
    const stored = first.all();
    expect(stored[0]!.clock?.candidate?.observed).toHaveLength(1);
    const before = JSON.parse(JSON.stringify(stored));
    const next = new BootSessions(stored);
    for (const f of frames([11, 12, 13, 14], { firstSeq: 6 })) next.assign(f);
    expect(next.all()).toHaveLength(2);
    expect(JSON.parse(JSON.stringify(stored))).toEqual(before);
  });

  it('gives the same labels, sessions and offsets whatever the split and however often parts are repeated (property)', () => {
    // Two components, reboots, strays and clockless frames: every split into in-order parts, each part
    // possibly repeating frames already delivered, ends in the same state as one delivery.
    const boot = fc.oneof(fc.constant(undefined), fc.integer({ min: 0, max: 400 }));
    fc.assert(
      fc.property(
        fc.array(fc.record({ boot, compid: fc.constantFrom(1, 1, 1, 191) }), { minLength: 1, maxLength: 60 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        fc.array(fc.nat(), { maxLength: 8 }),
        (spec, cuts, repeats) => {
          const list: FrameClock[] = spec.map((s, i) => ({
            frameSeq: i + 1,
            compid: s.compid,
            receivedUs: T0 + i * 1_000_003,
            ...(s.boot !== undefined && { bootUs: s.boot * S }),
          }));
          const whole = labels(list);
          const points = [...new Set(cuts.map((c) => c % (list.length + 1)))].sort((a, b) => a - b);
          const parts: FrameClock[][] = [];
          let from = 0;
          points.forEach((to, i) => {
            const back = Math.min(from, repeats[i] ?? 0);
            parts.push(list.slice(from - back, Math.max(to, from)));
            from = Math.max(to, from);
          });
          parts.push(list.slice(Math.max(0, from - (repeats.at(-1) ?? 0) % (from + 1)), list.length));
          const split = labels(list, parts);
          expect(split.labels).toEqual(whole.labels);
          expect(split.sessions).toEqual(whole.sessions);
        },
      ),
      { numRuns: 300 },
    );
  });
});
