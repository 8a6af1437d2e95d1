// A log import's row and a flight's parameters panel, without a browser: the service's streamed answer
// read in pieces, the progress bar and the words beside it in each phase, what an import brought, and the
// parameters a filter keeps and how their values read.
import type { CreateImportResponse, FlightParameter, ParameterDiff } from '@sortie/contracts';
import { describe, expect, it } from 'vitest';
import { formatBytes, importOutcome, ndjsonLines, progressState, progressValue, statusText } from './import-logic.ts';
import { filterDiff, filterParameters, formatParameter } from './parameter-logic.ts';

const answer = (over: Partial<CreateImportResponse> = {}): CreateImportResponse => ({
  id: crypto.randomUUID(),
  experimentId: crypto.randomUUID(),
  datasetId: crypto.randomUUID(),
  format: 'ulog',
  fileName: 'sample_log_small.ulg',
  bytes: 921_631,
  sha256: 'ab'.repeat(32),
  status: 'done',
  metadata: { sys_name: 'PX4' },
  // sample_log_small.ulg's report as the service gave it.
  report: {
    messages: 14_604,
    types: [],
    events: 3,
    parameters: 980,
    parameterChanges: 0,
    start: '2021-04-21T06:30:38.128697Z',
    end: '2021-04-21T06:50:32.496025Z',
    timeSource: 'gps',
    skippedBytes: 0,
    warnings: [],
  },
  createdAt: '2026-11-27T22:00:00.000Z',
  finishedAt: '2026-11-27T22:00:03.000Z',
  duplicate: false,
  ...over,
});

describe("the service's ndjson answer", () => {
  it('is read line by line however it is cut, a line split across pieces waiting for its end', () => {
    const whole = '{"phase":"upload","bytes":10,"totalBytes":10,"messages":0}\n{"phase":"import","bytes":5,"totalBytes":10,"messages":7}\n{"import":{"id":"x"}}\n';
    for (const cut of [1, 7, 30, 59, 60, 61, 100, whole.length]) {
      let partial = '';
      const lines: unknown[] = [];
      for (let i = 0; i < whole.length; i += cut) {
        const next = ndjsonLines(partial, whole.slice(i, i + cut));
        lines.push(...next.lines);
        partial = next.partial;
      }
      expect(partial, `cut ${cut}`).toBe('');
      expect(lines, `cut ${cut}`).toEqual([
        { phase: 'upload', bytes: 10, totalBytes: 10, messages: 0 },
        { phase: 'import', bytes: 5, totalBytes: 10, messages: 7 },
        { import: { id: 'x' } },
      ]);
    }
    expect(ndjsonLines('', '\n\n{"a":1}')).toEqual({ lines: [], partial: '{"a":1}' });
  });
});

