import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detailFields, expectEnvelope } from '../testing/expect-envelope.ts';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';

// What PostgreSQL cannot store (NUL, unpaired surrogates, year 0) and what a recursive reader cannot walk
// (10,000 levels of JSON) is refused at the edge with 400 naming the field, never a 500 from the database.
let t: TestService;
let org: TestOrg;
let experimentId: string;
let datasetId: string;

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg();
  const experiment = await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'hostile' } });
  expect(experiment.status).toBe(201);
  experimentId = experiment.body.id;
  const dataset = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId, datasetName: 'd', channels: [{ name: 'note', dataType: 'string' }] },
  });
  expect(dataset.status).toBe(201);
  datasetId = dataset.body.datasetId;
});
afterAll(() => t?.stop());

async function expectRefused(path: string, body: unknown, field: string): Promise<void> {
  const response = await t.call('POST', path, typeof body === 'string' ? { key: org.key, rawBody: body } : { key: org.key, body });
  expectEnvelope(response, 400, 'invalid_request');
  expect(detailFields(response)).toContain(field);
}

describe('text fields', () => {
  it('a NUL in a name or description is 400 naming the field', async () => {
    await expectRefused('/api/experiments/create', { name: 'a\u0000b' }, 'name');
    await expectRefused('/api/streams/register', { experimentId, datasetName: 'x', channels: [{ name: 'al\u0000t' }] }, 'channels[0].name');
  });

  it('an unpaired surrogate is refused too, instead of being stored as U+FFFD', async () => {
    await expectRefused('/api/experiments/create', { name: 'ok', description: 'bad \ud800 text' }, 'description');
  });

  it('a NUL in an appended string value is 400 naming the value', async () => {
    await expectRefused(
      '/api/datasets/append',
      { experimentId, datasetId, rows: [{ timestamp: '2026-05-01T12:00:00Z', values: { note: 'x\u0000' } }] },
      'rows[0].values.note',
    );
  });
});

describe('free-form JSON', () => {
  it('a NUL in a key of event data is 400 naming its path', async () => {
    await expectRefused(
      '/api/datasets/events',
      { experimentId, datasetId, events: [{ timestamp: '2026-05-01T12:00:00Z', kind: 'NOTE', data: { outer: { 'k\u0000': 1 } } }] },
      'events[0].data.outer.k\u0000',
    );
  });

  it('10,000 levels of command args are 400, and the service keeps answering', async () => {
    const deep = '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000);
    const body = `{"experimentId":"${experimentId}","datasetId":"${datasetId}","commandText":"GO","relTime":0,"args":${deep}}`;
    const response = await t.call('POST', '/api/commands/create', { key: org.key, rawBody: body });
    expectEnvelope(response, 400, 'invalid_request');
    expect(detailFields(response)[0]).toMatch(/^args\.a\.a/);
    expect((await t.call('GET', '/healthz')).status).toBe(200);
  });
});

describe('timestamps', () => {
  it('year 0 is 400 on every route that takes a timestamp, with one message', async () => {
    await expectRefused('/api/datasets/events', { experimentId, datasetId, events: [{ timestamp: '0000-01-01T00:00:00Z', kind: 'NOTE' }] }, 'events[0].timestamp');
    await expectRefused('/api/datasets/append', { experimentId, datasetId, rows: [{ timestamp: '2300-01-01T00:00:00Z', values: { note: 'x' } }] }, 'rows[0].timestamp');
    const ack = await t.call('POST', '/api/commands/ack', {
      body: { commandId: '0194d8a4-6b1e-7c3a-8f00-000000000001', state: 'acked', vehicleTime: '0000-01-01T00:00:00Z' },
    });
    expectEnvelope(ack, 400, 'invalid_request');
    expect(ack.body.error.details).toEqual([{ field: 'vehicleTime', message: 'is outside the supported range (years 1685 to 2255)' }]);
  });
});
