// The live view's logic without a browser: how Follow updates fill the window and the track, how the
// command log merges the stream with the list, what a LIMIT event's banner says. The browser test
// (test/console/live.browser.test.ts) checks the same through the page against the real service.
import type { FollowAnswer } from '@sortie/client';
import type { CommandRecord, TimelineEvent } from '@sortie/contracts';
import { describe, expect, it } from 'vitest';
import { answerSeconds, boundText, isLive, joinTail, laterRecord, limitOf, limitsOf, LiveStore, mergeCommands, mergeEvents, valuesAt, worsened } from './live.ts';

const T0 = Date.UTC(2026, 10, 27, 12, 0, 0);
const DATASET = '00000000-0000-4000-8000-000000000001';

const at = (ms: number) => new Date(T0 + ms).toISOString();

/** An update as @sortie/client yields it, with `points[i]` as [ms after T0, value] pairs for channel i. */
function update(over: { reset?: boolean; points?: Array<Array<[number, number]>>; head?: number; events?: object[]; commands?: object[]; dropped?: number }): FollowAnswer {
  return {
    reset: over.reset ?? false,
    series: (over.points ?? []).map((pts, i) => ({ channelId: `c${i}`, points: pts.map(([ms, value]) => ({ timestamp: at(ms), value })), rawPoints: pts.length })),
    head: over.head === undefined ? null : at(over.head),
    events: (over.events ?? []) as never,
    commands: (over.commands ?? []) as never,
    dropped: over.dropped ?? 0,
  };
}

describe('answer times', () => {
  it('reads RFC 3339 with 0, 3, 6 or 9 digits as Unix seconds, keeping the microseconds', () => {
    const whole = Date.UTC(2018, 7, 8, 14, 5, 45) / 1000;
    expect(answerSeconds('2018-08-08T14:05:45Z')).toBe(whole);
    expect(answerSeconds('2018-08-08T14:05:45.465Z')).toBeCloseTo(whole + 0.465, 6);
    // Within half a microsecond: float64 seconds near 2018 resolve ~0.24 µs.
    expect(answerSeconds('2018-08-08T14:05:45.465009Z') - whole).toBeCloseTo(0.465009, 6);
    expect(answerSeconds('2018-08-08T14:05:45.465009001Z') - whole).toBeCloseTo(0.465009, 6);
    expect(answerSeconds('2018-08-08T14:05:46.5Z')).toBe(whole + 1.5);
    expect(answerSeconds('')).toBeNaN();
    expect(answerSeconds(null)).toBeNaN();
  });
});

const secondsAfter = (s: { times: number[] }) => s.times.map((t) => Math.round((t - T0 / 1000) * 1000));