describe("an import's row", () => {
  it('fills its bar with the upload, then again with the log read, and says which', () => {
    const uploading = progressState({ phase: 'upload', bytes: 460_815, totalBytes: 921_631, messages: 0 }, 921_631);
    expect(progressValue(uploading)).toBeCloseTo(0.5, 3);
    expect(statusText(uploading)).toBe('Uploading: 460.8 kB of 921.6 kB');
    const reading = progressState({ phase: 'import', bytes: 1_048_576, totalBytes: 1_563_146, messages: 19_277 }, 1_563_146);
    expect(progressValue(reading)).toBeCloseTo(0.671, 3);
    expect(statusText(reading)).toBe('Reading the log: 67 %, 19,277 messages');
    // A total the service did not know: the file's size.
    expect(progressState({ phase: 'upload', bytes: 5, totalBytes: null, messages: 0 }, 10)).toEqual({ state: 'uploading', bytes: 5, totalBytes: 10 });
    expect(progressValue({ state: 'waiting' })).toBeUndefined();
    expect(progressValue({ state: 'done', answer: answer() })).toBe(1);
    expect(statusText({ state: 'failed', message: 'the file is not a log Sortie can import' })).toBe('Failed: the file is not a log Sortie can import');
  });

  it("says what the import brought: messages, the flight's length and start on UTC, events and parameters, its warnings", () => {
    expect(importOutcome(answer())).toEqual({
      facts: ['14,604 messages', '19 min 54 s', 'from 2021-04-21 06:30:38 UTC (GPS time)', '3 events', '980 parameters'],
      warnings: [],
    });
    const placed = answer({
      report: { ...answer().report!, timeSource: 'import', parameters: 874, parameterChanges: 3, warnings: ['the log has no GPS time: it is placed so that its last message falls at the moment of import (give start= to place it)'] },
    });
    expect(importOutcome(placed).facts).toContain('871 parameters, 3 changed in flight');
    expect(importOutcome(placed).facts[2]).toBe('from 2021-04-21 06:30:38 UTC');
    expect(importOutcome(placed).warnings).toHaveLength(1);
    expect(statusText({ state: 'done', answer: answer({ duplicate: true }) })).toBe('Already imported');
  });

  it('gives sizes as file managers do', () => {
    expect(formatBytes(999)).toBe('999 B');
    expect(formatBytes(294_039)).toBe('294.0 kB');
    expect(formatBytes(1_563_146)).toBe('1.56 MB');
    expect(formatBytes(2_500_000_000)).toBe('2.50 GB');
  });
});

describe('the parameters panel', () => {
  const p = (name: string, initial: number, final = initial): FlightParameter => ({
    name,
    initial,
    final,
    changes: final === initial ? [] : [{ timestamp: '2021-04-21T06:31:00.000Z', value: final }],
  });
  const params = [p('MC_ROLLRATE_P', 0.15), p('MC_PITCHRATE_P', 0.15, 0.18), p('MPC_XY_VEL_MAX', 12), p('SYS_AUTOSTART', 4001)];

  it('keeps the parameters holding every word of the filter, and those changed in flight when asked', () => {
    expect(filterParameters(params, 'rate', false).map((x) => x.name)).toEqual(['MC_ROLLRATE_P', 'MC_PITCHRATE_P']);
    expect(filterParameters(params, 'mc p', false).map((x) => x.name)).toEqual(['MC_ROLLRATE_P', 'MC_PITCHRATE_P']);
    expect(filterParameters(params, '', true).map((x) => x.name)).toEqual(['MC_PITCHRATE_P']);
    expect(filterParameters(params, 'sys', true)).toEqual([]);
  });

  it('narrows a diff to the filter, keeping its count of the same', () => {
    const diff: ParameterDiff = {
      a: 'a',
      b: 'b',
      at: 'initial',
      added: [{ name: 'EKF2_GPS_CTRL', value: 7 }],
      removed: [{ name: 'EKF2_AID_MASK', value: 1 }],
      changed: [{ name: 'BAT1_N_CELLS', a: 6, b: 4 }, { name: 'EKF2_HGT_REF', a: 0, b: 1 }],
      unchanged: 346,
    };
    expect(filterDiff(diff, 'ekf2')).toEqual({ ...diff, changed: [{ name: 'EKF2_HGT_REF', a: 0, b: 1 }] });
  });

  it("reads a float32 parameter as the shortest decimal that is the same float32, an integer whole", () => {
    // BAT1_V_LOAD_DROP and BAT1_R_INTERNAL of the two ULog fixtures, as float32 widened to float64.
    expect(formatParameter(0.10000000149011612)).toBe('0.1');
    expect(formatParameter(0.004273504484444857)).toBe('0.0042735045');
    // Exactly a float32 (99682.59375): written as the shortest decimal that is it, as a ground station does; a float64 as JavaScript writes it.
    expect(formatParameter(99682.59375)).toBe('99682.59');
    expect(formatParameter(0.1 + 0.2)).toBe('0.30000000000000004');
    expect(formatParameter(3.5999999046325684)).toBe('3.6');
    expect(formatParameter(30000)).toBe('30000');
    expect(formatParameter(-1)).toBe('-1');
  });
});
