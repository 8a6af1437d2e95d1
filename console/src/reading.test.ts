// What the plots read and mark, without a browser: display units, the readout's value at the cursor,
// the value ticks' step, and where a command and each kind of mark go (reading.browser.test.ts checks
// the page built on these).
import type { CommandRecord, TimelineEvent } from '@sortie/contracts';
import { describe, expect, it } from 'vitest';
import { displayUnit, formatValue } from './format.ts';
import { markColour, markName, marksOf, relTimeText, type TimelineMark } from './marks.ts';
import { readingAt, valueTickStep } from './reading.ts';

describe('display units', () => {
  it('shows the units the dialect stores integers or radians in as degrees, metres, m/s and volts', () => {
    expect(displayUnit('rad')).toEqual({ unit: 'deg', scale: 180 / Math.PI });
    expect(displayUnit('degE7')).toEqual({ unit: 'deg', scale: 1e-7, decimals: 7 });
    expect(displayUnit('cdeg')).toEqual({ unit: 'deg', scale: 0.01, decimals: 2 });
    expect(displayUnit('mm')).toEqual({ unit: 'm', scale: 0.001, decimals: 3 });
    expect(displayUnit('cm/s')).toEqual({ unit: 'm/s', scale: 0.01, decimals: 2 });
    expect(displayUnit('mV')).toEqual({ unit: 'V', scale: 0.001, decimals: 3 });
    // Anything else is shown as stored.
    expect(displayUnit('m/s')).toEqual({ unit: 'm/s', scale: 1 });
    expect(displayUnit('')).toEqual({ unit: '', scale: 1 });
  });

  it("formats a value to its stored unit's resolution, else to six significant digits", () => {
    expect(formatValue(473_977_420 * 1e-7, 7)).toBe('47.3977420');
    expect(formatValue(12_600 * 0.001, 3)).toBe('12.600');
    expect(formatValue((0.3 * 180) / Math.PI)).toBe('17.1887');
    expect(formatValue(-0.000123456)).toBe('-0.000123456');
    expect(formatValue(1234567.89)).toBe('1234570');
    expect(formatValue(3e-9)).toBe('3.000e-9');
    expect(formatValue(NaN)).toBe('—');
  });
});

describe('the readout at the cursor', () => {
  // Ten samples a second, silent from 1 s to 6 s.
  const times = [...Array.from({ length: 11 }, (_, i) => i / 10), ...Array.from({ length: 11 }, (_, i) => 6 + i / 10)];
  const values = times.map((t) => t * 10);

  it("reads the nearest sample, and nothing off the series' ends or inside a gap", () => {
    expect(readingAt(times, values, 0.12)).toBe(1);
    expect(readingAt(times, values, 0.16)).toBe(2);
    expect(readingAt(times, values, 6.04)).toBe(60);
    // Just past the last sample before the silence, the line still holds it…
    expect(readingAt(times, values, 1.3)).toBe(10);
    // …but 2.5 s into it (mean spacing 0.33 s) the line only interpolates: no reading.
    expect(readingAt(times, values, 3.5)).toBeUndefined();
    expect(readingAt(times, values, -0.1)).toBeUndefined();
    expect(readingAt(times, values, 7.2)).toBeUndefined();
    expect(readingAt([], [], 1)).toBeUndefined();
    expect(readingAt([2], [7], 2)).toBe(7);
  });
});

describe('value ticks', () => {
  const ticks = (min: number, max: number, step: number) => Math.floor(max / step + 1e-9) - Math.ceil(min / step - 1e-9) + 1;

  it('takes the widest round step that gives four ticks or more, never closer than the least gap', () => {
    for (const [min, max] of [[480.4, 556.1], [-20, 20], [47.39775, 47.39845], [11.98, 12.62], [0, 1], [-0.004, 0.0031]] as const) {
      const step = valueTickStep(min, max, 130, 14)!;
      expect(ticks(min, max, step), `${min}…${max}`).toBeGreaterThanOrEqual(4);
      expect((step * 130) / (max - min), `${min}…${max}`).toBeGreaterThanOrEqual(14);
      expect([1, 2, 2.5, 5]).toContain(Number((step / 10 ** Math.floor(Math.log10(step))).toPrecision(3)));
    }
    expect(valueTickStep(-20, 20, 130, 14)).toBe(10);
    // Too short a pane for four: the finest step that keeps the gap.
    expect(valueTickStep(0, 100, 40, 14)).toBe(50);
    expect(valueTickStep(5, 5, 130, 14)).toBeUndefined();
  });
});

describe('marks', () => {
  const command = (over: Partial<CommandRecord>): CommandRecord =>
    ({ id: crypto.randomUUID(), commandText: 'LOITER', relTime: 20, status: 'logged', retractedAt: null, queuedAt: null, deliveredAt: null, ackedAt: null, vehicleTime: null, ackDeadlineAt: null, statusDetail: '', ...over }) as CommandRecord;
  const event = (kind: string, timestamp: string): TimelineEvent => ({ id: crypto.randomUUID(), datasetId: crypto.randomUUID(), timestamp, kind, message: '', data: {}, createdAt: timestamp });

  it("places a command at its relTime after the dataset's first sample, and its steps at their own times", () => {
    const origin = Date.UTC(2024, 5, 1, 10) / 1000;
    const marks = marksOf([], [command({ status: 'acked', queuedAt: '2026-11-27T19:00:00Z', vehicleTime: '2024-06-01T10:00:21Z' })], origin);
    expect(marks.map((m) => [m.kind, m.t - origin])).toEqual([
      ['command', 20],
      ['acked', 21],
      ['dispatched', Date.UTC(2026, 10, 27, 19) / 1000 - origin],
    ]);
    expect(marks[0]!.label).toBe('LOITER: relTime T+20 s');
    // Before the first sample is known, or once retracted, a command has no place by relTime.
    expect(marksOf([], [command({})]).length).toBe(0);
    expect(marksOf([], [command({ retractedAt: '2026-11-27T19:00:00Z' })], origin).length).toBe(0);
    expect(relTimeText(-5)).toBe('T−5 s');
    expect(relTimeText(42.5)).toBe('T+42.5 s');
  });

  it('gives link loss, its end, limits and every command step a colour of their own, and names them', () => {
    const marks = marksOf([event('LINK_LOSS', '2024-06-01T10:00:03Z'), event('LINK_REGAINED', '2024-06-01T10:00:08Z'), event('LIMIT', '2024-06-01T10:00:09Z')], []);
    const kinds: Array<Pick<TimelineMark, 'kind' | 'event'>> = [...marks, ...(['command', 'dispatched', 'delivered', 'acked', 'nacked', 'timed_out'] as const).map((kind) => ({ kind }))];
    expect(new Set(kinds.map(markColour)).size).toBe(kinds.length);
    expect(marks.map(markName)).toEqual(['LINK_LOSS', 'LINK_REGAINED', 'LIMIT']);
    // Any other kind takes a colour none of those has, the same one each time.
    const note = markColour({ kind: 'event', event: 'NOTE' });
    expect(kinds.map(markColour)).not.toContain(note);
    expect(markColour({ kind: 'event', event: 'NOTE' })).toBe(note);
  });
});
