import { describe, expect, it } from 'vitest';
import { CaptureClock } from './capture-clock.ts';

const AUTOPILOT = 256 + 1;
const COMPANION = 256 + 194;

describe('CaptureClock', () => {
  it("places frames at their boot time from the first one, and frames without one at the time reached", () => {
    const clock = new CaptureClock();
    expect(clock.advance(AUTOPILOT, undefined)).toBe(0);
    expect(clock.advance(AUTOPILOT, 16_989_000)).toBe(0);
    expect(clock.advance(AUTOPILOT, 17_390_000)).toBe(401_000);
    expect(clock.advance(AUTOPILOT, undefined)).toBe(401_000);
    expect(clock.advance(AUTOPILOT, 26_989_000)).toBe(10_000_000);
  });

  it("keeps each component on its own clock: a companion's uptime does not move the capture", () => {
    const clock = new CaptureClock();
    clock.advance(AUTOPILOT, 600_000_000);
    clock.advance(AUTOPILOT, 601_000_000);
    // The companion booted long before the autopilot: heard first at 1 s into the capture.
    expect(clock.advance(COMPANION, 9_000_000_000)).toBe(1_000_000);
    expect(clock.advance(AUTOPILOT, 602_000_000)).toBe(2_000_000);
    expect(clock.advance(COMPANION, 9_001_500_000)).toBe(2_500_000);
    // Slightly behind the furthest component: the capture does not go back.
    expect(clock.advance(AUTOPILOT, 602_400_000)).toBe(2_500_000);
  });

  it('ignores a stray frame from behind, and restarts a component whose clock jumps back and stays back (a reboot)', () => {
    const clock = new CaptureClock();
    clock.advance(AUTOPILOT, 100_000_000);
    clock.advance(AUTOPILOT, 110_000_000);
    expect(clock.advance(AUTOPILOT, 6_000_000)).toBe(10_000_000); // a stray
    expect(clock.advance(AUTOPILOT, 110_020_000)).toBe(10_020_000);
    // A reboot: 1.5 s of boot time, then onwards; held at the time reached until three frames agree.
    expect(clock.advance(AUTOPILOT, 1_500_000)).toBe(10_020_000);
    expect(clock.advance(AUTOPILOT, 1_520_000)).toBe(10_020_000);
    expect(clock.advance(AUTOPILOT, 1_540_000)).toBe(10_060_000);
    expect(clock.advance(AUTOPILOT, 2_540_000)).toBe(11_060_000);
  });
});
