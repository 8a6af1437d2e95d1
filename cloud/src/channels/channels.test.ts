import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wideTableName } from '../datasets/wide-table.ts';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';
import { detailFields, expectEnvelope } from '../testing/expect-envelope.ts';

let t: TestService;
let org: TestOrg;
let experimentId: string;
let wideId: string;
let narrowId: string;

const WIDE_CHANNELS = [
  { name: 'altitude', unit: 'm', dataType: 'double' },
  { name: 'airspeed', unit: 'm/s', dataType: 'float' },
  { name: 'mode', unit: '', dataType: 'enum' },
];

const listChannels = (datasetId: string, key = org.key, extra = '') => t.call('GET', `/api/datasets/channels?datasetId=${datasetId}${extra}`, { key });
const createChannel = (body: Record<string, unknown>, key = org.key) =>
  t.call('POST', '/api/datasets/channels/create', { key, body: { experimentId, datasetId: wideId, unit: '', dataType: 'double', ...body } });
const updateChannel = (body: Record<string, unknown>, key = org.key) =>
  t.call('POST', '/api/datasets/channels/update', { key, body: { experimentId, datasetId: wideId, ...body } });

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg();
  const experiment = await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'channels' } });
  expect(experiment.status).toBe(201);
  experimentId = experiment.body.id;
});
afterAll(() => t?.stop());

describe('registration', () => {
  it('registers a wide dataset with channels at ch_0..ch_N', async () => {
    const response = await t.call('POST', '/api/streams/register', {
      key: org.key,
      body: { experimentId, datasetName: 'bench-wide', channels: WIDE_CHANNELS },
    });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ experimentId, datasetName: 'bench-wide', storageShape: 'wide', created: true });
    expect(response.body.addedColumns).toEqual(['ch_0', 'ch_1', 'ch_2']);
    expect(response.body.channels.map((c: { hypertableColName: string }) => c.hypertableColName)).toEqual(['ch_0', 'ch_1', 'ch_2']);
    wideId = response.body.datasetId;
  });

  it('registers a narrow MAVLink dataset with no channels', async () => {
    const response = await t.call('POST', '/api/streams/register', {
      key: org.key,
      body: {
        experimentId,
        datasetName: 'flight-narrow',
        storageShape: 'narrow',
        codec: 'mavlink',
        dialect: 'ardupilotmega',
        format: 'mavlink-raw-v1',
      },
    });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ storageShape: 'narrow', created: true, addedColumns: [], channels: [] });
    narrowId = response.body.datasetId;
  });

  it('registering the same name again answers the same dataset (idempotent)', async () => {
    const response = await t.call('POST', '/api/streams/register', {
      key: org.key,
      body: { experimentId, datasetName: 'bench-wide', channels: WIDE_CHANNELS },
    });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ datasetId: wideId, created: false, addedColumns: [] });
  });
});

describe('GET /api/datasets/channels', () => {
  it('lists the channel objects of a wide dataset', async () => {
    const response = await listChannels(wideId);
    expect(response.status).toBe(200);
    expect(response.body).toEqual(
      WIDE_CHANNELS.map((c, i) => ({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), ...c, hypertableColName: `ch_${i}` })),
    );
  });

  it('accepts a matching experimentId and 404s a different one', async () => {
    expect((await listChannels(wideId, org.key, `&experimentId=${experimentId}`)).status).toBe(200);
    expectEnvelope(await listChannels(wideId, org.key, `&experimentId=${crypto.randomUUID()}`), 404, 'not_found');
  });

  it('lists a narrow dataset with no data as empty', async () => {
    const response = await listChannels(narrowId);
    expect(response.status).toBe(200);
    expect(response.body).toEqual([]);
  });

  it('400s a missing datasetId with details naming datasetId', async () => {
    const response = await t.call('GET', '/api/datasets/channels', { key: org.key });
    expectEnvelope(response, 400, 'invalid_request');
    expect(detailFields(response)).toEqual(['datasetId']);
  });

  it('400s a datasetId that is not a UUID', async () => {
    const response = await listChannels('ch_0');
    expectEnvelope(response, 400, 'invalid_request');
    expect(detailFields(response)).toEqual(['datasetId']);
  });

  it('404s an unknown dataset', async () => {
    expectEnvelope(await listChannels(crypto.randomUUID()), 404, 'not_found');
  });
});

