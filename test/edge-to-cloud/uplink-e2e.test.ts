// The agent CLI replaying a real capture to the real cloud (SortieService on the real PostgreSQL):
// frames stored once, channels and Query over the data, replays that change nothing, a cloud outage
// and an agent SIGKILL that lose and duplicate nothing, and one LINK_LOSS annotation for a silence.
//
// Needs the cloud's narrow (mavlink-raw-v1) sink. A capability probe runs first; while the cloud
// answers UNIMPLEMENTED for that format, every test here is skipped with that reason.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { TelemetryService } from '@sortie/contracts';
import { TlogWalker, crcExtraOf, mavlinkChecksum } from '@sortie/contracts/mavlink';
import { DATASETS_FILE } from '@sortie/edge-agent';
import { FIXTURES, fixturePath, startAgentProcess } from '@sortie/edge-agent/testing';
import type { AgentProcess } from '@sortie/edge-agent/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { narrowCounts, narrowIngestMissing, startCloud } from './cloud-under-test.ts';
import type { CloudUnderTest, NarrowCounts } from './cloud-under-test.ts';

const TLOG = fixturePath(FIXTURES.tlog);
const TLOG_FRAMES = 23_894;

let cloud: CloudUnderTest;
let missing: string | null = 'the cloud did not start';
const dirs: string[] = [];
/** Rows one clean delivery of the tlog writes (set by the first test). */
let referenceRows: number | null = null;

beforeAll(async () => {
  cloud = await startCloud();
  missing = await narrowIngestMissing(cloud);
  if (missing) console.warn(`uplink end-to-end tests skipped: ${missing}`);
}, 60_000);
afterAll(async () => {
  await cloud?.destroy();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function spoolDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'uplink-e2e-'));
  dirs.push(d);
  return d;
}

function agent(dir: string, sortie: string, extra: string[] = []): AgentProcess {
  return startAgentProcess(
    [
      '--source', `file:${TLOG}`,
      '--spool-dir', dir,
      '--cloud', cloud.httpUrl,
      '--grpc', cloud.grpcUrl,
      '--experiment', cloud.experimentId,
      '--sortie', sortie,
      '--status-interval', '0.1',
      '--retry-max-seconds', '1',
      ...extra,
    ],
    { SORTIE_AGENT_API_KEY: cloud.key },
  );
}

/** The dataset ids the agent registered, from its spool directory, by name. */
async function datasetsOf(dir: string): Promise<Map<string, string>> {
  const file = JSON.parse(await readFile(join(dir, DATASETS_FILE), 'utf8')) as { datasets: Record<string, string> };
  return new Map(Object.entries(file.datasets).map(([k, id]) => [k.split(' ').at(-1)!, id]));
}

async function totals(dir: string): Promise<NarrowCounts & { datasets: number }> {
  let rows = 0;
  let frames = 0;
  const ids = [...(await datasetsOf(dir)).values()];
  for (const id of ids) {
    const c = await narrowCounts(cloud, id);
    rows += c.rows;
    frames += c.frames;
  }
  return { rows, frames, minSeq: null, maxSeq: null, datasets: ids.length };
}

async function annotations(datasetId: string, kind: string): Promise<Array<{ timestamp: string; data: Record<string, unknown> }>> {
  const r = await cloud.call('GET', `/api/datasets/events?${new URLSearchParams({ datasetId, experimentId: cloud.experimentId, kind })}`);
  expect(r.status).toBe(200);
  return r.body;
}

async function expectClean(run: AgentProcess): Promise<void> {
  const end = await run.exited;
  expect(end, run.stderr()).toEqual({ code: 0, signal: null });
  expect(run.stderr()).toBe('');
}

const ackedOf = (run: AgentProcess): number => Number(run.lastStatus()?.['acknowledged'] ?? 0);

