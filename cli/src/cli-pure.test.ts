import { describe, expect, it } from 'vitest';
import { fileNameOf } from './commands/export.ts';
import { parameterText } from './commands/imports.ts';
import { csvField, json, table } from './core/output.ts';
import { formatDuration, importProgressLine, progressLine } from './core/progress.ts';
import { formatTime, parseTime, timeMicros } from './core/time.ts';

describe('time', () => {
  it('parses RFC 3339 to the nanosecond, any offset, and prints an answer\'s time in UTC with six digits', () => {
    expect(parseTime('2018-08-08T14:05:45.465009Z', 'start')).toEqual({ seconds: 1533737145n, nanos: 465_009_000 });
    expect(parseTime('2018-08-08T16:05:45.000000001+02:00', 'start')).toEqual({ seconds: 1533737145n, nanos: 1 });
    expect(parseTime('1969-12-31T23:59:59.5Z', 'start')).toEqual({ seconds: -1n, nanos: 500_000_000 });
    expect(formatTime('2018-08-08T14:05:45.465009999Z')).toBe('2018-08-08T14:05:45.465009Z');
    expect(formatTime('1969-12-31T23:59:59.500Z')).toBe('1969-12-31T23:59:59.500000Z');
    expect(formatTime('2026-11-22T10:00:00Z')).toBe('2026-11-22T10:00:00.000000Z');
    expect(formatTime('')).toBe('');
    expect(timeMicros('2018-08-08T14:05:45.465009Z')).toBe(1_533_737_145_465_009);
    expect(timeMicros('1969-12-31T23:59:59.5Z')).toBe(-500_000);
    expect(timeMicros(null)).toBeNaN();
  });

  it('refuses what is not RFC 3339, naming the flag', () => {
    for (const bad of ['yesterday', '2018-08-08', '2018-08-08T14:05:45', '2018-13-08T14:05:45Z', '2018-08-08T14:05:45.1234567891Z']) {
      expect(() => parseTime(bad, 'end')).toThrow(/^--end must be an RFC 3339 time/);
    }
  });
});

describe('output', () => {
  it('pads columns to the widest cell, "-" for empty, last column not padded', () => {
    expect(table(['ID', 'NAME'], [['a', 'x'], ['bbb', null]])).toBe('ID   NAME\na    x\nbbb  -\n');
  });

  it('quotes CSV fields that need it', () => {
    expect([csvField('plain'), csvField('a,b'), csvField('say "hi"'), csvField('two\nlines'), csvField(null), csvField(-0.5)]).toEqual([
      'plain',
      '"a,b"',
      '"say ""hi"""',
      '"two\nlines"',
      '',
      '-0.5',
    ]);
  });

  it('JSON with a bigint, should one come, as a decimal string', () => {
    expect(json({ rawPoints: 18446744073709551615n })).toBe('{\n  "rawPoints": "18446744073709551615"\n}\n');
  });
});

describe('progress', () => {
  it('bytes, rate, rows and an ETA from the fraction of the time span covered', () => {
    const line = progressLine({ bytes: 2 * 1024 * 1024, elapsedS: 2, rows: 5000, unit: 'rows', atUs: 250, span: { startUs: 0, endUs: 1000 }, width: 8 });
    expect(line).toBe('[##......]  25% 2.0 MiB at 1.0 MiB/s  5000 rows  ETA 0:06');
  });

  it('no ETA without a span or before the first row', () => {
    expect(progressLine({ bytes: 10, elapsedS: 1, rows: 0, unit: 'messages' })).toBe('10 B at 10 B/s  0 messages  ETA --:--');
    expect(progressLine({ bytes: 10, elapsedS: 1, rows: 0, unit: 'rows', atUs: 0, span: { startUs: 0, endUs: 10 }, width: 4 })).toBe('[....]   0% 10 B at 10 B/s  0 rows  ETA --:--');
    expect(formatDuration(3725)).toBe('1:02:05');
  });
});

describe('import progress', () => {
  it('the phase, how far through the file, the rate over the phase, messages while importing, an ETA', () => {
    expect(importProgressLine({ phase: 'upload', bytes: 3 * 1024 * 1024, totalBytes: 12 * 1024 * 1024, messages: 0, elapsedS: 3, width: 8 })).toBe(
      'upload  [##......]  25%  3.0 MiB of 12.0 MiB at 1.0 MiB/s  ETA 0:09',
    );
    expect(importProgressLine({ phase: 'import', bytes: 12 * 1024 * 1024, totalBytes: 12 * 1024 * 1024, messages: 81234, elapsedS: 6, width: 8 })).toBe(
      'import  [########] 100%  12.0 MiB of 12.0 MiB at 2.0 MiB/s  81234 messages  ETA 0:00',
    );
  });

  it('without a size: bytes and rate only', () => {
    expect(importProgressLine({ phase: 'upload', bytes: 2048, totalBytes: null, messages: 0, elapsedS: 0 })).toBe('upload  2.0 KiB at 0 B/s');
  });
});

describe('parameter values', () => {
  it('a float32 as the shortest decimal that is the same float32; other numbers as they are', () => {
    expect(parameterText(Math.fround(0.15))).toBe('0.15');
    expect(parameterText(Math.fround(-1.1))).toBe('-1.1');
    expect(parameterText(Math.fround(123456.789))).toBe('123456.79');
    expect(parameterText(0.1)).toBe('0.1');
    expect(parameterText(3)).toBe('3');
    expect(parameterText(-2147483648)).toBe('-2147483648');
    expect(parameterText(Number.NaN)).toBe('NaN');
    // Neighbouring float32s stay apart.
    const a = Math.fround(0.3);
    const b = Math.fround(a + 2 ** -25);
    expect(parameterText(a)).not.toBe(parameterText(b));
  });
});

describe('export file name', () => {
  it("takes the server's name, but never a path or a hidden file", () => {
    expect(fileNameOf('attachment; filename="flight-7-sys1.mcap"', 'x.mcap')).toBe('flight-7-sys1.mcap');
    expect(fileNameOf('attachment; filename="../../etc/passwd"', 'x.csv')).toBe('passwd');
    expect(fileNameOf('attachment; filename=".bashrc"', 'x.csv')).toBe('x.csv');
    expect(fileNameOf(null, 'id.csv')).toBe('id.csv');
  });
});
