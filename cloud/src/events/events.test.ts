import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';
import { expectEnvelope } from '../testing/expect-envelope.ts';

let t: TestService;
let org: TestOrg;
let experimentId: string;
let datasetId: string;
let otherDatasetId: string;

type EventIn = { timestamp: string; kind: string; message?: string; data?: Record<string, unknown> };
const postEvents = (events: EventIn[], o: { key?: string; datasetId?: string; experimentId?: string } = {}) =>
  t.call('POST', '/api/datasets/events', {
    key: o.key ?? org.key,
    body: { experimentId: o.experimentId ?? experimentId, datasetId: o.datasetId ?? datasetId, events },
  });
const listEvents = (query: string, key = org.key) => t.call('GET', `/api/datasets/events?${query}`, { key });

async function register(name: string): Promise<string> {
  const response = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId, datasetName: name, channels: [{ name: 'altitude', unit: 'm', dataType: 'double' }] },
  });
  expect(response.status).toBe(201);
  return response.body.datasetId;
}

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg();
  const experiment = await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'events' } });
  expect(experiment.status).toBe(201);
  experimentId = experiment.body.id;
  datasetId = await register('flight-1');
  otherDatasetId = await register('flight-2');
});
afterAll(() => t?.stop());

describe('POST /api/datasets/events', () => {
  it('creates annotations at absolute times, answered in UTC', async () => {
    const response = await postEvents([
      { timestamp: '2026-05-01T12:00:20Z', kind: 'LANDING', message: 'touchdown', data: { runway: '27L', gear: [1, 2, 3] } },
      // 12:00:05 UTC written with a +02:00 offset.
      { timestamp: '2026-05-01T14:00:05.250+02:00', kind: 'NOTE', message: 'engine start' },
      { timestamp: '2026-05-01T12:00:10Z', kind: 'TAKEOFF' },
      { timestamp: '2026-05-01T12:00:15Z', kind: 'NOTE', message: 'gear up' },
    ]);
    expect(response.status).toBe(201);
    expect(response.body.events).toHaveLength(4);
    expect(response.body.events[0]).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      datasetId,
      timestamp: '2026-05-01T12:00:20.000Z',
      kind: 'LANDING',
      message: 'touchdown',
      data: { runway: '27L', gear: [1, 2, 3] },
      createdAt: expect.any(String),
    });
    expect(response.body.events[1]).toMatchObject({ timestamp: '2026-05-01T12:00:05.250Z', kind: 'NOTE', message: 'engine start', data: {} });
    expect(response.body.events[2]).toMatchObject({ kind: 'TAKEOFF', message: '', data: {} });
  });

  it('refuses a bad kind with 400 naming the field, and writes nothing from the batch', async () => {
    const response = await postEvents([
      { timestamp: '2026-05-01T12:01:00Z', kind: 'NOTE' },
      { timestamp: '2026-05-01T12:01:01Z', kind: 'not a kind!' },
    ]);
    expectEnvelope(response, 400, 'invalid_request');
    expect(response.body.error.details.map((d: { field: string }) => d.field)).toEqual(['events[1].kind']);
    for (const kind of ['', '9LIVES', 'x'.repeat(65)]) {
      expectEnvelope(await postEvents([{ timestamp: '2026-05-01T12:01:00Z', kind }]), 400, 'invalid_request');
    }
    const list = await listEvents(`datasetId=${datasetId}`);
    expect(list.body).toHaveLength(4);
  });

  it('refuses a bad timestamp and an empty batch with 400', async () => {
    const bad = await postEvents([{ timestamp: '12:00', kind: 'NOTE' }]);
    expectEnvelope(bad, 400, 'invalid_request');
    expect(bad.body.error.details.map((d: { field: string }) => d.field)).toEqual(['events[0].timestamp']);
    const empty = await postEvents([]);
    expectEnvelope(empty, 400, 'invalid_request');
    expect(empty.body.error.details.map((d: { field: string }) => d.field)).toEqual(['events']);
  });

  it('403 without telemetry:write', async () => {
    const { apiKey } = await org.keyWith(['datasets:read', 'datasets:write']);
    const response = await postEvents([{ timestamp: '2026-05-01T12:02:00Z', kind: 'NOTE' }], { key: apiKey });
    expectEnvelope(response, 403, 'insufficient_scope');
    expect(response.body.error.message).toContain('telemetry:write');
  });
});

describe('GET /api/datasets/events', () => {
  it('lists a dataset’s events in time order, not insertion order', async () => {
    const response = await listEvents(`datasetId=${datasetId}`);
    expect(response.status).toBe(200);
    expect(response.body.map((e: { timestamp: string; kind: string }) => `${e.timestamp} ${e.kind}`)).toEqual([
      '2026-05-01T12:00:05.250Z NOTE',
      '2026-05-01T12:00:10.000Z TAKEOFF',
      '2026-05-01T12:00:15.000Z NOTE',
      '2026-05-01T12:00:20.000Z LANDING',
    ]);
  });

  it('filters by kind', async () => {
    const response = await listEvents(`datasetId=${datasetId}&kind=NOTE`);
    expect(response.status).toBe(200);
    expect(response.body.map((e: { message: string }) => e.message)).toEqual(['engine start', 'gear up']);
    const none = await listEvents(`datasetId=${datasetId}&kind=LINK_LOSS`);
    expect(none.body).toEqual([]);
  });

  it('accepts the dataset’s experimentId and 404s another one', async () => {
    expect((await listEvents(`datasetId=${datasetId}&experimentId=${experimentId}`)).body).toHaveLength(4);
    expectEnvelope(await listEvents(`datasetId=${datasetId}&experimentId=${crypto.randomUUID()}`), 404, 'not_found');
  });

  it('keeps datasets apart', async () => {
    const created = await postEvents([{ timestamp: '2026-05-01T12:00:00Z', kind: 'NOTE', message: 'other flight' }], { datasetId: otherDatasetId });
    expect(created.status).toBe(201);
    const other = await listEvents(`datasetId=${otherDatasetId}`);
    expect(other.body.map((e: { message: string }) => e.message)).toEqual(['other flight']);
    expect((await listEvents(`datasetId=${datasetId}`)).body).toHaveLength(4);
  });

  it('400 without datasetId', async () => {
    const response = await listEvents('kind=NOTE');
    expectEnvelope(response, 400, 'invalid_request');
    expect(response.body.error.details.map((d: { field: string }) => d.field)).toEqual(['datasetId']);
  });
});

describe('another organization', () => {
  it('gets 404 not_found on create and list, and writes nothing', async () => {
    const other = await t.createOrg('Other');
    const created = await postEvents([{ timestamp: '2026-05-01T12:03:00Z', kind: 'NOTE', message: 'intruder' }], { key: other.key });
    expectEnvelope(created, 404, 'not_found');
    expectEnvelope(await listEvents(`datasetId=${datasetId}`, other.key), 404, 'not_found');
    const own = await listEvents(`datasetId=${datasetId}`);
    expect(own.body.map((e: { message: string }) => e.message)).not.toContain('intruder');
  });

  it('404 for an unknown dataset', async () => {
    expectEnvelope(await postEvents([{ timestamp: '2026-05-01T12:03:00Z', kind: 'NOTE' }], { datasetId: crypto.randomUUID() }), 404, 'not_found');
  });
});
