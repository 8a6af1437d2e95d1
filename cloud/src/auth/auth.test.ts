import { generateApiKey } from '@sortie/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';
import { revokeApiKey } from './api-keys.ts';
import { expectEnvelope } from '../testing/expect-envelope.ts';

let t: TestService;
let orgA: TestOrg;
let orgB: TestOrg;
// Org A's resources, addressed by org B in the cross-organization checks.
let experimentA: string;
let datasetA: string;
let channelA: string;

async function createExperiment(key: string, name: string): Promise<string> {
  const response = await t.call('POST', '/api/experiments/create', { key, body: { name } });
  expect(response.status).toBe(201);
  return response.body.id;
}

beforeAll(async () => {
  t = await startTestService();
  orgA = await t.createOrg('Org A');
  orgB = await t.createOrg('Org B');
  experimentA = await createExperiment(orgA.key, 'flight A');
  const registered = await t.call('POST', '/api/streams/register', {
    key: orgA.key,
    body: { experimentId: experimentA, datasetName: 'bench', channels: [{ name: 'altitude', unit: 'm', dataType: 'double' }] },
  });
  expect(registered.status).toBe(201);
  datasetA = registered.body.datasetId;
  channelA = registered.body.channels[0].id;
});
afterAll(() => t?.stop());

const listExperiments = (key?: string) => t.call('GET', '/api/experiments/list', { key });

describe('401 unauthorized', () => {
  it('rejects a request with no key', async () => {
    const response = await listExperiments();
    expectEnvelope(response, 401, 'unauthorized');
  });

  it('rejects a malformed key', async () => {
    for (const key of ['nonsense', 'sk_short', `pk_${'a'.repeat(43)}`, `${generateApiKey()}x`]) {
      expectEnvelope(await listExperiments(key), 401, 'unauthorized');
    }
  });

  it('rejects a well-formed key nobody issued', async () => {
    const response = await listExperiments(generateApiKey());
    expectEnvelope(response, 401, 'unauthorized');
  });

  it('rejects a key once the service clock passes its expiry', async () => {
    const { apiKey } = await orgA.keyWith(['datasets:read'], { expiresAt: new Date(t.clock.now().getTime() + 60_000) });
    expect((await listExperiments(apiKey)).status).toBe(200);
    t.clock.advance(59_000);
    expect((await listExperiments(apiKey)).status).toBe(200);
    t.clock.advance(2_000);
    const response = await listExperiments(apiKey);
    expectEnvelope(response, 401, 'unauthorized');
    expect(response.body.error.message).toMatch(/expired/);
  });

  it('rejects a revoked key', async () => {
    const { apiKey, keyId } = await orgA.keyWith(['datasets:read']);
    expect((await listExperiments(apiKey)).status).toBe(200);
    expect(await revokeApiKey(t.service.ctx.db, keyId, t.clock.now())).toBe(true);
    const response = await listExperiments(apiKey);
    expectEnvelope(response, 401, 'unauthorized');
    expect(response.body.error.message).toMatch(/revoked/);
    // Revoking twice reports that nothing changed.
    expect(await revokeApiKey(t.service.ctx.db, keyId, t.clock.now())).toBe(false);
  });

  it('checks the key before the body, so a bad body with no key is still 401', async () => {
    const response = await t.call('POST', '/api/datasets/append', { rawBody: '{', headers: { 'content-type': 'application/json' } });
    expectEnvelope(response, 401, 'unauthorized');
  });
});

describe('403 insufficient_scope names the missing scope', () => {
  it('datasets:read on GET /api/experiments/list', async () => {
    const { apiKey } = await orgA.keyWith(['datasets:write', 'telemetry:write', 'telemetry:read']);
    const response = await listExperiments(apiKey);
    expectEnvelope(response, 403, 'insufficient_scope');
    expect(response.body.error.message).toContain('datasets:read');
  });

  it('datasets:read on GET /api/datasets/channels', async () => {
    const { apiKey } = await orgA.keyWith(['datasets:write']);
    const response = await t.call('GET', `/api/datasets/channels?datasetId=${datasetA}`, { key: apiKey });
    expectEnvelope(response, 403, 'insufficient_scope');
    expect(response.body.error.message).toContain('datasets:read');
  });

  it('datasets:write on POST /api/datasets/channels/create', async () => {
    const { apiKey } = await orgA.keyWith(['datasets:read', 'telemetry:write']);
    const response = await t.call('POST', '/api/datasets/channels/create', {
      key: apiKey,
      body: { experimentId: experimentA, datasetId: datasetA, name: 'pressure', unit: 'Pa', dataType: 'double' },
    });
    expectEnvelope(response, 403, 'insufficient_scope');
    expect(response.body.error.message).toContain('datasets:write');
    const channels = await t.call('GET', `/api/datasets/channels?datasetId=${datasetA}`, { key: orgA.key });
    expect(channels.body.map((c: { name: string }) => c.name)).not.toContain('pressure');
  });

  it('telemetry:write on POST /api/datasets/append', async () => {
    const { apiKey } = await orgA.keyWith(['datasets:read', 'datasets:write', 'telemetry:read']);
    const response = await t.call('POST', '/api/datasets/append', {
      key: apiKey,
      body: { experimentId: experimentA, datasetId: datasetA, rows: [{ timestamp: '2026-01-01T00:00:00Z', values: { ch_0: 1 } }] },
    });
    expectEnvelope(response, 403, 'insufficient_scope');
    expect(response.body.error.message).toContain('telemetry:write');
  });

  it('lets the same endpoint through once the key holds the scope', async () => {
    const { apiKey } = await orgA.keyWith(['datasets:read']);
    const response = await t.call('GET', `/api/datasets/channels?datasetId=${datasetA}`, { key: apiKey });
    expect(response.status).toBe(200);
    expect(response.body).toHaveLength(1);
  });
});