describe('the live store', () => {
  it('opens with the reset window, appends what each commit adds, and slides the window keeping one sample before its edge', () => {
    const store = new LiveStore(DATASET, ['c0'], 10);
    store.apply(update({ reset: true, points: [[[0, 1], [4000, 2], [8000, 3]]], head: 8000 }));
    expect(secondsAfter(store.series.get('c0')!)).toEqual([0, 4000, 8000]);
    store.apply(update({ points: [[[12_000, 4], [16_000, 5]]], head: 16_000 }));
    // The window is 6 s → 16 s; the sample at 4 s stays so the line enters from the left edge.
    expect(secondsAfter(store.series.get('c0')!)).toEqual([4000, 8000, 12_000, 16_000]);
    expect(store.series.get('c0')!.values).toEqual([2, 3, 4, 5]);
    expect(store.head).toBe(T0 / 1000 + 16);
  });

  it('never folds the line back: a sample older than the last held is skipped', () => {
    const store = new LiveStore(DATASET, ['c0'], 60);
    store.apply(update({ reset: true, points: [[[1000, 1], [2000, 2]]], head: 2000 }));
    store.apply(update({ points: [[[1500, 9], [2000, 3], [3000, 4]]], head: 3000 }));
    expect(secondsAfter(store.series.get('c0')!)).toEqual([1000, 2000, 2000, 3000]);
  });

  it('a reset replaces a window channel, but only the part it covers of a keep-all channel (the track so far stays)', () => {
    const store = new LiveStore(DATASET, ['plot', 'lat'], 10, new Set(['lat']));
    store.apply(update({ reset: true, points: [[[0, 1]], [[0, 10], [5000, 11]]], head: 5000 }));
    store.apply(update({ points: [[[30_000, 2]], [[20_000, 12], [30_000, 13]]], head: 30_000 }));
    // Fell behind: the server sends the current window again.
    store.apply(update({ reset: true, points: [[[50_000, 3]], [[25_000, 14], [50_000, 15]]], head: 50_000, dropped: 1 }));
    expect(secondsAfter(store.series.get('plot')!)).toEqual([50_000]);
    expect(secondsAfter(store.series.get('lat')!)).toEqual([0, 5000, 20_000, 25_000, 50_000]);
    expect(store.dropped).toBe(1);
  });

  it('keeps events by id (a LIMIT crossing reported again when it ends replaces the first report)', () => {
    const store = new LiveStore(DATASET, [], 60);
    const limit = (active: boolean, end: string | null) => ({ id: 'e1', time: at(0), kind: 'LIMIT', message: '', data: { signal: 'alt', severity: 'critical', condition: 'above', high: 120, low: null, start: new Date(T0).toISOString(), end, worstValue: 131, worstTime: new Date(T0 + 500).toISOString(), active } });
    store.apply(update({ events: [limit(true, null)] }));
    expect(limitOf(store.events.get('e1')!)?.active).toBe(true);
    store.apply(update({ events: [limit(false, new Date(T0 + 2000).toISOString())] }));
    expect(store.events.size).toBe(1);
    expect(limitOf(store.events.get('e1')!)).toMatchObject({ active: false, end: T0 / 1000 + 2 });
    expect(store.eventsSeen).toBe(2);
    // An update without events leaves the count alone, so views do not merge for nothing.
    store.apply(update({}));
    expect(store.eventsSeen).toBe(2);
  });

  it('keeps a command as the furthest report of it, and drops what is not a command record', () => {
    const store = new LiveStore(DATASET, [], 60);
    store.apply(update({ commands: [command({ status: 'queued', deliveryAttempts: 1 }), { id: 'not a command' }] }));
    store.apply(update({ commands: [command({ status: 'logged' })] }));
    expect([...store.commands.values()].map((c) => c.status)).toEqual(['queued']);
  });
});

function command(over: Partial<CommandRecord>): CommandRecord {
  return {
    id: '00000000-0000-4000-8000-0000000000c1',
    experimentId: '00000000-0000-4000-8000-0000000000e1',
    datasetId: DATASET,
    commandText: 'RTL',
    description: '',
    args: {},
    templateKey: '',
    category: '',
    relTime: 1,
    issuedAt: '2026-11-27T12:00:00.000Z',
    issuedByName: '',
    issuedByEmail: '',
    status: 'logged',
    statusDetail: '',
    queuedAt: null,
    deliveredAt: null,
    ackedAt: null,
    ackDeadlineAt: null,
    vehicleTime: null,
    ackPayload: null,
    deliveryAttempts: 0,
    clientToken: null,
    retractedAt: null,
    retractedReason: null,
    ...over,
  };
}

describe('the command log from two sources', () => {
  it('keeps the report further along whichever arrives last; equal ones take the newer', () => {
    const queued = command({ status: 'queued', queuedAt: '2026-11-27T12:00:01.000Z' });
    const acked = command({ status: 'acked', deliveryAttempts: 1 });
    expect(laterRecord(acked, queued)).toBe(acked);
    expect(laterRecord(queued, acked)).toBe(acked);
    const delivered = command({ status: 'queued', deliveryAttempts: 1, deliveredAt: '2026-11-27T12:00:02.000Z' });
    expect(laterRecord(delivered, queued)).toBe(delivered);
    const again = command({ status: 'queued', deliveryAttempts: 1, deliveredAt: '2026-11-27T12:00:02.000Z', statusDetail: 'x' });
    expect(laterRecord(delivered, again)).toBe(again);
    expect(laterRecord(command({}), command({ retractedAt: '2026-11-27T12:00:03.000Z' })).retractedAt).not.toBeNull();
  });

  it('merges by id in relTime order', () => {
    const a = command({ id: '00000000-0000-4000-8000-00000000000a', relTime: 42 });
    const b = command({ id: '00000000-0000-4000-8000-00000000000b', relTime: 7 });
    const merged = mergeCommands([a], [b, { ...a, status: 'queued' }]);
    expect(merged.map((c) => [c.relTime, c.status])).toEqual([
      [7, 'logged'],
      [42, 'queued'],
    ]);
  });

  it('merges events by id', () => {
    const e = (id: string, message: string) => ({ id, message }) as TimelineEvent;
    expect(mergeEvents([e('1', 'a'), e('2', 'b')], [e('2', 'c'), e('3', 'd')]).map((x) => x.message)).toEqual(['a', 'c', 'd']);
  });
});

