// A replay stopped anywhere and resumed spools every frame of the file exactly once.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MavlinkFramer, TlogWalker, crcExtraOf } from '@sortie/contracts/mavlink';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LinkLossDetector } from '../link/link-loss-detector.ts';
import { Pipeline } from '../pipeline/pipeline.ts';
import { decodeAgentRecord } from '../record/agent-record.ts';
import { FileReplaySource } from '../sources/file-replay.ts';
import type { ReplayFormat } from '../sources/file-replay.ts';
import type { Source, SourceChunk } from '../sources/source.ts';
import { Spool } from '../spool/spool.ts';
import { FIXTURES, fixturePath, prng, readFixture } from '../testing/fixtures.ts';
import { REPLAY_CHECKPOINTS_FILE, ReplayCheckpointStore, ReplayCheckpointer, findResumePoint, fingerprintFile } from './replay-checkpoint.ts';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'replay-resume-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Closes `source` after it has handed out `n` chunks, as an operator's Ctrl-C would. */
function stopAfter(source: Source, n: number): Source {
  return {
    kind: source.kind,
    description: source.description,
    recordedTime: source.recordedTime,
    async *chunks(): AsyncGenerator<SourceChunk> {
      let count = 0;
      for await (const c of source.chunks()) {
        yield c;
        if (++count === n) void source.close();
      }
    },
    now: () => source.now(),
    state: () => source.state(),
    stats: () => source.stats(),
    progress: () => source.progress(),
    ended: () => source.ended(),
    close: () => source.close(),
  };
}

/** One agent run: resume point, checkpoint, replay (maybe stopped early), close. */
async function run(path: string, format: ReplayFormat, stopAfterChunks?: number) {
  const spool = await Spool.open({ dir });
  const store = await ReplayCheckpointStore.open(dir);
  const file = { ...(await fingerprintFile(path)), path };
  const resume = await findResumePoint(spool, store.get(file.fingerprint), file.fileTag);
  if (resume.done) {
    await spool.close();
    return { resume, appended: 0 };
  }
  // As the agent does: a resumed raw capture keeps the clock its first run started.
  const originUs = resume.position > 0 ? store.get(file.fingerprint)?.originUs : undefined;
  const replay = new FileReplaySource({ path, format, speed: 'max', startAt: resume.position, crcExtra: crcExtraOf, readBytes: 1000, originUs });
  await replay.open();
  const source = stopAfterChunks === undefined ? replay : stopAfter(replay, stopAfterChunks);
  const pipeline = new Pipeline({ source, spool, detector: new LinkLossDetector({ thresholdUs: 5e6 }), crcExtra: crcExtraOf, fileTag: file.fileTag });
  const checkpointer = new ReplayCheckpointer({ store, file, spool, lastSpooled: () => pipeline.lastSpooled, originUs: replay.timeBase.originUs });
  await checkpointer.begin(resume.position);
  await pipeline.run();
  await checkpointer.finish(replay.ended());
  await spool.close();
  return { resume, appended: pipeline.stats().spooled };
}

async function spooledFrames(): Promise<string[]> {
  const spool = await Spool.open({ dir });
  try {
    const records = await spool.readFrom(0n, 1_000_000);
    records.forEach((r, i) => i > 0 && expect(r.seq).toBeGreaterThan(records[i - 1]!.seq));
    return records.map((r) => hex(decodeAgentRecord(r.payload).frame));
  } finally {
    await spool.close();
  }
}

/** Receive times of what the spool holds, µs from its first frame. */
async function spooledTimes(): Promise<number[]> {
  const spool = await Spool.open({ dir });
  try {
    const records = await spool.readFrom(0n, 1_000_000);
    return records.map((r) => Number(r.receivedAtUs - records[0]!.receivedAtUs));
  } finally {
    await spool.close();
  }
}