describe("404 not_found for another organization's resources", () => {
  it('channels list', async () => {
    const response = await t.call('GET', `/api/datasets/channels?datasetId=${datasetA}`, { key: orgB.key });
    expectEnvelope(response, 404, 'not_found');
    // Indistinguishable from a dataset that does not exist at all.
    const missing = crypto.randomUUID();
    const absent = await t.call('GET', `/api/datasets/channels?datasetId=${missing}`, { key: orgB.key });
    expectEnvelope(absent, 404, 'not_found');
    expect(response.body.error.message.replaceAll(datasetA, 'ID')).toBe(absent.body.error.message.replaceAll(missing, 'ID'));
  });

  it('channels create', async () => {
    const response = await t.call('POST', '/api/datasets/channels/create', {
      key: orgB.key,
      body: { experimentId: experimentA, datasetId: datasetA, name: 'intruder', unit: '', dataType: 'double' },
    });
    expectEnvelope(response, 404, 'not_found');
  });

  it("channels update, both on org A's dataset and with org A's channel id in org B's own dataset", async () => {
    const response = await t.call('POST', '/api/datasets/channels/update', {
      key: orgB.key,
      body: { experimentId: experimentA, datasetId: datasetA, id: channelA, name: 'renamed' },
    });
    expectEnvelope(response, 404, 'not_found');

    const experimentB = await createExperiment(orgB.key, 'flight B');
    const registered = await t.call('POST', '/api/streams/register', {
      key: orgB.key,
      body: { experimentId: experimentB, datasetName: 'bench', channels: [{ name: 'thrust', unit: '', dataType: 'double' }] },
    });
    expect(registered.status).toBe(201);
    const crossed = await t.call('POST', '/api/datasets/channels/update', {
      key: orgB.key,
      body: { experimentId: experimentB, datasetId: registered.body.datasetId, id: channelA, name: 'renamed' },
    });
    expectEnvelope(crossed, 404, 'not_found');

    const channels = await t.call('GET', `/api/datasets/channels?datasetId=${datasetA}`, { key: orgA.key });
    expect(channels.body.map((c: { name: string }) => c.name)).toEqual(['altitude']);
  });

  it('append', async () => {
    const response = await t.call('POST', '/api/datasets/append', {
      key: orgB.key,
      body: { experimentId: experimentA, datasetId: datasetA, rows: [{ timestamp: '2026-01-01T00:00:00Z', values: { ch_0: 1 } }] },
    });
    expectEnvelope(response, 404, 'not_found');
  });

  it('events create and list', async () => {
    const created = await t.call('POST', '/api/datasets/events', {
      key: orgB.key,
      body: { experimentId: experimentA, datasetId: datasetA, events: [{ timestamp: '2026-01-01T00:00:00Z', kind: 'NOTE' }] },
    });
    expectEnvelope(created, 404, 'not_found');
    const listed = await t.call('GET', `/api/datasets/events?datasetId=${datasetA}`, { key: orgB.key });
    expectEnvelope(listed, 404, 'not_found');
    const own = await t.call('GET', `/api/datasets/events?datasetId=${datasetA}`, { key: orgA.key });
    expect(own.status).toBe(200);
    expect(own.body).toEqual([]);
  });

  it('streams/register into the other organization’s experiment', async () => {
    const response = await t.call('POST', '/api/streams/register', {
      key: orgB.key,
      body: { experimentId: experimentA, datasetName: 'sneaky', channels: [{ name: 'yaw', unit: '', dataType: 'double' }] },
    });
    expectEnvelope(response, 404, 'not_found');
    const list = await listExperiments(orgA.key);
    const experiment = list.body.find((e: { id: string }) => e.id === experimentA);
    expect(experiment.datasets.map((d: { name: string }) => d.name)).toEqual(['bench']);
  });
});

describe('a key works for its own organization', () => {
  it('lists its own experiments and none of the other organization’s', async () => {
    const a = await listExperiments(orgA.key);
    expect(a.status).toBe(200);
    expect(a.body.map((e: { id: string }) => e.id)).toContain(experimentA);
    const b = await listExperiments(orgB.key);
    expect(b.status).toBe(200);
    expect(b.body.map((e: { id: string }) => e.id)).not.toContain(experimentA);
  });

  it("appends to and reads its own dataset's channels", async () => {
    const appended = await t.call('POST', '/api/datasets/append', {
      key: orgA.key,
      body: { experimentId: experimentA, datasetId: datasetA, rows: [{ timestamp: '2026-01-01T00:00:00Z', values: { ch_0: 12.5 } }] },
    });
    expect(appended.status).toBe(200);
    expect(appended.body.valuesWritten).toBe(1);
    const channels = await t.call('GET', `/api/datasets/channels?datasetId=${datasetA}&experimentId=${experimentA}`, { key: orgA.key });
    expect(channels.status).toBe(200);
    expect(channels.body).toEqual([{ id: channelA, name: 'altitude', unit: 'm', dataType: 'double', hypertableColName: 'ch_0' }]);
  });
});
