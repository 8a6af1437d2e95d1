// Two replicas of the cloud on one PostgreSQL and one NATS: the edge agent streams a real capture into
// replica A over gRPC while a follower on replica B (Connect on its HTTP port, the typed client) sees the
// flight grow. Nothing is shared between the replicas but the database and NATS: B learns of each batch
// A commits from A's announcement, and reads it from storage.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSortieClient, type FollowAnswer } from '@sortie/client';
import { SortieService, createLogger, createOrganization, issueApiKey, loadConfig } from '@sortie/cloud';
import { createTestDatabase, dropDeliveryStream, TEST_NATS_URL, uniqueNatsNamespace, type TestDatabase } from '@sortie/cloud/testing';
import { SCOPES } from '@sortie/contracts';
import { FIXTURES, fixturePath, startAgentProcess } from '@sortie/edge-agent/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const TLOG = fixturePath(FIXTURES.tlog);
const SIGNAL = 'mavlink.ATTITUDE.roll';

let database: TestDatabase;
let a: SortieService;
let b: SortieService;
let key: string;
let experimentId: string;
const namespace = uniqueNatsNamespace();
const dirs: string[] = [];

async function replica(): Promise<SortieService> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sortie-replica-'));
  dirs.push(dataDir);
  const service = await SortieService.create(
    loadConfig({
      SORTIE_DATA_DIR: dataDir,
      SORTIE_HTTP_PORT: '0',
      SORTIE_GRPC_PORT: '0',
      SORTIE_LOG_LEVEL: 'silent',
      SORTIE_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
      SORTIE_DATABASE_URL: database.url,
      SORTIE_NATS_URL: TEST_NATS_URL,
      SORTIE_NATS_NAMESPACE: namespace,
      // A stream still open at the end is cut after 2.5 s, not 25.
      SORTIE_SHUTDOWN_GRACE_SECONDS: '5',
    }),
    { logger: createLogger('silent') },
  );
  await service.start();
  return service;
}

beforeAll(async () => {
  database = await createTestDatabase();
  a = await replica();
  b = await replica();
  const { organizationId, ownerUserId } = await createOrganization(a.ctx.db, 'Live Org');
  ({ apiKey: key } = await issueApiKey(a.ctx.db, { organizationId, scopes: [...SCOPES], userId: ownerUserId }));
  const r = await fetch(`${a.httpUrl}/api/experiments/create`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'live' }) });
  experimentId = ((await r.json()) as { id: string }).id;
}, 60_000);
afterAll(async () => {
  await a?.destroy();
  await b?.destroy();
  await dropDeliveryStream(TEST_NATS_URL, namespace).catch(() => {});
  await database?.drop();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** The dataset of `name` as replica B lists it, once the agent has registered it. */
async function datasetOnB(name: string): Promise<{ id: string; lastDataAt?: string | null }> {
  const end = Date.now() + 30_000;
  for (;;) {
    const r = await fetch(`${b.httpUrl}/api/experiments/list`, { headers: { 'x-api-key': key } });
    const experiments = (await r.json()) as Array<{ id: string; datasets: Array<{ id: string; name: string; lastDataAt?: string | null }> }>;
    const found = experiments.find((e) => e.id === experimentId)?.datasets.find((d) => d.name === name);
    if (found) return found;
    if (Date.now() > end) throw new Error(`no dataset ${name} on replica B`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('following on one replica a flight streamed into another', () => {
  it('the follower on B sees each batch the agent commits through A, as it is committed', async () => {
    const spool = await mkdtemp(join(tmpdir(), 'live-agent-'));
    dirs.push(spool);
    // 10× the capture's pace: about 20 s of streaming, in the agent's ordinary batches.
    const agent = startAgentProcess(
      ['--source', `file:${TLOG}`, '--spool-dir', spool, '--cloud', a.httpUrl, '--grpc', a.grpcUrl, '--experiment', experimentId, '--sortie', 'live', '--speed', '10', '--status-interval', '0.2'],
      { SORTIE_AGENT_API_KEY: key },
    );
    const dataset = await datasetOnB('live-sys1');
    const abort = new AbortController();
    const updates: Array<{ at: number; update: FollowAnswer }> = [];
    const client = createSortieClient({ baseUrl: b.httpUrl, apiKey: key });
    const following = (async () => {
      for await (const update of client.telemetry.follow({ experimentId, datasetId: dataset.id, channelIds: [SIGNAL], windowMs: 60_000, maxPointsPerWindow: 100_000 / 10 }, { signal: abort.signal })) {
        updates.push({ at: Date.now(), update });
      }
    })();
    const exit = await agent.exited;
    expect(exit, agent.stderr()).toEqual({ code: 0, signal: null });
    // B lists the flight as live: it heard A's announcements.
    expect((await datasetOnB('live-sys1')).lastDataAt).toBeTruthy();

    // Query on B after the flight: the follower's last head is the series' last sample.
    const query = await client.telemetry.query({ experimentId, datasetId: dataset.id, channelIds: [SIGNAL], maxPointsPerChannel: 100_000 });
    const last = query.series[0]!.points.at(-1)!;
    const end = Date.now() + 10_000;
    while (!updates.some((u) => u.update.head === last.timestamp) && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    abort.abort();
    await following;

    const increments = updates.filter((u) => !u.update.reset && u.update.series[0]!.points.length > 0);
    // The flight grew in many steps over the stream's seconds, not in one read at the end.
    expect(increments.length).toBeGreaterThan(20);
    expect(increments.at(-1)!.at - increments[0]!.at).toBeGreaterThan(5_000);
    expect(updates.every((u, i) => i === 0 || !u.update.reset)).toBe(true);
    // Every raw sample after the opening window reached the follower, and nothing twice.
    const opening = updates[0]!.update.series[0]!;
    const got = opening.rawPoints + increments.reduce((n, u) => n + u.update.series[0]!.rawPoints, 0);
    expect(got).toBe(query.series[0]!.rawPoints);
    expect(updates.at(-1)!.update.head).toBe(last.timestamp);
  }, 120_000);
});
