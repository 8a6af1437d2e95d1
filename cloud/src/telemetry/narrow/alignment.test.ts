import { describe, expect, it } from 'vitest';
import { alignAgentTime, alignedUs, sessionShift } from './alignment.ts';
import type { BootSession } from './boot-sessions.ts';

const S = 1_000_000;
const GPS_EPOCH = 1_533_736_536 * S; // unix − boot of a vehicle with GPS time
const AGENT_EPOCH = 1_533_736_552 * S; // receive − boot: the agent's clock runs 16 s ahead of GPS

function session(overrides: Partial<BootSession>): BootSession {
  return {
    session: 1,
    compid: 1,
    firstFrameSeq: 1,
    lastFrameSeq: 100,
    lastBootUs: null,
    gpsOffsetUs: null,
    gpsOffsetFrameSeq: null,
    agentOffsetUs: null,
    firstReceivedUs: 0,
    lastReceivedUs: 0,
    clock: null,
    ...overrides,
  };
}

describe('sessionShift / alignedUs', () => {
  it('with GPS time: boot rows shift by the GPS offset, agent rows by GPS − agent, GPS rows not at all', () => {
    const shift = sessionShift(session({ gpsOffsetUs: GPS_EPOCH, agentOffsetUs: AGENT_EPOCH }));
    expect(shift).toEqual({ session: 1, bootShiftUs: GPS_EPOCH, agentShiftUs: GPS_EPOCH - AGENT_EPOCH, basis: 'gps' });
    expect(alignedUs('boot', 600 * S, shift)).toBe(GPS_EPOCH + 600 * S);
    // A frame received at boot 600 s (by the agent's clock) lands where boot 600 s does.
    expect(alignedUs('agent', AGENT_EPOCH + 600 * S, shift)).toBe(GPS_EPOCH + 600 * S);
    expect(alignedUs('gps', GPS_EPOCH + 600 * S, shift)).toBe(GPS_EPOCH + 600 * S);
  });

  it('without GPS time: boot rows take the agent offset, agent rows stay on receive time', () => {
    const shift = sessionShift(session({ agentOffsetUs: AGENT_EPOCH }));
    expect(shift.basis).toBe('agent');
    expect(alignedUs('boot', 5 * S, shift)).toBe(AGENT_EPOCH + 5 * S);
    expect(alignedUs('agent', AGENT_EPOCH + 7 * S, shift)).toBe(AGENT_EPOCH + 7 * S);
  });

  it('a session with no clock pair is identity; so is an unknown session', () => {
    const shift = sessionShift(session({}));
    expect(shift).toMatchObject({ bootShiftUs: 0, agentShiftUs: 0, basis: 'none' });
    expect(alignedUs('boot', 5 * S, undefined)).toBe(5 * S);
  });
});

describe('alignAgentTime (annotations)', () => {
  const a = session({ session: 1, gpsOffsetUs: GPS_EPOCH, agentOffsetUs: AGENT_EPOCH, firstReceivedUs: 1000 * S, lastReceivedUs: 2000 * S });
  const b = session({ session: 2, agentOffsetUs: AGENT_EPOCH + 3000 * S, firstReceivedUs: 3000 * S, lastReceivedUs: 4000 * S });

  it('shifts like an agent row of the session whose receive range holds the time', () => {
    expect(alignAgentTime(1500 * S, [a, b])).toBe(1500 * S + GPS_EPOCH - AGENT_EPOCH);
    expect(alignAgentTime(3500 * S, [a, b])).toBe(3500 * S);
  });

  it('uses the nearest session outside every range, and identity with no session', () => {
    expect(alignAgentTime(2100 * S, [a, b])).toBe(2100 * S + GPS_EPOCH - AGENT_EPOCH);
    expect(alignAgentTime(2900 * S, [a, b])).toBe(2900 * S);
    expect(alignAgentTime(5 * S, [])).toBe(5 * S);
  });

  it('prefers a session with GPS time when two hold the time (two components)', () => {
    const companion = session({ session: 3, compid: 191, agentOffsetUs: 7, firstReceivedUs: 1000 * S, lastReceivedUs: 2000 * S });
    expect(alignAgentTime(1500 * S, [companion, a])).toBe(1500 * S + GPS_EPOCH - AGENT_EPOCH);
  });
});