describe('uplink end to end (real cloud, real PostgreSQL)', () => {
  it('(a) replays arduplane-sitl-vtol.tlog to the cloud: every frame stored, channels and Query show ATTITUDE.roll on 2018-08-08', async (ctx) => {
    if (missing) ctx.skip(missing);
    const dir = await spoolDir();
    const run = agent(dir, 'vtol-a', ['--speed', 'max']);
    await expectClean(run);
    expect(run.lines.some((l) => l['msg'] === 'the cloud has acknowledged every frame and link event')).toBe(true);

    const datasets = await datasetsOf(dir);
    const sys1 = datasets.get('vtol-a-sys1');
    expect(sys1).toBeDefined();
    const all = await totals(dir);
    expect(all.frames).toBe(TLOG_FRAMES);
    expect(all.rows).toBeGreaterThan(TLOG_FRAMES);
    referenceRows = all.rows;
    const c1 = await narrowCounts(cloud, sys1!);
    expect(c1.maxSeq).toBeLessThanOrEqual(TLOG_FRAMES);

    const channels = await cloud.call('GET', `/api/datasets/channels?${new URLSearchParams({ datasetId: sys1!, experimentId: cloud.experimentId })}`);
    expect(channels.status).toBe(200);
    const names = (channels.body as Array<{ name: string; hypertableColName: string }>).map((c) => c.hypertableColName ?? c.name);
    expect(names).toContain('mavlink.ATTITUDE.roll');

    const client = createClient(TelemetryService, createGrpcTransport({ baseUrl: cloud.grpcUrl }));
    const q = await client.query(
      { experimentId: cloud.experimentId, datasetId: sys1!, channelIds: ['mavlink.ATTITUDE.roll'], maxPointsPerChannel: 500 },
      { headers: { 'x-api-key': cloud.key } },
    );
    const series = q.series[0]!;
    expect(series.rawPoints).toBeGreaterThan(100n);
    expect(series.points.length).toBeGreaterThan(10);
    for (const p of series.points) {
      expect(new Date(Number(p.timestamp!.seconds) * 1000).toISOString().slice(0, 10)).toBe('2018-08-08');
    }
  }, 180_000);

  it('(b) replaying the same file twice leaves the row count unchanged (same spool: nothing to send; fresh spool: same frame_seqs collapse)', async (ctx) => {
    if (missing || referenceRows === null) ctx.skip(missing ?? 'needs test (a)');
    const dir = await spoolDir();
    await expectClean(agent(dir, 'vtol-b', ['--speed', 'max']));
    const first = await totals(dir);
    expect(first).toMatchObject({ frames: TLOG_FRAMES, rows: referenceRows });

    const again = agent(dir, 'vtol-b', ['--speed', 'max']);
    await expectClean(again);
    expect(await totals(dir)).toEqual(first);

    // Another ground station (or a wiped spool) replays the same file into the same sortie: the seqs
    // come out the same, and every frame collapses onto its row.
    const other = await spoolDir();
    const fresh = agent(other, 'vtol-b', ['--speed', 'max']);
    await expectClean(fresh);
    const stopped = fresh.lines.find((l) => l['msg'] === 'uplink stopped')!;
    expect(stopped['duplicates']).toBe(TLOG_FRAMES);
    expect(stopped['written']).toBe(0);
    expect(await totals(dir)).toEqual(first);
  }, 180_000);

  it('(c) outage: the cloud stops mid-replay and comes back; every frame arrives once, spooling never stops, no LINK_LOSS', async (ctx) => {
    if (missing || referenceRows === null) ctx.skip(missing ?? 'needs test (a)');
    const dir = await spoolDir();
    // 207.6 s of flight at 20× ≈ 10 s of replay.
    const run = agent(dir, 'vtol-c', ['--speed', '20']);
    await run.waitFor((l) => l['msg'] === 'status' && Number(l['acknowledged']) > 2000);
    await cloud.stop();
    const seen = run.lines.length;
    const away = await run.waitFor((l) => run.lines.indexOf(l) >= seen && l['msg'] === 'status' && l['uplink'] === 'backing-off');
    // The vehicle side keeps spooling while the cloud is away; nothing is acknowledged meanwhile.
    await run.waitFor((l) => l['msg'] === 'status' && Number(l['spooled']) > Number(away['spooled']) + 3000, 30_000);
    expect(run.lastStatus()!['acknowledged']).toBe(away['acknowledged']);
    expect(Number(run.lastStatus()!['spooled'])).toBeLessThan(TLOG_FRAMES); // still mid-replay
    await cloud.start();
    await expectClean(run);
    expect(run.lines.some((l) => l['msg'] === 'cloud reachable again: streaming the backlog')).toBe(true);

    const all = await totals(dir);
    expect(all).toMatchObject({ frames: TLOG_FRAMES, rows: referenceRows });
    for (const id of (await datasetsOf(dir)).values()) {
      expect(await annotations(id, 'LINK_LOSS')).toEqual([]);
    }
  }, 180_000);

  it('(d) crash: the agent is SIGKILLed mid-stream and restarted; no frame lost, none stored twice', async (ctx) => {
    if (missing || referenceRows === null) ctx.skip(missing ?? 'needs test (a)');
    const dir = await spoolDir();
    let acked = 0;
    for (const floor of [3000, 9000]) {
      const run = agent(dir, 'vtol-d', ['--speed', '20']);
      await run.waitFor((l) => l['msg'] === 'status' && Number(l['acknowledged']) + acked > floor);
      run.child.kill('SIGKILL');
      expect((await run.exited).signal).toBe('SIGKILL');
      acked += ackedOf(run);
    }
    const last = agent(dir, 'vtol-d', ['--speed', 'max']);
    await expectClean(last);
    expect(await totals(dir)).toMatchObject({ frames: TLOG_FRAMES, rows: referenceRows });
  }, 180_000);

  it('(e) a silence longer than the threshold gives exactly one LINK_LOSS annotation, at the last frame before it', async (ctx) => {
    if (missing) ctx.skip(missing);
    const dir = await spoolDir();
    await expectClean(agent(dir, 'vtol-e', ['--speed', 'max', '--link-loss-seconds', '3']));
    const sys1 = (await datasetsOf(dir)).get('vtol-e-sys1')!;
    const losses = await annotations(sys1, 'LINK_LOSS');
    expect(losses).toHaveLength(1);
    expect(losses[0]!.data).toMatchObject({ thresholdSeconds: 3, outageSeconds: 4.236, sysid: 1 });
    expect(losses[0]!.timestamp.slice(0, 10)).toBe('2018-08-08');
    expect(await annotations(sys1, 'LINK_REGAINED')).toHaveLength(1);

    // Started again on the same spool: nothing new, and the annotation is not written twice.
    await expectClean(agent(dir, 'vtol-e', ['--speed', 'max', '--link-loss-seconds', '3']));
    expect(await annotations(sys1, 'LINK_LOSS')).toHaveLength(1);
  }, 120_000);

  it('(f) what a run without --cloud spooled is sent by a later run that has one', async (ctx) => {
    if (missing) ctx.skip(missing);
    const dir = await spoolDir();
    const capture = fixturePath(FIXTURES.v2);
    const offline = startAgentProcess(['--source', `file:${capture}`, '--spool-dir', dir, '--speed', 'max']);
    expect((await offline.exited).code).toBe(0);
    const online = startAgentProcess(
      ['--source', `file:${capture}`, '--spool-dir', dir, '--cloud', cloud.httpUrl, '--grpc', cloud.grpcUrl, '--experiment', cloud.experimentId, '--sortie', 'v2-f'],
      { SORTIE_AGENT_API_KEY: cloud.key },
    );
    await expectClean(online);
    expect(online.lines.map((l) => l['msg'])).toEqual(expect.arrayContaining(['sending what the cloud has not acknowledged yet', 'the cloud has acknowledged every frame and link event']));
    const all = await totals(dir);
    expect(all.frames).toBe(1476);
  }, 60_000);

  it('(g) two vehicles on one link: one dataset per system id, each frame in its own', async (ctx) => {
    if (missing) ctx.skip(missing);
    // The first 3,000 frames of the tlog, each followed by a copy from system 2 (CRC recomputed).
    const walked = new TlogWalker({ crcExtra: crcExtraOf }).push(new Uint8Array(await readFile(TLOG))).slice(0, 3000);
    const parts: Uint8Array[] = [];
    for (const { frame } of walked) {
      const copy = Uint8Array.from(frame.bytes);
      copy[3] = 2;
      const crcAt = 6 + copy[1]!;
      const crc = mavlinkChecksum(copy, 0, crcAt, crcExtraOf(copy[5]!)!);
      copy[crcAt] = crc & 0xff;
      copy[crcAt + 1] = crc >> 8;
      parts.push(frame.bytes, copy);
    }
    const dir = await spoolDir();
    const capture = join(dir, 'two-vehicles.bin');
    await writeFile(capture, Buffer.concat(parts));
    const run = startAgentProcess(
      ['--source', `file:${capture}`, '--spool-dir', join(dir, 'spool'), '--speed', 'max', '--cloud', cloud.httpUrl, '--grpc', cloud.grpcUrl, '--experiment', cloud.experimentId, '--sortie', 'pair-g'],
      { SORTIE_AGENT_API_KEY: cloud.key },
    );
    await expectClean(run);
    const datasets = await datasetsOf(join(dir, 'spool'));
    expect([...datasets.keys()].sort()).toEqual(['pair-g-sys1', 'pair-g-sys2']);
    const [one, two] = [await narrowCounts(cloud, datasets.get('pair-g-sys1')!), await narrowCounts(cloud, datasets.get('pair-g-sys2')!)];
    expect([one.frames, two.frames]).toEqual([3000, 3000]);
    // Interleaved on the link: system 1 has the odd seqs, system 2 the even ones.
    expect([one.minSeq, one.maxSeq, two.minSeq, two.maxSeq]).toEqual([1, 5999, 2, 6000]);
    expect(one.rows).toBe(two.rows);
  }, 60_000);
});
