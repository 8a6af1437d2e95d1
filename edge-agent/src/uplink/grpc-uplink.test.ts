// The uplink against an in-memory cloud (testing/fake-cloud.ts): the real Connect client and
// protocol over a router transport, a real spool and a real link event queue on disk.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LINK_EVENTS_FILE, LinkEventQueue, linkEventKey } from '../link/link-event-queue.ts';
import type { LinkLossEvent, LinkRegainedEvent } from '../link/link-loss-detector.ts';
import { AGENT_RECORD_MAX_BYTES, encodeAgentRecord } from '../record/agent-record.ts';
import { Spool } from '../spool/spool.ts';
import { FakeCloud } from '../testing/fake-cloud.ts';
import { DATASETS_FILE } from './dataset-registry.ts';
import { GrpcUplink } from './grpc-uplink.ts';
import type { GrpcUplinkOptions } from './grpc-uplink.ts';
import { isoFromUs, toAnnotation } from './link-event-sender.ts';
import type { CloudConfig } from './uplink.ts';

const CLOUD: CloudConfig = {
  url: 'http://cloud.test',
  grpcUrl: 'http://cloud.test:50051',
  apiKey: 'sk_test',
  experimentId: '0b9d4c1e-3f59-4a55-9a43-5f1f3e0e8a01',
  sortie: 'flight-7',
  retryMaxMs: 30_000,
};
const T0_US = 1_533_737_000_000_000;
const silent = pino({ level: 'silent' });

/** A fake MAVLink v1 frame carrying `i`, so a mix-up shows. */
function frameOf(i: number): Uint8Array {
  const f = new Uint8Array(12);
  f[0] = 0xfe;
  f[1] = 4;
  new DataView(f.buffer).setUint32(6, i, true);
  return f;
}

const scratch = new Uint8Array(AGENT_RECORD_MAX_BYTES);
function append(spool: Spool, sysid: number, i: number): bigint {
  const n = encodeAgentRecord(scratch, frameOf(i), { sysid, compid: 1, recordedTime: false, source: null });
  return spool.append(scratch.subarray(0, n), T0_US + i * 1000);
}

let dir: string;
let spool: Spool;
let events: LinkEventQueue;
let cloud: FakeCloud;
const uplinks: GrpcUplink[] = [];

async function startUplink(options: GrpcUplinkOptions = {}): Promise<GrpcUplink> {
  const uplink = new GrpcUplink(CLOUD, {
    api: cloud.api,
    transport: cloud.transport,
    sessionMaxFrames: 50,
    sessionMaxMs: 40,
    batchPoints: 20,
    backoff: { baseMs: 5, capMs: 60 },
    stopGraceMs: 200,
    ...options,
  });
  uplink.start({ spool, linkEvents: events, systems: { list: () => [], onSystem: () => () => {} }, logger: silent });
  uplinks.push(uplink);
  return uplink;
}

async function until(what: () => boolean, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!what()) {
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 5));
  }
}

const drained = (uplink: GrpcUplink) => uplink.drain(AbortSignal.timeout(10_000));

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'uplink-'));
  spool = await Spool.open({ dir, flushIntervalMs: 2, ackPersistIntervalMs: 10 });
  events = await LinkEventQueue.open(join(dir, LINK_EVENTS_FILE));
  cloud = new FakeCloud();
});
afterEach(async () => {
  for (const u of uplinks.splice(0)) await u.stop();
  await events.close();
  await spool.close();
  await rm(dir, { recursive: true, force: true });
});

