import { describe, expect, it } from 'vitest';
import { AckTracker } from './ack-tracker.ts';

describe('AckTracker', () => {
  it('acks only up to the lowest unconfirmed seq of any system', () => {
    const t = new AckTracker(10n);
    expect(t.safeAck()).toBe(10n);
    const sys1 = t.begin();
    const sys2 = t.begin();
    // Interleaved as the spool hands them out: 11 (sys 1), 12 (sys 2), 13 (sys 1), 14 (sys 2).
    t.add(sys1, 11n);
    t.add(sys2, 12n);
    t.add(sys1, 13n);
    t.add(sys2, 14n);
    expect(t.safeAck()).toBe(10n);
    // System 2 answers first: nothing can be acked, 11 is still unconfirmed.
    t.settle(sys2);
    expect(t.safeAck()).toBe(10n);
    t.settle(sys1);
    expect(t.safeAck()).toBe(14n);
  });

  it('lets a later session of one system be confirmed before an earlier one', () => {
    const t = new AckTracker(0n);
    const a = t.begin();
    for (const s of [1n, 2n, 3n]) t.add(a, s);
    const b = t.begin();
    for (const s of [4n, 5n]) t.add(b, s);
    const c = t.begin(); // opened, still empty: holds nothing back
    t.settle(b);
    expect(t.safeAck()).toBe(0n);
    t.settle(a);
    expect(t.safeAck()).toBe(5n);
    t.add(c, 7n);
    expect(t.safeAck()).toBe(6n); // 6 was dropped by the spool or belongs to nobody: not held back
    t.settle(c);
    expect(t.safeAck()).toBe(7n);
    expect(t.unsettled).toBe(0);
  });

  it('stops at a session of a slow system while other systems run far ahead', () => {
    const t = new AckTracker(0n);
    const slow = t.begin();
    t.add(slow, 1n);
    let seq = 2n;
    for (let s = 0; s < 5; s++) {
      const fast = t.begin();
      for (let i = 0; i < 100; i++) t.add(fast, seq++);
      t.settle(fast);
    }
    expect(t.safeAck()).toBe(0n);
    t.settle(slow);
    expect(t.safeAck()).toBe(501n);
  });

  it('moves past a skipped record only when nothing before it is unconfirmed', () => {
    const t = new AckTracker(0n);
    const a = t.begin();
    t.add(a, 1n);
    t.skip(2n);
    expect(t.safeAck()).toBe(0n);
    t.settle(a);
    expect(t.safeAck()).toBe(2n);
  });

  it('refuses seqs out of order and frames added to a confirmed session', () => {
    const t = new AckTracker(5n);
    const a = t.begin();
    expect(() => t.add(a, 5n)).toThrow(RangeError);
    t.add(a, 6n);
    expect(() => t.add(a, 6n)).toThrow(RangeError);
    t.settle(a);
    expect(() => t.add(a, 7n)).toThrow(/already confirmed/);
  });
});
