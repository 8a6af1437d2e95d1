// Decode throughput over the real captures: `node cloud/src/telemetry/narrow/decode.bench.ts`.
// Ingest must sustain 50k frames/s decoded and stored on 2 cores, so decoding alone should leave most
// of a core free. node-mavlink's protocol.data() is measured alongside for scale.

import { readFileSync } from 'node:fs';
import { FIXTURE_DIR } from '@sortie/contracts/testing';
import { join } from 'node:path';
import { MavLinkProtocolV1, MavLinkProtocolV2 } from 'node-mavlink';
import { crcExtraOf, type MavlinkFrame, MavlinkFramer, messageClassOf, TlogWalker } from '@sortie/contracts/mavlink';
import { decodeFrame, frameTime, visitFrame } from './decode.ts';
import type { SampleValue } from './decode.ts';

const MIN_SECONDS = Number(process.env['BENCH_SECONDS'] ?? 1.5);
const tlog = new Uint8Array(readFileSync(join(FIXTURE_DIR, 'arduplane-sitl-vtol.tlog')));
const raw = new Uint8Array(readFileSync(join(FIXTURE_DIR, 'ardupilot-v2.mavlink')));

function frameTlog(): MavlinkFrame[] {
  const walker = new TlogWalker({ crcExtra: crcExtraOf });
  const frames: MavlinkFrame[] = [];
  for (let i = 0; i < tlog.length; i += 65536) for (const r of walker.push(tlog.subarray(i, i + 65536))) frames.push(r.frame);
  for (const r of walker.end()) frames.push(r.frame);
  return frames;
}

const tlogFrames = frameTlog();
const framer = new MavlinkFramer({ crcExtra: crcExtraOf });
const v2Frames = [...framer.push(raw), ...framer.end()];

// A visitor that touches every value the way a pivot into column arrays would, so nothing is elided.
let samples = 0;
let checksum = 0;
function visit(_signal: string, value: SampleValue): void {
  samples++;
  if (typeof value === 'number') checksum += value;
}

/** Runs `pass` (which handles `framesPerPass` frames) until MIN_SECONDS have elapsed; frames/s. */
function measure(label: string, framesPerPass: number, pass: () => void): number {
  for (let i = 0; i < 3; i++) pass(); // warm-up (JIT)
  samples = 0;
  let passes = 0;
  const start = performance.now();
  let elapsed = 0;
  do {
    pass();
    passes++;
    elapsed = (performance.now() - start) / 1000;
  } while (elapsed < MIN_SECONDS);
  const rate = (passes * framesPerPass) / elapsed;
  const perFrame = samples / (passes * framesPerPass);
  console.log(
    `${label.padEnd(46)} ${Math.round(rate).toLocaleString('en-US').padStart(11)} frames/s` +
      (samples ? `  ${Math.round(rate * perFrame).toLocaleString('en-US').padStart(12)} samples/s` : ''),
  );
  return rate;
}

console.log(`tlog: ${tlogFrames.length} frames, ${tlog.length} bytes; v2 capture: ${v2Frames.length} frames\n`);

measure('tlog walk (64 KiB chunks), no decode', tlogFrames.length, () => {
  frameTlog();
});
measure('tlog walk + visitFrame + frameTime', tlogFrames.length, () => {
  const walker = new TlogWalker({ crcExtra: crcExtraOf });
  for (let i = 0; i < tlog.length; i += 65536) {
    for (const r of walker.push(tlog.subarray(i, i + 65536))) {
      visitFrame(r.frame, visit);
      frameTime(r.frame);
    }
  }
  walker.end();
});
measure('visitFrame, v1 tlog frames', tlogFrames.length, () => {
  for (const frame of tlogFrames) visitFrame(frame, visit);
});
measure('visitFrame, v2 frames (mostly truncated)', v2Frames.length, () => {
  for (const frame of v2Frames) visitFrame(frame, visit);
});
measure('decodeFrame (sample objects), v1 tlog frames', tlogFrames.length, () => {
  for (const frame of tlogFrames) samples += decodeFrame(frame).length;
});
measure('frameTime, v1 tlog frames', tlogFrames.length, () => {
  for (const frame of tlogFrames) frameTime(frame);
});

const v1 = new MavLinkProtocolV1();
const v2 = new MavLinkProtocolV2();
const buffers = tlogFrames.slice(0, 5000).map((f) => ({ buffer: Buffer.from(f.bytes), clazz: messageClassOf(f.msgid)!, v1: f.version === 1 }));
measure('node-mavlink payload() + data(), for scale', buffers.length, () => {
  for (const { buffer, clazz, v1: isV1 } of buffers) {
    const protocol = isV1 ? v1 : v2;
    protocol.data(protocol.payload(buffer), clazz);
  }
});

if (Number.isNaN(checksum)) console.log('(checksum NaN: some float fields are NaN on the wire)');