describe('POST /api/datasets/channels/create', () => {
  it('assigns the next free ch_N and returns the channel object', async () => {
    const response = await createChannel({ name: 'temperature', unit: 'degC', dataType: 'double' });
    expect(response.status).toBe(201);
    expect(response.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'temperature',
      unit: 'degC',
      dataType: 'double',
      hypertableColName: 'ch_3',
    });
    const next = await createChannel({ name: 'pressure', unit: 'Pa', dataType: 'int32' });
    expect(next.status).toBe(201);
    expect(next.body.hypertableColName).toBe('ch_4');
    const list = await listChannels(wideId);
    expect(list.body.map((c: { name: string; hypertableColName: string }) => `${c.hypertableColName}=${c.name}`)).toEqual([
      'ch_0=altitude',
      'ch_1=airspeed',
      'ch_2=mode',
      'ch_3=temperature',
      'ch_4=pressure',
    ]);
  });

  it('refuses a narrow dataset with 409 conflict', async () => {
    const response = await t.call('POST', '/api/datasets/channels/create', {
      key: org.key,
      body: { experimentId, datasetId: narrowId, name: 'ATTITUDE.roll', unit: 'rad', dataType: 'float' },
    });
    expectEnvelope(response, 409, 'conflict');
    expect((await listChannels(narrowId)).body).toEqual([]);
  });

  it('enforces 2 to 120 characters for the name', async () => {
    for (const name of ['a', 'b'.repeat(121)]) {
      const response = await createChannel({ name });
      expectEnvelope(response, 400, 'invalid_request');
      expect(detailFields(response)).toEqual(['name']);
    }
    const two = await createChannel({ name: 'ab' });
    expect(two.status).toBe(201);
    expect(two.body.name).toBe('ab');
    const long = 'c'.repeat(120);
    const oneTwenty = await createChannel({ name: long });
    expect(oneTwenty.status).toBe(201);
    expect(oneTwenty.body.name).toBe(long);
  });

  it('refuses a duplicate name with 409 conflict', async () => {
    const response = await createChannel({ name: 'altitude' });
    expectEnvelope(response, 409, 'conflict');
    expect(response.body.error.message).toContain('altitude');
  });

  it('refuses an unknown dataType with 400 naming dataType', async () => {
    const response = await createChannel({ name: 'weird', dataType: 'quaternion' });
    expectEnvelope(response, 400, 'invalid_request');
    expect(detailFields(response)).toEqual(['dataType']);
  });

  it('404s an unknown dataset and a dataset addressed through the wrong experiment', async () => {
    expectEnvelope(await createChannel({ name: 'orphan', datasetId: crypto.randomUUID() }), 404, 'not_found');
    const otherExperiment = await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'other' } });
    expectEnvelope(await createChannel({ name: 'orphan', experimentId: otherExperiment.body.id }), 404, 'not_found');
  });
});

describe('POST /api/datasets/channels/update', () => {
  it('changes name, unit and dataType and keeps hypertableColName', async () => {
    const before = (await listChannels(wideId)).body.find((c: { name: string }) => c.name === 'airspeed');
    const response = await updateChannel({ id: before.id, name: 'true-airspeed', unit: 'kn', dataType: 'double' });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ id: before.id, name: 'true-airspeed', unit: 'kn', dataType: 'double', hypertableColName: 'ch_1' });
    const after = (await listChannels(wideId)).body.find((c: { id: string }) => c.id === before.id);
    expect(after).toEqual(response.body);
  });

  it('a partial update changes only what is sent', async () => {
    const before = (await listChannels(wideId)).body.find((c: { name: string }) => c.name === 'mode');
    const response = await updateChannel({ id: before.id, unit: 'enum' });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ...before, unit: 'enum' });
  });

  it('refuses hypertableColName in the body with 400 and changes nothing', async () => {
    const before = (await listChannels(wideId)).body.find((c: { name: string }) => c.name === 'altitude');
    const response = await updateChannel({ id: before.id, name: 'alt2', hypertableColName: 'ch_9' });
    expectEnvelope(response, 400, 'invalid_request');
    expect(response.body.error.message).toContain('hypertableColName');
    const after = (await listChannels(wideId)).body.find((c: { id: string }) => c.id === before.id);
    expect(after).toEqual(before);
  });

  it('enforces the name length on update too', async () => {
    const channel = (await listChannels(wideId)).body[0];
    for (const name of ['z', 'z'.repeat(121)]) {
      const response = await updateChannel({ id: channel.id, name });
      expectEnvelope(response, 400, 'invalid_request');
      expect(detailFields(response)).toEqual(['name']);
    }
  });

  it('404s an unknown channel id', async () => {
    const response = await updateChannel({ id: crypto.randomUUID(), name: 'ghost' });
    expectEnvelope(response, 404, 'not_found');
  });

  it("404s a channel of another dataset addressed through this one", async () => {
    const other = await t.call('POST', '/api/streams/register', {
      key: org.key,
      body: { experimentId, datasetName: 'second-wide', channels: [{ name: 'voltage', unit: 'V', dataType: 'double' }] },
    });
    expect(other.status).toBe(201);
    const response = await updateChannel({ id: other.body.channels[0].id, name: 'hijacked' });
    expectEnvelope(response, 404, 'not_found');
    expect((await listChannels(other.body.datasetId)).body[0].name).toBe('voltage');
  });

  it('refuses renaming onto an existing name with 409 conflict', async () => {
    const channels = (await listChannels(wideId)).body;
    const altitude = channels.find((c: { name: string }) => c.name === 'altitude');
    const response = await updateChannel({ id: altitude.id, name: 'temperature' });
    expectEnvelope(response, 409, 'conflict');
    expect((await listChannels(wideId)).body.find((c: { id: string }) => c.id === altitude.id).name).toBe('altitude');
  });
});

