import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURE_DIR } from '@sortie/contracts/testing';
import { describe, expect, it } from 'vitest';
import { createDataFlashParser } from './dataflash.ts';
import type { LogParser, LogSink, ParserOptions } from './records.ts';
import { createULogParser } from './ulog.ts';

// The importer's first look at a file (clockOnly) must see the clock exactly as the full read does: every
// message's boot time in order, and the same GPS pairings. Pure: reads the shared fixtures only.

const SHARED = join(FIXTURE_DIR, '..');
const FILES: Array<[string, (sink: LogSink, options?: ParserOptions) => LogParser]> = [
  [join(SHARED, 'ulog', 'sample_log_small.ulg'), createULogParser],
  [join(SHARED, 'ulog', 'sample_px4_events.ulg'), createULogParser],
  [join(SHARED, 'dataflash', 'ardusub-small.BIN'), createDataFlashParser],
  [join(import.meta.dirname, 'testdata', 'dataflash-synthetic.BIN'), createDataFlashParser],
];

function clockOf(bytes: Uint8Array, make: (sink: LogSink, options?: ParserOptions) => LogParser, clockOnly: boolean) {
  const boot: number[] = [];
  const clock: Array<[number, number]> = [];
  const noop = () => {};
  const parser = make({ type: noop, data: (_t, b) => void boot.push(b), text: noop, param: noop, info: noop, clock: (b, u) => void clock.push([b, u]), skipped: noop }, { clockOnly });
  parser.push(bytes);
  parser.end();
  return { boot, clock };
}

describe('clockOnly, the first look at a log', () => {
  for (const [file, make] of FILES) {
    it(`${file.split('/').pop()}: the same boot times and GPS pairings as the full read`, () => {
      const bytes = new Uint8Array(readFileSync(file));
      const full = clockOf(bytes, make, false);
      expect(full.boot.length).toBeGreaterThan(40);
      expect(clockOf(bytes, make, true)).toEqual(full);
    });
  }
});