describe('GrpcUplink', () => {
  it('streams each system id to its own dataset in bounded sessions and acks the spool to the end', async () => {
    const bySys = new Map<number, bigint[]>([[1, []], [2, []]]);
    for (let i = 0; i < 1000; i++) {
      const sysid = i % 4 === 3 ? 2 : 1;
      bySys.get(sysid)!.push(append(spool, sysid, i));
    }
    await spool.flush();
    const uplink = await startUplink();
    await drained(uplink);

    expect(spool.ackedSeq).toBe(1000n);
    const ds1 = cloud.datasetId('flight-7-sys1');
    const ds2 = cloud.datasetId('flight-7-sys2');
    expect(ds1).toBeDefined();
    expect(ds2).toBeDefined();
    expect(cloud.storedSeqs(ds1)).toEqual(bySys.get(1));
    expect(cloud.storedSeqs(ds2)).toEqual(bySys.get(2));
    // Each frame as spooled: bytes and receive time (µs) intact.
    const f = cloud.frames.get(ds2!)!.get(4n)!;
    expect([...f.bytes]).toEqual([...frameOf(3)]);
    expect(f.timestampUs).toBe(BigInt(T0_US + 3000));
    for (const s of cloud.sessions) {
      expect(s.outcome).toBe('answered');
      expect(s.format).toBe('mavlink-raw-v1');
      expect(s.points).toBeLessThanOrEqual(50);
      expect(s.batches).toBeLessThanOrEqual(3);
    }
    expect(uplink.status()).toMatchObject({ state: 'streaming', sent: 1000, confirmed: 1000, duplicates: 0 });
  });

  it('cuts a session after sessionMaxMs when frames only trickle in', async () => {
    const uplink = await startUplink({ sessionMaxFrames: 10_000, sessionMaxMs: 30 });
    for (let i = 0; i < 6; i++) {
      append(spool, 1, i);
      await new Promise((r) => setTimeout(r, 15));
    }
    await spool.flush();
    await drained(uplink);
    expect(spool.ackedSeq).toBe(6n);
    expect(cloud.sessions.length).toBeGreaterThanOrEqual(2);
    expect(cloud.sessions.every((s) => s.points < 6)).toBe(true);
  });

  it('keeps spooling while the cloud is away, backs off, then sends everything once; no link event', async () => {
    cloud.down = true;
    for (let i = 0; i < 300; i++) append(spool, 1, i);
    await spool.flush();
    const uplink = await startUplink();
    await until(() => uplink.counters().failures >= 4);
    expect(uplink.status().state).toBe('backing-off');
    expect(uplink.status().detail).toMatch(/unreachable|Unavailable/);
    expect(spool.ackedSeq).toBe(0n);
    // The vehicle side goes on meanwhile.
    for (let i = 300; i < 600; i++) append(spool, 1, i);
    await spool.flush();
    cloud.down = false;
    await drained(uplink);
    expect(spool.ackedSeq).toBe(600n);
    expect(cloud.storedSeqs(cloud.datasetId('flight-7-sys1'))).toEqual(Array.from({ length: 600 }, (_, i) => BigInt(i + 1)));
    expect(cloud.events.size).toBe(0);
    expect(events.pending()).toEqual([]);
    expect(uplink.status().state).toBe('streaming');
  });

  it('sends a session that failed midway again; the frames already stored collapse onto their rows', async () => {
    for (let i = 0; i < 200; i++) append(spool, 1, i);
    await spool.flush();
    cloud.failAfterBatches = 1;
    const uplink = await startUplink();
    await drained(uplink);
    expect(spool.ackedSeq).toBe(200n);
    expect(cloud.storedSeqs(cloud.datasetId('flight-7-sys1'))).toHaveLength(200);
    expect(cloud.sessions.some((s) => s.outcome !== 'answered')).toBe(true);
    expect(cloud.duplicates).toBeGreaterThanOrEqual(20);
    expect(uplink.status().duplicates).toBe(cloud.duplicates);
  });

  it('never acks past a frame the cloud has not confirmed, whichever system is slow', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    cloud.holdAnswer = async (datasetId) => {
      if (datasetId === cloud.datasetId('flight-7-sys2')) await held;
    };
    let firstOfSys2 = 0n;
    for (let i = 0; i < 400; i++) {
      const sysid = i === 100 ? 2 : 1;
      const seq = append(spool, sysid, i);
      if (sysid === 2) firstOfSys2 = seq;
    }
    await spool.flush();
    const uplink = await startUplink();
    // System 1's sessions are all confirmed, system 2's one frame is not: the ack stops below it.
    await until(() => cloud.sessions.filter((s) => s.outcome === 'answered').reduce((n, s) => n + s.points, 0) === 399);
    await new Promise((r) => setTimeout(r, 50));
    expect(spool.ackedSeq).toBe(firstOfSys2 - 1n);
    release();
    await drained(uplink);
    expect(spool.ackedSeq).toBe(400n);
  });

  it('against a cloud without the narrow sink (UNIMPLEMENTED): retries at the longest interval, acks nothing, says why', async () => {
    cloud.unimplemented = true;
    for (let i = 0; i < 10; i++) append(spool, 1, i);
    await spool.flush();
    const uplink = await startUplink({ backoff: { baseMs: 5, capMs: 300 } });
    await until(() => uplink.status().state === 'backing-off');
    const status = uplink.status();
    expect(status.detail).toMatch(/gRPC Unimplemented: ingest of narrow datasets is not available yet/);
    expect(status.retryInSeconds).toBeGreaterThan(0.1); // the cap straight away, not the 5 ms base
    expect(spool.ackedSeq).toBe(0n);
    cloud.unimplemented = false;
    await drained(uplink);
    expect(spool.ackedSeq).toBe(10n);
  });

  it('annotates a link loss once, with its regain in the data, and the regain as its own annotation', async () => {
    const loss: LinkLossEvent = { type: 'LINK_LOSS', sysid: 1, lastFrameUs: T0_US + 5_000_000, detectedAtUs: T0_US + 8_000_000, thresholdUs: 3_000_000 };
    const regain: LinkRegainedEvent = { type: 'LINK_REGAINED', sysid: 1, lastFrameUs: loss.lastFrameUs, regainedAtUs: T0_US + 9_236_000, outageUs: 4_236_000 };
    await events.push(loss);
    await events.push(regain);
    append(spool, 1, 0);
    await spool.flush();
    const uplink = await startUplink();
    await drained(uplink);
    const stored = cloud.events.get(cloud.datasetId('flight-7-sys1')!)!;
    expect(stored.map((e) => e.kind)).toEqual(['LINK_LOSS', 'LINK_REGAINED']);
    expect(stored[0]).toMatchObject({
      timestamp: isoFromUs(loss.lastFrameUs),
      data: { key: linkEventKey(loss), clock: 'agent', sysid: 1, lastFrameAt: isoFromUs(loss.lastFrameUs), thresholdSeconds: 3, regainedAt: isoFromUs(regain.regainedAtUs), outageSeconds: 4.236 },
    });
    expect(stored[1]).toMatchObject({ data: { key: linkEventKey(regain), lossKey: linkEventKey(loss) } });
    expect(events.pending()).toEqual([]);
  });

  it('does not write an annotation twice when the cloud already has its key (a crash between the POST and the local ack)', async () => {
    const loss: LinkLossEvent = { type: 'LINK_LOSS', sysid: 3, lastFrameUs: T0_US, detectedAtUs: T0_US + 5_000_000, thresholdUs: 5_000_000 };
    const queued = await events.push(loss);
    const datasetId = await cloud.api.registerNarrowDataset('flight-7-sys3');
    await cloud.api.postEvents(datasetId, [toAnnotation(queued, [queued])]);
    const posts = cloud.postCalls;
    const uplink = await startUplink();
    await drained(uplink);
    expect(cloud.postCalls).toBe(posts);
    expect(cloud.events.get(datasetId)!.filter((e) => e.kind === 'LINK_LOSS')).toHaveLength(1);
    expect(events.pending()).toEqual([]);
  });

  it('keeps link events while the cloud is away and annotates them when it is back', async () => {
    cloud.down = true;
    await events.push({ type: 'LINK_LOSS', sysid: 1, lastFrameUs: T0_US, detectedAtUs: T0_US + 5_000_000, thresholdUs: 5_000_000 });
    const uplink = await startUplink();
    await new Promise((r) => setTimeout(r, 80));
    expect(events.pending()).toHaveLength(1);
    expect(uplink.status().pendingEvents).toBe(1);
    cloud.down = false;
    await drained(uplink);
    expect(cloud.events.get(cloud.datasetId('flight-7-sys1')!)!.map((e) => e.kind)).toEqual(['LINK_LOSS']);
  });

  it('remembers dataset ids in the spool directory, so a restarted uplink does not register again', async () => {
    append(spool, 1, 0);
    append(spool, 2, 1);
    await spool.flush();
    const first = await startUplink();
    await drained(first);
    await first.stop();
    expect(cloud.registerCalls).toBe(2);
    const file = JSON.parse(await readFile(join(dir, DATASETS_FILE), 'utf8')) as { datasets: Record<string, string> };
    expect(Object.values(file.datasets).sort()).toEqual([cloud.datasetId('flight-7-sys1'), cloud.datasetId('flight-7-sys2')].sort());

    append(spool, 1, 2);
    append(spool, 2, 3);
    await spool.flush();
    const second = await startUplink();
    await drained(second);
    expect(cloud.registerCalls).toBe(2);
    expect(spool.ackedSeq).toBe(4n);
  });

  it('stop() lets the sessions already sent answer, and leaves the rest in the spool', async () => {
    for (let i = 0; i < 30; i++) append(spool, 1, i);
    await spool.flush();
    const uplink = await startUplink({ sessionMaxMs: 10_000, sessionMaxFrames: 10_000 });
    await until(() => uplink.counters().sent === 30);
    await uplink.stop();
    // The open session was half-closed on stop and its answer awaited.
    expect(spool.ackedSeq).toBe(30n);
    expect(uplink.status().state).toBe('off');
  });
});

describe('isoFromUs', () => {
  it('keeps microseconds', () => {
    expect(isoFromUs(1_533_737_161_905_123)).toBe('2018-08-08T14:06:01.905123Z');
    expect(isoFromUs(1_533_737_161_000_001)).toBe('2018-08-08T14:06:01.000001Z');
  });
});
