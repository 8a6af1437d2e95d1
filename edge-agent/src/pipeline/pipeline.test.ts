// Every real capture through file replay → framer → spool, accounted frame by frame.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MavlinkFramer, TlogWalker, crcExtraOf } from '@sortie/contracts/mavlink';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LinkLossDetector } from '../link/link-loss-detector.ts';
import type { LinkEvent } from '../link/link-loss-detector.ts';
import { decodeAgentRecord } from '../record/agent-record.ts';
import { FileReplaySource } from '../sources/file-replay.ts';
import type { Source, SourceChunk } from '../sources/source.ts';
import { Spool } from '../spool/spool.ts';
import { FIXTURES, fixturePath, readFixture } from '../testing/fixtures.ts';
import { Pipeline } from './pipeline.ts';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

let dir: string;
let spool: Spool;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'pipeline-test-'));
  spool = await Spool.open({ dir });
});
afterEach(async () => {
  await spool.close().catch(() => {});
  await rm(dir, { recursive: true, force: true });
});

async function replay(name: string, format: 'tlog' | 'raw', thresholdUs = 5_000_000) {
  const source = new FileReplaySource({ path: fixturePath(name), format, speed: 'max', crcExtra: crcExtraOf, readBytes: 4096 });
  await source.open();
  const pipeline = new Pipeline({ source, spool, detector: new LinkLossDetector({ thresholdUs }), crcExtra: crcExtraOf, fileTag: 0xabcd });
  const events: LinkEvent[] = [];
  const systems: number[] = [];
  pipeline.on('link', (e) => events.push(e));
  pipeline.on('system', (s) => systems.push(s));
  await pipeline.run();
  const records = await spool.readFrom(0n, 1_000_000);
  return { pipeline, stats: pipeline.stats(), events, systems, records, source };
}

describe('pipeline on the real captures', () => {
  it.each([
    [FIXTURES.v2, 1476, 11],
    [FIXTURES.px4Junk, 138, 5],
  ])('%s: spools exactly the frames the framer finds, in order, losing only the junk', async (name, frames, junk) => {
    const data = readFixture(name);
    const framer = new MavlinkFramer({ crcExtra: crcExtraOf });
    const expected = [...framer.push(data), ...framer.end()];
    expect(expected).toHaveLength(frames);

    const { stats, records, systems } = await replay(name, 'raw');
    // The source cuts frames itself to stamp each with its boot time (file-replay.ts): junk never reaches the pipeline.
    expect(stats).toMatchObject({ framesIn: frames, spooled: frames, notSpooled: 0, junkBytes: junk, bytesIn: data.length - junk });
    expect(stats.durableSeq).toBe(BigInt(frames));
    expect(records.map((r) => hex(decodeAgentRecord(r.payload).frame))).toEqual(expected.map((f) => hex(f.bytes)));
    expect(records.map((r) => r.seq)).toEqual(expected.map((_, i) => BigInt(i + 1)));
    // Every byte of the file is in a spooled frame or counted as junk.
    expect(expected.reduce((n, f) => n + f.bytes.length, 0) + junk).toBe(data.length);
    expect(systems).toEqual([1]);
    expect(stats.systems).toEqual([expect.objectContaining({ sysid: 1, frames, link: 'up' })]);
    // Raw bytes carry no timestamp: the messages' own boot time does, from when the replay began.
    const first = decodeAgentRecord(records[0]!.payload);
    expect(first.recordedTime).toBe(true);
    expect(Number(records[0]!.receivedAtUs)).toBeGreaterThan(Date.parse('2024-01-01') * 1000);
    expect(Number(records.at(-1)!.receivedAtUs - records[0]!.receivedAtUs)).toBeGreaterThan(1_000_000);
  });

  it('arduplane-sitl-vtol.tlog: 23,894 frames with their recorded times and no link loss at 5 s', async () => {
    const data = readFixture(FIXTURES.tlog);
    const expected = new TlogWalker({ crcExtra: crcExtraOf }).push(data);
    const { stats, records, events, source } = await replay(FIXTURES.tlog, 'tlog');
    expect(stats).toMatchObject({ framesIn: 23_894, spooled: 23_894, junkBytes: 0, linkEvents: 0 });
    expect(events).toEqual([]);
    expect(records).toHaveLength(23_894);
    let mismatches = 0;
    let previous = 0;
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!;
      const rec = decodeAgentRecord(r.payload);
      const want = expected[i]!;
      if (hex(rec.frame) !== hex(want.frame.bytes) || r.receivedAtUs !== want.timestampUs || !rec.recordedTime) mismatches++;
      // Each frame remembers where its record ended in the file: strictly increasing, the last one at EOF.
      if (rec.source?.fileTag !== 0xabcd || rec.source.position <= previous) mismatches++;
      previous = rec.source?.position ?? previous;
    }
    expect(mismatches).toBe(0);
    expect(previous).toBe(data.length);
    expect(source.state()).toBe('ended');
  });

  it('reports the one 4.236 s silence of the tlog when the threshold is 3 s, even at max speed', async () => {
    const { events } = await replay(FIXTURES.tlog, 'tlog', 3_000_000);
    expect(events.map((e) => e.type)).toEqual(['LINK_LOSS', 'LINK_REGAINED']);
    expect(events[1]).toMatchObject({ sysid: 1, outageUs: 4_236_000 });
  });
});

/** A scripted live source: hands out the given chunks, then ends. */
function scripted(chunks: SourceChunk[]): Source {
  let now = 0;
  return {
    kind: 'udp',
    description: 'scripted',
    recordedTime: false,
    async *chunks() {
      for (const c of chunks) {
        now = c.receivedAtUs;
        yield c;
      }
    },
    now: () => now,
    state: () => 'open',
    stats: () => ({ bytesRead: 0, chunks: 0, discardedBytes: 0, droppedBytes: 0 }),
    progress: () => null,
    ended: () => false,
    close: async () => {},
  };
}

