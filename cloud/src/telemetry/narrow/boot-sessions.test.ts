import { describe, expect, it } from 'vitest';
import { BootSessions, REBOOT_BACKWARDS_US, type BootSession, type FrameClock } from './boot-sessions.ts';

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

function assignAll(sessions: BootSessions, list: FrameClock[]): number[] {
  return list.map((f) => sessions.assign(f));
}

describe('BootSessions', () => {
  it('opens session 1 on the first frame and keeps it while boot time moves on', () => {
    const sessions = new BootSessions([]);
    expect(assignAll(sessions, frames([undefined, 10, 11, 12, undefined, 13]))).toEqual([1, 1, 1, 1, 1, 1]);
    expect(sessions.all()).toHaveLength(1);
    expect(sessions.all()[0]).toMatchObject({ firstFrameSeq: 1, lastFrameSeq: 6, lastBootUs: 13 * S });
  });

  it('a backwards jump of more than 30 s is a reboot; up to 30 s is not', () => {
    const sessions = new BootSessions([]);
    const boots = [100, 101, 101 - REBOOT_BACKWARDS_US / S, 102, 5, 6, 7, 200, 3];
    // 71 s is exactly 30 s back from 101: not a reboot. 5 after 102, and 3 after 200, are.
    expect(assignAll(sessions, frames(boots))).toEqual([1, 1, 1, 1, 2, 2, 2, 2, 3]);
  });

  it('frames without boot time never open a session after the first, and join the current one', () => {
    const sessions = new BootSessions([]);
    expect(assignAll(sessions, frames([500, undefined, 1, undefined]))).toEqual([1, 1, 2, 2]);
  });

  it('continues from stored sessions (state survives batches and streams)', () => {
    const first = new BootSessions([]);
    assignAll(first, frames([100, 101, 102]));
    const stored = first.all();
    const second = new BootSessions(stored);
    expect(assignAll(second, frames([103, 2, 3], { firstSeq: 4 }))).toEqual([1, 2, 2]);
    expect(second.changed().map((s) => s.session)).toEqual([1, 2]);
    // The input is not mutated.
    expect(stored[0]!.lastFrameSeq).toBe(3);
  });

  it('an older frame (redelivery, late second stream) joins the session holding its frame_seq and moves no boundary', () => {
    const sessions = new BootSessions([]);
    assignAll(sessions, frames([100, 101, 5, 6, 7]));
    // Seq 2 again, with a boot time that would look like a reboot if it moved the clock.
    expect(sessions.assign({ frameSeq: 2, compid: 1, receivedUs: T0, bootUs: 1 * S })).toBe(1);
    expect(sessions.assign({ frameSeq: 4, compid: 1, receivedUs: T0, bootUs: 500 * S })).toBe(2);
    expect(sessions.all().map((s) => [s.session, s.firstFrameSeq, s.lastFrameSeq, s.lastBootUs])).toEqual([
      [1, 1, 2, 101 * S],
      [2, 3, 5, 7 * S],
    ]);
  });

  it('keeps one boot clock per component; session numbers are unique in the dataset', () => {
    const sessions = new BootSessions([]);
    const autopilot = frames([100, 101], { compid: 1 });
    const companion = frames([86_400, 86_401], { compid: 191, firstSeq: 3 });
    const interleaved = [autopilot[0]!, companion[0]!, autopilot[1]!, companion[1]!].map((f, i) => ({ ...f, frameSeq: i + 1 }));
    expect(assignAll(sessions, interleaved)).toEqual([1, 2, 1, 2]);
    expect(sessions.assign({ frameSeq: 5, compid: 191, receivedUs: T0, bootUs: 1 * S })).toBe(3);
    expect(sessions.all().map((s) => [s.session, s.compid])).toEqual([
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

  it('gives the same sessions and offsets for a batch delivered whole or in parts, and with parts repeated', () => {
    const list = frames([100, 101, 50, 51, 1, 2, 3, 400, 0], { receivedAt: (i) => T0 + i * 1_000_003 });
    const whole = new BootSessions([]);
    const expected = assignAll(whole, list);

    let stored: BootSession[] = [];
    const got: number[] = [];
    for (const part of [list.slice(0, 3), list.slice(1, 6), list.slice(6)]) {
      const sessions = new BootSessions(stored);
      const ids = assignAll(sessions, part);
      part.forEach((f, i) => (got[f.frameSeq - 1] = ids[i]!));
      stored = sessions.all();
    }
    expect(got).toEqual(expected);
    expect(stored).toEqual(whole.all());
  });
});
