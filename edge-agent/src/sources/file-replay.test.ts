import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MavlinkFramer, TlogWalker, crcExtraOf, frameBootTime } from '@sortie/contracts/mavlink';
import { ardusubDiveWithCompanion, heartbeatPayload, buildFrame, concat, FIXTURE_CRC_EXTRA, PX4_MISSION_ARMED, px4Mission, rawCapture } from '@sortie/contracts/testing';
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

  it('streams a capture whose messages carry no boot time unchanged, stamped with the agent clock, and says so', async () => {
    // Heartbeats only: nothing in them says when they were sent.
    const path = join(dir, 'heartbeats.bin');
    const data = concat(...Array.from({ length: 2000 }, (_, i) => buildFrame({ msgid: 0, payload: heartbeatPayload(PX4_MISSION_ARMED), crcExtra: FIXTURE_CRC_EXTRA[0]!, seq: i & 0xff })));
    await writeFile(path, data);
    const source = new FileReplaySource({ path, format: 'raw', speed: 'max', readBytes: 4096, crcExtra: crcExtraOf });
    await source.open();
    expect(source.timeBase).toMatchObject({ kind: 'agent' });
    expect(source.timeBase.description).toMatch(/agent clock.*no message in its first MiB carries a boot time/);
    const chunks = await take(source);
    expect(Buffer.concat(chunks.map((c) => c.bytes))).toEqual(Buffer.from(data));
    expect(chunks.map((c) => c.position?.start)).toEqual(chunks.map((_, i) => i * 4096));
    expect(chunks[0]!.receivedAtUs).toBeGreaterThan(Date.parse('2024-01-01') * 1000);
    expect(source.recordedTime).toBe(false);
  });

  it("paces a capture without timestamps by its messages' own boot time: a frame at its boot time from the start, one without at the time reached", async () => {
    const frames = px4Mission(10);
    const path = join(dir, 'px4-mission.bin');
    await writeFile(path, rawCapture(frames));
    const before = Date.now() * 1000;
    const source = new FileReplaySource({ path, format: 'raw', speed: 'max', crcExtra: crcExtraOf });
    await source.open();
    expect(source.timeBase).toMatchObject({ kind: 'boot' });
    expect(source.timeBase.description).toMatch(/boot time \(ATTITUDE\.time_boot_ms first\), from \d{4}-\d\d-\d\dT/);
    expect(source.timeBase.originUs).toBeGreaterThanOrEqual(before);
    expect(source.recordedTime).toBe(true);
    const chunks = await take(source);
    // One frame per chunk, each at its sender's time: the flight keeps its 10 s, whatever the replay took.
    expect(chunks).toHaveLength(frames.length);
    const origin = source.timeBase.originUs!;
    const sent = frames.map((f) => f.atUs);
    // HEARTBEAT carries no time: it takes the last ATTITUDE's, which was sent ≤ 20 ms before it.
    chunks.forEach((c, i) => {
      expect(c.receivedAtUs - origin).toBeLessThanOrEqual(sent[i]!);
      expect(c.receivedAtUs - origin).toBeGreaterThan(sent[i]! - 20_000);
    });
    const heartbeats = chunks.filter((_, i) => frames[i]!.msgid === 0).map((c) => (c.receivedAtUs - origin) / 1e6);
    expect(heartbeats).toHaveLength(10);
    expect(heartbeats.at(-1)! - heartbeats[0]!).toBeCloseTo(9, 1);
    expect(chunks.at(-1)!.receivedAtUs - chunks[0]!.receivedAtUs).toBe(9_980_000);
    expect(chunks.at(-1)!.position!.end).toBe(source.size);
    expect(source.now()).toBe(chunks.at(-1)!.receivedAtUs);
  });

  it('at a speed, takes its boot-time span divided by the speed', async () => {
    const path = join(dir, 'px4-mission.bin');
    await writeFile(path, rawCapture(px4Mission(4)));
    const source = new FileReplaySource({ path, format: 'raw', speed: 10, crcExtra: crcExtraOf });
    await source.open();
    const t0 = performance.now();
    await take(source);
    const elapsed = (performance.now() - t0) / 1000;
    expect(elapsed).toBeGreaterThan(0.398 * 0.9);
    expect(elapsed).toBeLessThan(0.4 + 1);
  });

  it("keeps each component on its own boot clock: a companion computer's uptime does not move the autopilot's frames", async () => {
    const frames = ardusubDiveWithCompanion(20);
    const path = join(dir, 'ardusub-dive.bin');
    await writeFile(path, rawCapture(frames));
    const source = new FileReplaySource({ path, format: 'raw', speed: 'max', crcExtra: crcExtraOf });
    await source.open();
    const chunks = await take(source);
    const origin = source.timeBase.originUs!;
    // The companion's SYSTEM_TIME says 9,000 s of uptime against the autopilot's 600 s: each frame still lands where it was sent.
    chunks.forEach((c, i) => expect(Math.abs(c.receivedAtUs - origin - frames[i]!.atUs)).toBeLessThanOrEqual(100_000));
    expect((chunks.at(-1)!.receivedAtUs - origin) / 1e6).toBeCloseTo(19.9, 3);
  });

  it('paces the real PX4 and ArduPilot captures by their boot time, with the frames and junk the framer finds', async () => {
    for (const name of [FIXTURES.px4Junk, FIXTURES.v2]) {
      const data = readFixture(name);
      const framer = new MavlinkFramer({ crcExtra: crcExtraOf });
      const expected = [...framer.push(data), ...framer.end()];
      const boots = expected.map((f) => frameBootTime(f)?.us).filter((t): t is number => t !== undefined);
      const source = new FileReplaySource({ path: fixturePath(name), format: 'raw', speed: 'max', crcExtra: crcExtraOf });
      await source.open();
      const chunks = await take(source);
      expect(chunks).toHaveLength(expected.length);
      expect(source.stats().discardedBytes).toBe(framer.stats.bytesDiscarded);
      const span = chunks.at(-1)!.receivedAtUs - chunks[0]!.receivedAtUs;
      expect(span).toBeGreaterThanOrEqual(Math.max(...boots) - boots[0]! - 1);
      expect(span).toBeGreaterThan(1_000_000);
      for (let i = 1; i < chunks.length; i++) expect(chunks[i]!.receivedAtUs).toBeGreaterThanOrEqual(chunks[i - 1]!.receivedAtUs);
    }
  });

  it('resumed after a frame, keeps the times one uninterrupted replay gives (the first run passes on where its clock started)', async () => {
    const path = join(dir, 'ardusub-dive.bin');
    await writeFile(path, rawCapture(ardusubDiveWithCompanion(10)));
    const whole = new FileReplaySource({ path, format: 'raw', speed: 'max', crcExtra: crcExtraOf });
    await whole.open();
    const all = await take(whole);
    const first = new FileReplaySource({ path, format: 'raw', speed: 'max', crcExtra: crcExtraOf, originUs: whole.timeBase.originUs });
    await first.open();
    const head = await take(first, 57);
    const rest = new FileReplaySource({ path, format: 'raw', speed: 'max', crcExtra: crcExtraOf, originUs: first.timeBase.originUs, startAt: head.at(-1)!.position!.end });
    await rest.open();
    const tail = await take(rest);
    expect([...head, ...tail].map((c) => [c.receivedAtUs, c.position!.start])).toEqual(all.map((c) => [c.receivedAtUs, c.position!.start]));
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
    // Paced by the agent clock (--byte-rate): read from the byte asked for, frame boundary or not.
    const source = new FileReplaySource({ path: fixturePath(FIXTURES.v2), format: 'raw', startAt: 40_000, byteRate: 1e9 });
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
