import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TlogWalker, crcExtraOf } from '@sortie/contracts/mavlink';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FIXTURES, fixturePath, readFixture } from '../testing/fixtures.ts';
import { FileReplaySource } from './file-replay.ts';
import type { SourceChunk } from './source.ts';

async function take(source: FileReplaySource, n = Infinity): Promise<SourceChunk[]> {
  const out: SourceChunk[] = [];
  for await (const c of source.chunks()) {
    out.push(c);
    if (out.length >= n) await source.close();
  }
  return out;
}

describe('FileReplaySource, tlog', () => {
  const records = new TlogWalker({ crcExtra: crcExtraOf }).push(readFixture(FIXTURES.tlog));

  it('hands out one record per chunk with its recorded time and file range', async () => {
    const source = new FileReplaySource({ path: fixturePath(FIXTURES.tlog), format: 'tlog', speed: 'max', crcExtra: crcExtraOf });
    await source.open();
    const chunks = await take(source);
    expect(chunks).toHaveLength(records.length);
    expect(chunks[0]).toMatchObject({ receivedAtUs: Number(records[0]!.timestampUs), position: { start: 0, end: 8 + records[0]!.frame.bytes.length } });
    expect(chunks.at(-1)?.position?.end).toBe(source.size);
    expect(source.state()).toBe('ended');
    expect(source.progress()).toEqual({ bytesRead: source.size, totalBytes: source.size });
    expect(source.now()).toBe(Number(records.at(-1)!.timestampUs));
  });

  it('paces by the recorded timestamps times the speed factor', async () => {
    // The first n records span 2 s of recording: 100 ms at 20×.
    const n = records.findIndex((r) => r.timestampUs - records[0]!.timestampUs >= 2_000_000) + 1;
    const span = Number(records[n - 1]!.timestampUs - records[0]!.timestampUs) / 1e6;
    const source = new FileReplaySource({ path: fixturePath(FIXTURES.tlog), format: 'tlog', speed: 20, crcExtra: crcExtraOf });
    await source.open();
    const t0 = performance.now();
    await take(source, n);
    const elapsed = (performance.now() - t0) / 1000;
    expect(elapsed).toBeGreaterThan((span / 20) * 0.9);
    expect(elapsed).toBeLessThan(span / 20 + 1);
  });

  it('resumes at a record boundary', async () => {
    const start = (await (async () => {
      const s = new FileReplaySource({ path: fixturePath(FIXTURES.tlog), format: 'tlog', speed: 'max', crcExtra: crcExtraOf });
      await s.open();
      return (await take(s, 1000)).at(-1)!.position!.end;
    })());
    const source = new FileReplaySource({ path: fixturePath(FIXTURES.tlog), format: 'tlog', speed: 'max', crcExtra: crcExtraOf, startAt: start });
    await source.open();
    const chunks = await take(source);
    expect(chunks).toHaveLength(records.length - 1000);
    expect(chunks[0]!.receivedAtUs).toBe(Number(records[1000]!.timestampUs));
  });

  it('stops promptly when closed during a long wait', async () => {
    const source = new FileReplaySource({ path: fixturePath(FIXTURES.tlog), format: 'tlog', speed: 0.0001, crcExtra: crcExtraOf });
    await source.open();
    const iterating = take(source);
    await new Promise((r) => setTimeout(r, 50));
    const t0 = performance.now();
    await source.close();
    // The records stamped like the first go out at once; the next one is hours away at this speed.
    const sameAsFirst = records.findIndex((r) => r.timestampUs !== records[0]!.timestampUs);
    expect(await iterating).toHaveLength(sameAsFirst);
    expect(performance.now() - t0).toBeLessThan(500);
    expect(source.state()).toBe('stopped');
  });
});

describe('FileReplaySource, raw', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'file-replay-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('streams the bytes unchanged, stamped with the agent clock', async () => {
    const data = readFixture(FIXTURES.v2);
    const source = new FileReplaySource({ path: fixturePath(FIXTURES.v2), format: 'raw', speed: 'max', readBytes: 4096 });
    await source.open();
    const chunks = await take(source);
    expect(Buffer.concat(chunks.map((c) => c.bytes))).toEqual(Buffer.from(data));
    expect(chunks.map((c) => c.position?.start)).toEqual(chunks.map((_, i) => i * 4096));
    expect(chunks[0]!.receivedAtUs).toBeGreaterThan(Date.parse('2024-01-01') * 1000);
    expect(source.recordedTime).toBe(false);
  });

  it('paces at the byte rate times the speed', async () => {
    const size = readFixture(FIXTURES.px4Junk).length; // 7,383 bytes
    const source = new FileReplaySource({ path: fixturePath(FIXTURES.px4Junk), format: 'raw', byteRate: 10_000, speed: 2 });
    await source.open();
    const t0 = performance.now();
    const chunks = await take(source);
    const elapsed = (performance.now() - t0) / 1000;
    // 20,000 B/s in chunks of 1,000 bytes; the last chunk goes out at (size - 1000) / rate.
    expect(chunks[0]!.bytes.length).toBe(1000);
    expect(elapsed).toBeGreaterThan(((size - 1000) / 20_000) * 0.9);
    expect(elapsed).toBeLessThan(size / 20_000 + 0.5);
    const times = chunks.map((c) => c.receivedAtUs);
    expect(times.at(-1)! - times[0]!).toBeGreaterThan(((size - 1000) / 20_000) * 0.9 * 1e6);
  });

  it('starts at startAt and counts an empty file as ended', async () => {
    const source = new FileReplaySource({ path: fixturePath(FIXTURES.v2), format: 'raw', startAt: 40_000 });
    await source.open();
    const chunks = await take(source);
    expect(chunks[0]!.position?.start).toBe(40_000);
    expect(chunks.reduce((n, c) => n + c.bytes.length, 0)).toBe(source.size - 40_000);

    const empty = join(dir, 'empty.bin');
    await writeFile(empty, '');
    const none = new FileReplaySource({ path: empty, format: 'raw' });
    await none.open();
    expect(await take(none)).toEqual([]);
    expect(none.state()).toBe('ended');
  });

  it('fails at open for a missing file', async () => {
    await expect(new FileReplaySource({ path: join(dir, 'nope.tlog'), format: 'tlog' }).open()).rejects.toThrow(/ENOENT/);
  });
});
