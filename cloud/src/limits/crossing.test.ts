import { LimitEventDataSchema } from '@sortie/contracts';
import { describe, expect, it } from 'vitest';
import { CLEAR, excess, limitEventData, limitMessage, step, type CrossingState, type LimitBound, type Transition } from './crossing.ts';

const MS = 1000;

/** Feed samples [ms, value] to a fresh state; the transitions (times in ms) and which samples changed the state. */
function feed(bound: LimitBound, samples: [number, number][], state: CrossingState = { ...CLEAR }) {
  const out: Transition[] = [];
  const changed = samples.map(([ms, v]) => step(bound, state, ms * MS, v, out));
  const inMs = out.map((t) => Object.fromEntries(Object.entries(t).map(([k, v]) => [k, typeof v === 'number' && k.endsWith('Us') ? v / MS : v])));
  return { state, out: inMs, changed };
}

const above = (high: number, holdMs = 0): LimitBound => ({ condition: 'above', low: null, high, holdUs: holdMs * MS });

describe('excess', () => {
  it('is positive only strictly beyond the bound, for each condition', () => {
    expect(excess(above(1), 1)).toBe(0);
    expect(excess(above(1), 1.5)).toBe(0.5);
    expect(excess({ condition: 'below', low: -2, high: null, holdUs: 0 }, -3)).toBe(1);
    expect(excess({ condition: 'below', low: -2, high: null, holdUs: 0 }, -2)).toBe(0);
    const outside: LimitBound = { condition: 'outside', low: -1, high: 1, holdUs: 0 };
    expect(excess(outside, 0)).toBeLessThan(0);
    expect(excess(outside, 3)).toBe(2);
    expect(excess(outside, -4)).toBe(3);
  });
});

describe('step', () => {
  it('hold 0: the first sample beyond starts a crossing, the first back within ends it, with the worst value between', () => {
    const { out, state } = feed(above(0.5), [
      [0, 0.1],
      [10, 0.6],
      [20, 0.9],
      [30, 0.7],
      [40, 0.5],
      [50, 0.8],
    ]);
    expect(out).toEqual([
      { kind: 'started', startUs: 10, worstValue: 0.6, worstUs: 10 },
      { kind: 'ended', startUs: 10, endUs: 40, worstValue: 0.9, worstUs: 20 },
      { kind: 'started', startUs: 50, worstValue: 0.8, worstUs: 50 },
    ]);
    expect(state).toMatchObject({ phase: 'active', sinceUs: 50 * MS, lastUs: 50 * MS });
  });

  it('a crossing counts only once it has held for holdMs; a dip back within before then starts the wait again', () => {
    const { out } = feed(above(10, 100), [
      [0, 11],
      [50, 12],
      [90, 9], // back within before 100 ms: no crossing
      [200, 15],
      [250, 20],
      [299, 16],
      [300, 14], // 100 ms beyond since 200: stored now, starting at 200
      [400, 1],
    ]);
    expect(out).toEqual([
      { kind: 'started', startUs: 200, worstValue: 20, worstUs: 250 },
      { kind: 'ended', startUs: 200, endUs: 400, worstValue: 20, worstUs: 250 },
    ]);
  });

  it('below and outside take the value farthest beyond as the worst', () => {
    expect(feed({ condition: 'below', low: 0, high: null, holdUs: 0 }, [[0, -1], [1, -5], [2, -2], [3, 0]]).out.at(-1)).toMatchObject({ worstValue: -5 });
    // Outside: 3 is 2 beyond high, -4 is 3 beyond low, so -4 is worse.
    expect(feed({ condition: 'outside', low: -1, high: 1, holdUs: 0 }, [[0, 3], [1, -4], [2, 2.5], [3, 0]]).out.at(-1)).toMatchObject({ worstValue: -4, worstUs: 1 });
  });

  it('reports a change only when something to persist moved (not for a sample within, nor a crossing going on no worse)', () => {
    const { changed } = feed(above(0, 1000), [
      [0, -1], // within: nothing
      [1, 1], // pending starts
      [2, 0.5], // pending, not worse
      [3, 2], // pending, worse
      [4, 0.1], // pending, not worse
    ]);
    expect(changed).toEqual([false, true, false, true, false]);
    const active = feed(above(0), [[0, 1], [1, 0.5], [2, 3], [3, -1]]);
    expect(active.changed).toEqual([true, false, true, true]);
  });

  it('ignores samples older than the newest it has seen, and NaN or infinite values', () => {
    const { out, state } = feed(above(0), [
      [100, -1],
      [50, 5], // older: a crossing cannot begin in the past of what was decided
      [100, Number.NaN],
      [110, Number.POSITIVE_INFINITY],
      [120, -1],
    ]);
    expect(out).toEqual([]);
    expect(state).toMatchObject({ phase: 'clear', lastUs: 120 * MS });
    // Samples at the same instant (MAVLink frames read in one chunk share a receive time) all count.
    expect(feed(above(0), [[5, 1], [5, -1], [5, 2]]).out.map((t) => t.kind)).toEqual(['started', 'ended', 'started']);
  });

  it('goes on from a state read back (another batch, a restart, another replica)', () => {
    const first = feed(above(1, 100), [[0, 2], [50, 3]]);
    expect(first.out).toEqual([]);
    const stored = JSON.parse(JSON.stringify(first.state)) as CrossingState;
    const second = feed(above(1, 100), [[100, 2.5], [150, 0]], stored);
    expect(second.out).toEqual([
      { kind: 'started', startUs: 0, worstValue: 3, worstUs: 50 },
      { kind: 'ended', startUs: 0, endUs: 150, worstValue: 3, worstUs: 50 },
    ]);
  });
});

describe('the LIMIT event', () => {
  const rule = { id: '6f1c7e7e-2d7a-4a53-9a0e-0b6a9e3f4b11', name: 'roll', signal: 'mavlink.ATTITUDE.roll', severity: 'critical', condition: 'above', low: null, high: 0.5, hold_ms: 200 } as const;

  it('has the agreed message and data, open and ended', () => {
    expect(limitMessage(rule, 'ATTITUDE.roll')).toBe('ATTITUDE.roll above 0.5 (critical)');
    expect(limitMessage({ ...rule, condition: 'outside', low: -0.5 }, 'ATTITUDE.roll')).toBe('ATTITUDE.roll outside [-0.5, 0.5] (critical)');
    const open = limitEventData(rule, { startUs: Date.UTC(2026, 0, 1) * MS, endUs: null, worstValue: 0.7, worstUs: (Date.UTC(2026, 0, 1) + 40) * MS });
    expect(open).toEqual({
      ruleId: rule.id,
      ruleName: 'roll',
      signal: 'mavlink.ATTITUDE.roll',
      severity: 'critical',
      condition: 'above',
      low: null,
      high: 0.5,
      holdMs: 200,
      start: '2026-01-01T00:00:00.000Z',
      end: null,
      worstValue: 0.7,
      worstTime: '2026-01-01T00:00:00.040Z',
      active: true,
    });
    expect(LimitEventDataSchema.strict().parse(open)).toEqual(open);
    const ended = limitEventData(rule, { startUs: 0, endUs: 1_500_000, worstValue: 0.9, worstUs: 1000 });
    expect(ended).toMatchObject({ end: '1970-01-01T00:00:01.500Z', active: false, worstValue: 0.9 });
  });
});