describe('scopes and organizations', () => {
  it('403 insufficient_scope for a key lacking datasets:read (list) or datasets:write (create, update)', async () => {
    const writeOnly = await org.keyWith(['datasets:write', 'telemetry:write']);
    const list = await listChannels(wideId, writeOnly.apiKey);
    expectEnvelope(list, 403, 'insufficient_scope');
    expect(list.body.error.message).toContain('datasets:read');

    const readOnly = await org.keyWith(['datasets:read', 'telemetry:write']);
    const create = await createChannel({ name: 'forbidden' }, readOnly.apiKey);
    expectEnvelope(create, 403, 'insufficient_scope');
    expect(create.body.error.message).toContain('datasets:write');
    const channel = (await listChannels(wideId)).body[0];
    const update = await updateChannel({ id: channel.id, name: 'forbidden' }, readOnly.apiKey);
    expectEnvelope(update, 403, 'insufficient_scope');
    expect(update.body.error.message).toContain('datasets:write');
    expect((await listChannels(wideId)).body.map((c: { name: string }) => c.name)).not.toContain('forbidden');
  });

  it("404 not_found for another organization's dataset and channel", async () => {
    const other = await t.createOrg('Other');
    const channel = (await listChannels(wideId)).body[0];
    expectEnvelope(await listChannels(wideId, other.key), 404, 'not_found');
    expectEnvelope(await createChannel({ name: 'intruder' }, other.key), 404, 'not_found');
    expectEnvelope(await updateChannel({ id: channel.id, name: 'intruder' }, other.key), 404, 'not_found');
    expect((await listChannels(wideId)).body.map((c: { name: string }) => c.name)).not.toContain('intruder');
  });
});

describe('create writes metadata only', () => {
  const T0 = '2026-02-01T10:00:00.000Z';

  it('append to a created channel is 400 naming it until a registration lists it, then works', async () => {
    const created = await createChannel({ name: 'late-sensor', unit: 'g', dataType: 'double' });
    expect(created.status).toBe(201);
    const col: string = created.body.hypertableColName;
    const table = wideTableName(wideId);
    const columnExists = async () =>
      (
        await sql<{ n: number }>`select count(*)::int as n from information_schema.columns where table_name = ${table} and column_name = ${col}`.execute(
          t.service.ctx.db,
        )
      ).rows[0]!.n === 1;
    expect(await columnExists()).toBe(false);

    const byColumn = await t.call('POST', '/api/datasets/append', {
      key: org.key,
      body: { experimentId, datasetId: wideId, rows: [{ timestamp: T0, values: { [col]: 1.5 } }] },
    });
    expectEnvelope(byColumn, 400, 'invalid_request');
    expect(byColumn.body.error.message).toContain(col);
    expect(detailFields(byColumn)).toEqual([`rows[0].values.${col}`]);

    const byName = await t.call('POST', '/api/datasets/append', {
      key: org.key,
      body: { experimentId, datasetId: wideId, rows: [{ timestamp: T0, values: { 'late-sensor': 1.5 } }] },
    });
    expectEnvelope(byName, 400, 'invalid_request');
    expect(byName.body.error.message).toContain(col);

    const current = (await listChannels(wideId)).body.map((c: { name: string; unit: string; dataType: string }) => ({
      name: c.name,
      unit: c.unit,
      dataType: c.dataType,
    }));
    const reregistered = await t.call('POST', '/api/streams/register', {
      key: org.key,
      body: { experimentId, datasetName: 'bench-wide', channels: current },
    });
    expect(reregistered.status).toBe(200);
    expect(reregistered.body.addedColumns).toContain(col);
    expect(await columnExists()).toBe(true);
    // The channel keeps its id and address.
    expect(reregistered.body.channels.find((c: { id: string }) => c.id === created.body.id).hypertableColName).toBe(col);

    const appended = await t.call('POST', '/api/datasets/append', {
      key: org.key,
      body: { experimentId, datasetId: wideId, rows: [{ timestamp: T0, values: { [col]: 1.5 } }] },
    });
    expect(appended.status).toBe(200);
    expect(appended.body).toEqual({ rowsWritten: 1, valuesWritten: 1, ignoredKeys: [] });
    const stored = await sql<{ v: number }>`select ${sql.ref(col)} as v from ${sql.table(table)} where time = ${T0}::timestamptz`.execute(t.service.ctx.db);
    expect(stored.rows).toEqual([{ v: 1.5 }]);
  });

  it('relabelling dataType later converts nothing: the column keeps taking its original kind of value', async () => {
    const altitude = (await listChannels(wideId)).body.find((c: { name: string }) => c.name === 'altitude');
    expect((await updateChannel({ id: altitude.id, dataType: 'string' })).status).toBe(200);
    const number = await t.call('POST', '/api/datasets/append', {
      key: org.key,
      body: { experimentId, datasetId: wideId, rows: [{ timestamp: '2026-02-01T10:00:01Z', values: { ch_0: 120.25 } }] },
    });
    expect(number.status).toBe(200);
    expect(number.body.valuesWritten).toBe(1);
  });
});