describe('limit crossings', () => {
  const event = (data: Record<string, unknown>, kind = 'LIMIT') => ({ id: 'e', datasetId: DATASET, timestamp: '2026-11-27T12:00:00.000Z', kind, message: '', data, createdAt: '' }) as TimelineEvent;
  const base = { ruleName: 'max altitude', signal: 'mavlink.VFR_HUD.alt', severity: 'critical', condition: 'above', low: null, high: 120, holdMs: 500, start: '2026-11-27T12:00:00.000Z', end: null, worstValue: 131.25, worstTime: '2026-11-27T12:00:01.500Z', active: true };

  it('reads what the banner says from the event data', () => {
    const l = limitOf(event(base))!;
    expect(l).toMatchObject({ signal: 'mavlink.VFR_HUD.alt', severity: 'critical', high: 120, worstValue: 131.25, active: true, end: undefined });
    expect(l.worstTime - l.start).toBeCloseTo(1.5, 6);
    expect(boundText(l)).toBe('above 120');
    expect(boundText(limitOf(event({ ...base, condition: 'below', low: 5, high: null }))!)).toBe('below 5');
    expect(boundText(limitOf(event({ ...base, condition: 'outside', low: -1, high: 1 }))!)).toBe('outside -1 … 1');
  });

  it('shows the worst value so far from the followed samples since the crossing began, the farthest beyond the bound', () => {
    const l = limitOf(event(base))!;
    const start = l.start;
    const s = { times: [start - 1, start + 1, start + 2, start + 3], values: [200, 125, 140, 130] };
    expect(worsened(l, s)).toMatchObject({ worstValue: 140, worstTime: start + 2 });
    // Nothing worse than what the service recorded: the crossing as it was.
    expect(worsened(l, { times: [start + 1], values: [121] })).toBe(l);
    const below = limitOf(event({ ...base, condition: 'below', low: 5, high: null, worstValue: 4 }))!;
    expect(worsened(below, { times: [start + 1, start + 2], values: [2, 3] }).worstValue).toBe(2);
    const outside = limitOf(event({ ...base, condition: 'outside', low: -1, high: 1, worstValue: 1.5 }))!;
    expect(worsened(outside, { times: [start + 1, start + 2], values: [-3, 2] }).worstValue).toBe(-3);
    // An ended crossing's worst is the service's, over the whole crossing.
    const ended = limitOf(event({ ...base, end: '2026-11-27T12:00:03.000Z' }))!;
    expect(worsened(ended, s)).toBe(ended);
  });

  it('an ended crossing is not active, whatever its flag says; other events and malformed data are no crossing', () => {
    expect(limitOf(event({ ...base, end: '2026-11-27T12:00:03.000Z' }))!.active).toBe(false);
    expect(limitOf(event({ ...base, severity: 'nonsense' }))!.severity).toBe('warning');
    expect(limitOf(event(base, 'LINK_LOSS'))).toBeUndefined();
    expect(limitOf(event({ ...base, signal: 3 }))).toBeUndefined();
    expect(limitsOf([event(base), event(base, 'NOTE')])).toHaveLength(1);
  });
});

describe('live helpers', () => {
  it('a dataset is live when its telemetry was committed in the last ten seconds of the service clock', () => {
    const now = Date.parse('2026-11-27T12:00:10.000Z');
    expect(isLive('2026-11-27T12:00:00.000Z', now)).toBe(true);
    expect(isLive('2026-11-27T11:59:59.999Z', now)).toBe(false);
    expect(isLive(null, now)).toBe(false);
    expect(isLive(undefined, now)).toBe(false);
  });

  it('continues what was read with the live samples from where they begin', () => {
    const joined = joinTail({ times: [1, 2, 3, 4], values: [10, 20, 30, 40] }, { times: [3, 5], values: [31, 50] });
    expect(joined).toEqual({ times: [1, 2, 3, 5], values: [10, 20, 31, 50] });
    expect(joinTail({ times: [1], values: [10] }, undefined)).toEqual({ times: [1], values: [10] });
  });

  it('reads one field on another field’s times (at or before), NaN before its first sample', () => {
    expect(Array.from(valuesAt([1, 2, 3], [1, 2, 3], [7, 8, 9]))).toEqual([7, 8, 9]);
    expect(Array.from(valuesAt([0, 1.5, 3], [1, 3], [7, 9]))).toEqual([NaN, 7, 9]);
  });
});
