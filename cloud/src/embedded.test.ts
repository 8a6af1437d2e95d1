import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wideTableName } from './datasets/wide-table.ts';
import { startTestService, type TestOrg, type TestService } from './testing/test-service.ts';
import { expectEnvelope } from './testing/expect-envelope.ts';

// The default deployment: no SORTIE_DATABASE_URL, so the service runs on embedded PGlite.
let t: TestService;
let org: TestOrg;

beforeAll(async () => {
  t = await startTestService({ embedded: true });
  org = await t.createOrg();
});
afterAll(() => t?.stop());

describe('embedded PGlite end to end', () => {
  it('runs on PGlite', () => {
    expect(t.service.ctx.database.kind).toBe('pglite');
    expect(t.service.ctx.config.databaseUrl).toBeUndefined();
  });

  it('creates an experiment, registers a wide dataset, appends, and lists both back', async () => {
    const experiment = await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'embedded flight', description: 'laptop' } });
    expect(experiment.status).toBe(201);
    const experimentId: string = experiment.body.id;

    const registered = await t.call('POST', '/api/streams/register', {
      key: org.key,
      body: {
        experimentId,
        datasetName: 'bench',
        channels: [
          { name: 'altitude', unit: 'm', dataType: 'double' },
          { name: 'counter', unit: '', dataType: 'int64' },
          { name: 'total', unit: '', dataType: 'uint64' },
          { name: 'armed', unit: '', dataType: 'bool' },
          { name: 'note', unit: '', dataType: 'string' },
          { name: 'raw', unit: '', dataType: 'bytes' },
        ],
      },
    });
    expect(registered.status).toBe(201);
    expect(registered.body.addedColumns).toEqual(['ch_0', 'ch_1', 'ch_2', 'ch_3', 'ch_4', 'ch_5']);
    const datasetId: string = registered.body.datasetId;

    const appended = await t.call('POST', '/api/datasets/append', {
      key: org.key,
      body: {
        experimentId,
        datasetId,
        rows: [
          { timestamp: '2026-06-01T00:00:00Z', values: { altitude: 10.5, counter: '9223372036854775807', total: '18446744073709551615' } },
          { timestamp: '2026-06-01T00:00:00Z', values: { armed: true, note: 'a "quoted", {text}', raw: 'AAEC/w==' } },
          { timestamp: '2026-06-01T00:00:01Z', values: { ch_0: 11 } },
        ],
      },
    });
    expect(appended.status).toBe(200);
    expect(appended.body).toEqual({ rowsWritten: 2, valuesWritten: 7, ignoredKeys: [] });

    const stored = await sql<Record<string, string | null>>`
      select ch_0::text as altitude, ch_1::text as counter, ch_2::text as total, ch_3::text as armed, ch_4 as note,
             encode(ch_5, 'base64') as raw
      from ${sql.table(wideTableName(datasetId))} order by time`.execute(t.service.ctx.db);
    expect(stored.rows).toEqual([
      { altitude: '10.5', counter: '9223372036854775807', total: '18446744073709551615', armed: 'true', note: 'a "quoted", {text}', raw: 'AAEC/w==' },
      { altitude: '11', counter: null, total: null, armed: null, note: null, raw: null },
    ]);

    const experiments = await t.call('GET', '/api/experiments/list', { key: org.key });
    expect(experiments.status).toBe(200);
    expect(experiments.body).toEqual([
      {
        id: experimentId,
        name: 'embedded flight',
        description: 'laptop',
        createdAt: expect.any(String),
        datasets: [
          {
            id: datasetId,
            experimentId,
            name: 'bench',
            storageShape: 'wide',
            codec: null,
            dialect: null,
            format: null,
            createdAt: expect.any(String),
            // Just appended to: the flight is live.
            lastDataAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
          },
        ],
      },
    ]);

    const channels = await t.call('GET', `/api/datasets/channels?datasetId=${datasetId}&experimentId=${experimentId}`, { key: org.key });
    expect(channels.status).toBe(200);
    expect(channels.body.map((c: { name: string; hypertableColName: string; dataType: string }) => `${c.hypertableColName}:${c.name}:${c.dataType}`)).toEqual([
      'ch_0:altitude:double',
      'ch_1:counter:int64',
      'ch_2:total:uint64',
      'ch_3:armed:bool',
      'ch_4:note:string',
      'ch_5:raw:bytes',
    ]);
  });

  it('authenticates and answers errors in the envelope on PGlite too', async () => {
    expectEnvelope(await t.call('GET', '/api/experiments/list'), 401, 'unauthorized');
    const other = await t.createOrg('Other');
    const list = await t.call('GET', '/api/experiments/list', { key: other.key });
    expect(list.status).toBe(200);
    expect(list.body).toEqual([]);
  });
});
