import type { LimitEventData } from '@sortie/contracts';
import type { LimitCondition, LimitPhase, LimitRuleRow } from '../db/schema.ts';

/**
 * The state machine of one limit rule on one dataset (docs/decisions/0011-limits.md). Pure: the watcher
 * (watch.ts) feeds it a batch's new samples in order and persists what changed.
 *
 *   clear ──beyond──▶ pending ──still beyond for holdMs──▶ active ──back within──▶ clear
 *     ▲                  │                                 (event stored)      (event ended)
 *     └────back within───┘
 *
 * With holdMs 0 a crossing goes from clear to active on its first sample. "Beyond" is strict: a value
 * equal to its bound is within. The crossing starts when the value first went beyond (the event's time),
 * is stored once it has held, and ends at the first sample back within. A NaN or infinite sample says
 * nothing and changes nothing (JSON, and so the event, cannot carry it). A sample older than the newest one the rule has seen on the dataset is not evaluated:
 * a crossing cannot begin in the past of one already decided.
 */

export interface LimitBound {
  condition: LimitCondition;
  low: number | null;
  high: number | null;
  holdUs: number;
}

export interface CrossingState {
  phase: LimitPhase;
  /** When the value went beyond the bound (pending and active); µs. */
  sinceUs: number | null;
  /** The value farthest beyond the bound since then, and when. */
  worstValue: number | null;
  worstUs: number | null;
  /** The newest sample evaluated; µs. */
  lastUs: number | null;
  /** The LIMIT event of the open crossing (active). */
  eventId: string | null;
}

export const CLEAR: Readonly<CrossingState> = { phase: 'clear', sinceUs: null, worstValue: null, worstUs: null, lastUs: null, eventId: null };

/** What a batch did to a rule's crossings, in order: a crossing held long enough (store its event), or ended (end it). */
export type Transition =
  | { kind: 'started'; startUs: number; worstValue: number; worstUs: number }
  | { kind: 'ended'; startUs: number; endUs: number; worstValue: number; worstUs: number };

export function boundOf(rule: Pick<LimitRuleRow, 'condition' | 'low' | 'high' | 'hold_ms'>): LimitBound {
  return { condition: rule.condition, low: rule.low, high: rule.high, holdUs: rule.hold_ms * 1000 };
}

/** How far beyond the bound `value` is: > 0 beyond, ≤ 0 within. */
export function excess(bound: LimitBound, value: number): number {
  switch (bound.condition) {
    case 'above':
      return value - bound.high!;
    case 'below':
      return bound.low! - value;
    case 'outside':
      return Math.max(value - bound.high!, bound.low! - value);
  }
}

/**
 * Feed one sample. Pushes a transition when a crossing is stored or ends, and answers whether the state
 * changed in a way that must be persisted (phase, start, worst value); only `lastUs` moving is not.
 */
export function step(bound: LimitBound, state: CrossingState, timeUs: number, value: number, out: Transition[]): boolean {
  if (!Number.isFinite(value)) return false;
  if (state.lastUs !== null && timeUs < state.lastUs) return false;
  state.lastUs = timeUs;
  const beyond = excess(bound, value);
  switch (state.phase) {
    case 'clear':
      if (!(beyond > 0)) return false;
      state.sinceUs = timeUs;
      state.worstValue = value;
      state.worstUs = timeUs;
      state.phase = 'pending';
      if (bound.holdUs === 0) activate(state, out);
      return true;
    case 'pending': {
      if (!(beyond > 0)) {
        clear(state);
        return true;
      }
      const worse = beyond > excess(bound, state.worstValue!);
      if (worse) {
        state.worstValue = value;
        state.worstUs = timeUs;
      }
      if (timeUs - state.sinceUs! >= bound.holdUs) {
        activate(state, out);
        return true;
      }
      return worse;
    }
    case 'active':
      if (!(beyond > 0)) {
        out.push({ kind: 'ended', startUs: state.sinceUs!, endUs: timeUs, worstValue: state.worstValue!, worstUs: state.worstUs! });
        clear(state);
        return true;
      }
      if (beyond > excess(bound, state.worstValue!)) {
        state.worstValue = value;
        state.worstUs = timeUs;
        return true;
      }
      return false;
  }
}

function activate(state: CrossingState, out: Transition[]): void {
  state.phase = 'active';
  out.push({ kind: 'started', startUs: state.sinceUs!, worstValue: state.worstValue!, worstUs: state.worstUs! });
}

function clear(state: CrossingState): void {
  state.phase = 'clear';
  state.sinceUs = null;
  state.worstValue = null;
  state.worstUs = null;
  state.eventId = null;
}

/** µs since the epoch as the ISO text events carry (ms precision, like every timestamp the API writes). */
export function isoOfUs(us: number): string {
  return new Date(Math.floor(us / 1000)).toISOString();
}

/** The bound as the message says it: `above 0.5`, `below -3`, `outside [-0.5, 0.5]`. */
export function describeBound(rule: Pick<LimitRuleRow, 'condition' | 'low' | 'high'>): string {
  if (rule.condition === 'above') return `above ${rule.high}`;
  if (rule.condition === 'below') return `below ${rule.low}`;
  return `outside [${rule.low}, ${rule.high}]`;
}

/** The event's message, e.g. `ATTITUDE.roll above 0.5 (critical)`; `label` names the signal for people. */
export function limitMessage(rule: Pick<LimitRuleRow, 'condition' | 'low' | 'high' | 'severity'>, label: string): string {
  return `${label} ${describeBound(rule)} (${rule.severity})`;
}

/** A LIMIT event's data (contracts' LimitEventDataSchema) for a crossing open (`endUs` null) or ended. */
export function limitEventData(
  rule: Pick<LimitRuleRow, 'id' | 'name' | 'signal' | 'severity' | 'condition' | 'low' | 'high' | 'hold_ms'>,
  crossing: { startUs: number; endUs: number | null; worstValue: number; worstUs: number },
): LimitEventData {
  return {
    ruleId: rule.id,
    ruleName: rule.name,
    signal: rule.signal,
    severity: rule.severity,
    condition: rule.condition,
    low: rule.low,
    high: rule.high,
    holdMs: rule.hold_ms,
    start: isoOfUs(crossing.startUs),
    end: crossing.endUs === null ? null : isoOfUs(crossing.endUs),
    worstValue: crossing.worstValue,
    worstTime: isoOfUs(crossing.worstUs),
    active: crossing.endUs === null,
  };
}