describe('replay resume', () => {
  it.each([
    [FIXTURES.v2, 'raw'],
    [FIXTURES.px4Junk, 'raw'],
    [FIXTURES.tlog, 'tlog'],
  ] as const)('%s stopped at random points and resumed: every frame once, in order', async (name, format) => {
    const data = readFixture(name);
    const expected =
      format === 'tlog'
        ? new TlogWalker({ crcExtra: crcExtraOf }).push(data).map((r) => hex(r.frame.bytes))
        : (() => {
            const f = new MavlinkFramer({ crcExtra: crcExtraOf });
            return [...f.push(data), ...f.end()].map((x) => hex(x.bytes));
          })();
    const random = prng(name.length);
    const chunksInFile = format === 'tlog' ? expected.length : Math.ceil(data.length / 1000);
    const starts: number[] = [];
    for (let i = 0; i < 3; i++) {
      const partial = await run(fixturePath(name), format, 1 + Math.floor(random() * (chunksInFile / 4)));
      starts.push(partial.resume.position);
    }
    const last = await run(fixturePath(name), format);
    // Each run really started where the previous one stopped, short of the end.
    expect(starts[0]).toBe(0);
    expect(starts[1]).toBeGreaterThan(starts[0]!);
    expect(starts[2]).toBeGreaterThan(starts[1]!);
    expect(last.resume.position).toBeGreaterThan(starts[2]!);
    expect(last.resume.position).toBeLessThan(data.length);
    expect(last.resume.from).toBe('checkpoint');
    expect(last.resume.position).toBeGreaterThan(0);
    expect(await spooledFrames()).toEqual(expected);
    // …at the times one uninterrupted replay gives them: a raw capture's clock (its boot time) goes on from where it stopped.
    const whole = new FileReplaySource({ path: fixturePath(name), format, speed: 'max', crcExtra: crcExtraOf });
    await whole.open();
    const times: number[] = [];
    for await (const c of whole.chunks()) times.push(c.receivedAtUs);
    expect(await spooledTimes()).toEqual(times.map((t) => t - times[0]!));

    // Once done, the same file is not spooled again.
    const again = await run(fixturePath(name), format);
    expect(again).toMatchObject({ resume: { done: true }, appended: 0 });
  });

  it('finds frames spooled after the last checkpoint (a crash before the next one) in the spool itself', async () => {
    const path = fixturePath(FIXTURES.v2);
    const file = await fingerprintFile(path);
    const spool = await Spool.open({ dir });
    const store = await ReplayCheckpointStore.open(dir);
    const replay = new FileReplaySource({ path, format: 'raw', speed: 'max', crcExtra: crcExtraOf });
    await replay.open();
    const pipeline = new Pipeline({ source: replay, spool, detector: new LinkLossDetector({ thresholdUs: 5e6 }), crcExtra: crcExtraOf, fileTag: file.fileTag });
    // Only the initial checkpoint is ever written, as if the process died right after the spool flushed.
    await new ReplayCheckpointer({ store, file: { ...file, path }, spool, lastSpooled: () => null, intervalMs: 1e9 }).begin(0);
    await pipeline.run();
    const resume = await findResumePoint(spool, store.get(file.fingerprint), file.fileTag);
    await spool.close();
    // The capture ends with 11 bytes of a truncated frame: the resume point is just before them.
    expect(resume).toEqual({ position: file.size - 11, done: false, from: 'spool' });
  });

  it('ignores positions written by another file', async () => {
    const spool = await Spool.open({ dir });
    const resume = await findResumePoint(spool, { path: 'x', size: 10, position: 3, seq: '0', done: false, updatedAt: '' }, 42);
    expect(resume).toEqual({ position: 3, done: false, from: 'checkpoint' });
    await spool.close();
  });

  it('fingerprints by content and size, not by name', async () => {
    const a = join(dir, 'a.bin');
    const b = join(dir, 'b.bin');
    const bytes = await readFile(fixturePath(FIXTURES.px4Junk));
    await writeFile(a, bytes);
    await writeFile(b, bytes);
    expect((await fingerprintFile(a)).fingerprint).toBe((await fingerprintFile(b)).fingerprint);
    await writeFile(b, Buffer.concat([bytes, Buffer.from([0])]));
    expect((await fingerprintFile(a)).fingerprint).not.toBe((await fingerprintFile(b)).fingerprint);
  });

  it('refuses a checkpoint file of another format', async () => {
    await writeFile(join(dir, REPLAY_CHECKPOINTS_FILE), '{"format":"other"}');
    await expect(ReplayCheckpointStore.open(dir)).rejects.toThrow(/unknown format/);
  });
});