describe('pipeline framing details', () => {
  it('frames each UDP peer separately and stamps a frame with the time of the chunk that completed it', async () => {
    const frames = new MavlinkFramer({ crcExtra: crcExtraOf }).push(readFixture(FIXTURES.v2)).slice(0, 4);
    const [a, b, c, d] = frames.map((f) => f.bytes) as [Uint8Array, Uint8Array, Uint8Array, Uint8Array];
    // Peer X's frame b is split around peer Y's datagram; both must come out whole.
    const source = scripted([
      { bytes: a, receivedAtUs: 100, origin: 'X' },
      { bytes: b.subarray(0, 5), receivedAtUs: 200, origin: 'X' },
      { bytes: c, receivedAtUs: 300, origin: 'Y' },
      { bytes: b.subarray(5), receivedAtUs: 400, origin: 'X' },
      { bytes: d, receivedAtUs: 500, origin: 'Y' },
    ]);
    const pipeline = new Pipeline({ source, spool, detector: new LinkLossDetector({ thresholdUs: 5e6 }), crcExtra: crcExtraOf });
    await pipeline.run();
    const records = await spool.readFrom(0n, 10);
    expect(records.map((r) => [hex(decodeAgentRecord(r.payload).frame), r.receivedAtUs])).toEqual([
      [hex(a), 100n],
      [hex(c), 300n],
      [hex(b), 400n],
      [hex(d), 500n],
    ]);
    expect(decodeAgentRecord(records[0]!.payload).source).toBeNull();
  });

  it('drops and counts frames the spool refuses on a live link instead of stalling', async () => {
    await spool.close();
    spool = await Spool.open({ dir, segmentBytes: 4096, maxBytes: 8192, fullPolicy: 'reject-new' });
    const data = readFixture(FIXTURES.v2);
    const source = scripted([{ bytes: data, receivedAtUs: 1 }]);
    const pipeline = new Pipeline({ source, spool, detector: new LinkLossDetector({ thresholdUs: 5e6 }), crcExtra: crcExtraOf });
    const dropped: Error[] = [];
    pipeline.on('dropped', (e) => dropped.push(e));
    await pipeline.run();
    const stats = pipeline.stats();
    expect(stats.framesIn).toBe(1476);
    expect(stats.spooled).toBeGreaterThan(0);
    expect(stats.notSpooled).toBeGreaterThan(0);
    expect(stats.spooled + stats.notSpooled).toBe(1476);
    expect(dropped).toHaveLength(stats.notSpooled);
  });

  describe('a replay into a full spool (reject-new)', () => {
    async function fullSpoolReplay(onSpoolFull: () => boolean) {
      await spool.close();
      spool = await Spool.open({ dir, segmentBytes: 4096, maxBytes: 8192, fullPolicy: 'reject-new', ackPersistIntervalMs: 0 });
      const source = new FileReplaySource({ path: fixturePath(FIXTURES.v2), format: 'raw', speed: 'max', crcExtra: crcExtraOf });
      await source.open();
      const pipeline = new Pipeline({
        source,
        spool,
        detector: new LinkLossDetector({ thresholdUs: 5e6 }),
        crcExtra: crcExtraOf,
        fileTag: 1,
        waitWhenFull: true,
        onSpoolFull,
        fullRetryMs: 5,
      });
      return pipeline;
    }

    it('waits for the uplink to free room and then spools every frame, in order', async () => {
      const pipeline = await fullSpoolReplay(() => true);
      const sent: string[] = [];
      let after = 0n;
      // A stand-in uplink: takes what is durable and acknowledges it, one batch at a time.
      let running = true;
      const drainOnce = async (): Promise<void> => {
        const records = await spool.readFrom(after, 10_000);
        for (const r of records) sent.push(hex(decodeAgentRecord(r.payload).frame));
        const last = records.at(-1);
        if (last) {
          after = last.seq;
          spool.ack(last.seq);
        }
      };
      const uplink = (async () => {
        while (running) {
          await drainOnce();
          await new Promise((r) => setTimeout(r, 5));
        }
      })();
      await pipeline.run();
      running = false;
      await uplink;
      await drainOnce();
      const framer = new MavlinkFramer({ crcExtra: crcExtraOf });
      const expected = [...framer.push(readFixture(FIXTURES.v2)), ...framer.end()].map((f) => hex(f.bytes));
      expect(pipeline.stats()).toMatchObject({ spooled: 1476, notSpooled: 0 });
      expect(sent).toEqual(expected);
    });

    it('gives up when told nothing will free room, having spooled a clean prefix', async () => {
      const pipeline = await fullSpoolReplay(() => false);
      await expect(pipeline.run()).rejects.toThrow(/spool/i);
      const records = await spool.readFrom(0n, 10_000);
      expect(records.length).toBe(pipeline.stats().spooled);
      expect(records.length).toBeGreaterThan(0);
      expect(decodeAgentRecord(records.at(-1)!.payload).source?.position).toBe(pipeline.lastSpooled?.position);
    });

    it('stops while waiting without spooling anything after the refused frame', async () => {
      const pipeline = await fullSpoolReplay(() => true);
      const run = pipeline.run();
      await new Promise((r) => setTimeout(r, 300));
      await pipeline.stop();
      await run;
      const records = await spool.readFrom(0n, 10_000);
      expect(records.length).toBe(pipeline.stats().spooled);
      expect(records.length).toBeLessThan(1476);
      expect(decodeAgentRecord(records.at(-1)!.payload).source?.position).toBe(pipeline.lastSpooled?.position);
    });
  });
});
