import { describe, expect, it } from 'vitest';
import { ReplayPacer } from './replay-pacer.ts';

const S = 1_000_000;

function fakeMono(): { now: () => number; advance: (ms: number) => void } {
  let t = 1000;
  return { now: () => t, advance: (ms) => (t += ms) };
}

describe('ReplayPacer', () => {
  it('spaces records by their recorded stamps divided by the speed', () => {
    const mono = fakeMono();
    const pacer = new ReplayPacer(2, mono.now);
    expect(pacer.delayFor(100 * S)).toBe(0);
    pacer.emitted(100 * S);
    expect(pacer.delayFor(101 * S)).toBe(500);
    mono.advance(500);
    pacer.emitted(101 * S);
    expect(pacer.delayFor(101.5 * S)).toBe(250);
  });

  it('does not wait for records that are already late', () => {
    const mono = fakeMono();
    const pacer = new ReplayPacer(1, mono.now);
    pacer.delayFor(0);
    pacer.emitted(0);
    mono.advance(5000);
    expect(pacer.delayFor(1 * S)).toBe(0);
  });

  it('runs the replay clock on while waiting, but never past the next record', () => {
    const mono = fakeMono();
    const pacer = new ReplayPacer(1, mono.now);
    pacer.delayFor(10 * S);
    pacer.emitted(10 * S);
    expect(pacer.delayFor(20 * S)).toBe(10_000); // a 10 s gap in the recording
    mono.advance(6000);
    expect(pacer.now()).toBe(16 * S); // so a 5 s link-loss threshold fires during the wait
    mono.advance(60_000);
    expect(pacer.now()).toBe(20 * S);
  });

  it('keeps the clock on the last record handed out while the pipeline is busy', () => {
    const mono = fakeMono();
    const pacer = new ReplayPacer(1, mono.now);
    pacer.delayFor(10 * S);
    pacer.emitted(10 * S);
    mono.advance(30_000); // e.g. the disk stalled: no record was due, no time may pass
    expect(pacer.now()).toBe(10 * S);
  });

  it('at max speed never waits and the clock is the last stamp', () => {
    const mono = fakeMono();
    const pacer = new ReplayPacer('max', mono.now);
    expect(pacer.delayFor(5 * S)).toBe(0);
    pacer.emitted(5 * S);
    expect(pacer.delayFor(500 * S)).toBe(0);
    mono.advance(10_000);
    expect(pacer.now()).toBe(5 * S);
  });

  it('re-anchors when the recording steps back in time', () => {
    const mono = fakeMono();
    const pacer = new ReplayPacer(1, mono.now);
    pacer.delayFor(100 * S);
    pacer.emitted(100 * S);
    expect(pacer.delayFor(50 * S)).toBe(0);
    pacer.emitted(50 * S);
    expect(pacer.delayFor(51 * S)).toBe(1000);
  });

  it('refuses a speed that is not positive', () => {
    expect(() => new ReplayPacer(0)).toThrow(RangeError);
  });
});
