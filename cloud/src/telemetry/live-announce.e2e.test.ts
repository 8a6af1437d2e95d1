import { SCOPES } from '@sortie/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueApiKey } from '../auth/api-keys.ts';
import { createOrganization } from '../auth/organizations.ts';
import { createLogger } from '../platform/logger.ts';
import { NatsLiveBus } from '../platform/live-bus.ts';
import { startChildCloudFixture, type ChildCloudFixture } from '../testing/child-cloud-fixture.ts';
import { eventually } from '../testing/delivery-fixture.ts';
import { TEST_NATS_URL } from '../testing/nats-server.ts';
import { startServiceChild, type ServiceChild } from '../testing/service-child.ts';

// A cloud process announces every committed change of a dataset over NATS, where a follower on another
// replica hears it: here the test's own bus in the cloud's namespace stands for that replica. HTTP
// append, gRPC Submit and events each announce once they are stored, and a call that stores nothing
// (refused) announces nothing.

let f: ChildCloudFixture;
let cloud: ServiceChild;
let bus: NatsLiveBus;
let key: string;
let experimentId: string;
let datasetId: string;
let heard = 0;

async function post(p: string, body: unknown) {
  const r = await fetch(cloud.url + p, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, body: (await r.json()) as any };
}

beforeAll(async () => {
  f = await startChildCloudFixture();
  cloud = await startServiceChild(f.env());
  const { organizationId, ownerUserId } = await createOrganization(f.database.db, 'live');
  ({ apiKey: key } = await issueApiKey(f.database.db, { organizationId, userId: ownerUserId, scopes: [...SCOPES] }));
  experimentId = (await post('/api/experiments/create', { name: 'live' })).body.id;
  datasetId = (await post('/api/streams/register', { experimentId, datasetName: 'stand', channels: [{ name: 'thrust' }] })).body.datasetId;
  bus = await NatsLiveBus.connect({ url: TEST_NATS_URL, namespace: f.namespace, logger: createLogger('silent') });
  bus.follow(datasetId, () => void heard++);
  await new Promise((r) => setTimeout(r, 200));
});
afterAll(async () => {
  await bus?.close();
  cloud?.process.kill('SIGTERM');
  await cloud?.exited;
  await f?.close();
});

const heardOnce = async (before: number) => eventually(async () => (heard > before ? true : undefined), 5000, 'an announcement');

describe('committed changes are announced to followers on other replicas', () => {
  it('HTTP append, once stored', async () => {
    const before = heard;
    const r = await post('/api/datasets/append', { experimentId, datasetId, rows: [{ timestamp: '2026-11-27T10:00:00Z', values: { thrust: 1 } }] });
    expect(r.status).toBe(200);
    await heardOnce(before);
  });

  it('gRPC Submit, once stored', async () => {
    const before = heard;
    // Connect's JSON form of the gRPC port's Submit.
    const r = await fetch(`${cloud.grpcUrl}/sortie.telemetry.v1.TelemetryService/Submit`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ experimentId, datasetId, points: [{ timestamp: '2026-11-27T10:00:01Z', channelId: '0', double: 2 }] }),
    });
    expect(await r.json()).toMatchObject({ written: '1' });
    await heardOnce(before);
  });

  it('events, once stored', async () => {
    const before = heard;
    const r = await post('/api/datasets/events', { experimentId, datasetId, events: [{ timestamp: '2026-11-27T10:00:02Z', kind: 'LINK_LOSS' }] });
    expect(r.status).toBe(201);
    await heardOnce(before);
  });

  it('a refused append announces nothing', async () => {
    const before = heard;
    const r = await post('/api/datasets/append', { experimentId, datasetId, rows: [{ timestamp: '2026-11-27T10:00:03Z', values: { ch_9: 1 } }] });
    expect(r.status).toBe(400);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(heard).toBe(before);
  });
});
