// DataFlash parse rate: `node cloud/src/imports/formats/dataflash.bench.ts`. The real fixture repeated to
// ~100 MB in memory (each copy re-sends its FMT messages, which the reader takes as the same types), fed in
// 1 MB chunks to a sink that touches every value, as an importer pivoting into columns would.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURE_DIR } from '@sortie/contracts/testing';
import { createDataFlashParser } from './dataflash.ts';
import type { LogSink } from './records.ts';

const TARGET_BYTES = Number(process.env['BENCH_MB'] ?? 100) * 1024 * 1024;
const CHUNK = 1024 * 1024;
const RUNS = Number(process.env['BENCH_RUNS'] ?? 5);

const fixture = new Uint8Array(readFileSync(join(FIXTURE_DIR, '..', 'dataflash', 'ardusub-small.BIN')));
const copies = Math.ceil(TARGET_BYTES / fixture.length);
const file = new Uint8Array(copies * fixture.length);
for (let i = 0; i < copies; i++) file.set(fixture, i * fixture.length);

let messages = 0;
let sum = 0;
const sink: LogSink = {
  type() {},
  data(_id, bootUs, values) {
    messages++;
    sum += bootUs;
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (typeof v === 'number') sum += v;
    }
  },
  text() {},
  param() {},
  info() {},
  clock() {},
  skipped(offset, bytes, reason) {
    throw new Error(`unexpected skip at ${offset} (${bytes} bytes): ${reason}`);
  },
};

const rates: number[] = [];
for (let run = 0; run < RUNS; run++) {
  messages = 0;
  const parser = createDataFlashParser(sink);
  const start = performance.now();
  for (let at = 0; at < file.length; at += CHUNK) parser.push(file.subarray(at, at + CHUNK));
  parser.end();
  const seconds = (performance.now() - start) / 1000;
  rates.push(messages / seconds);
  console.log(
    `run ${run + 1}: ${(file.length / 1e6).toFixed(0)} MB, ${messages.toLocaleString('en')} data messages in ${seconds.toFixed(3)} s: ` +
      `${Math.round(messages / seconds).toLocaleString('en')} messages/s, ${(file.length / 1e6 / seconds).toFixed(0)} MB/s`,
  );
}
rates.sort((a, b) => a - b);
// The sum is printed so that the values read cannot be optimised away.
console.log(`median ${Math.round(rates[Math.floor(rates.length / 2)]!).toLocaleString('en')} data messages/s (checksum ${sum})`);
