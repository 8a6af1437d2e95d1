import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wideTableName } from '../datasets/wide-table.ts';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';
import { detailFields, expectEnvelope } from '../testing/expect-envelope.ts';

let t: TestService;
let org: TestOrg;
let experimentId: string;
let datasetId: string;
let table: string;
let channelIds: Record<string, string>;

type Row = { timestamp: string; values: Record<string, unknown> };
const append = (rows: Row[], o: { key?: string; datasetId?: string; experimentId?: string } = {}) =>
  t.call('POST', '/api/datasets/append', {
    key: o.key ?? org.key,
    body: { experimentId: o.experimentId ?? experimentId, datasetId: o.datasetId ?? datasetId, rows },
  });

/** Every stored row of a wide table, values as Postgres renders them in text. */
async function storedRows(tableName: string, columns: string[]): Promise<Array<Record<string, string | null>>> {
  const selections = columns.map((c) => sql`${sql.ref(c)}::text as ${sql.ref(c)}`);
  const result = await sql<Record<string, string | null>>`
    select to_char(time at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as time, ${sql.join(selections)}
    from ${sql.table(tableName)} order by time`.execute(t.service.ctx.db);
  return result.rows;
}

async function rowCount(tableName: string): Promise<number> {
  const result = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(tableName)}`.execute(t.service.ctx.db);
  return result.rows[0]!.n;
}

async function registerWide(name: string, channels: Array<{ name: string; unit?: string; dataType: string }>) {
  const response = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId, datasetName: name, channels: channels.map((c) => ({ unit: '', ...c })) },
  });
  expect(response.status).toBeLessThan(300);
  return response.body;
}

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg();
  const experiment = await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'append' } });
  expect(experiment.status).toBe(201);
  experimentId = experiment.body.id;
  const registered = await registerWide('bench', [
    { name: 'altitude', unit: 'm', dataType: 'double' },
    { name: 'airspeed', unit: 'm/s', dataType: 'double' },
    { name: 'label', dataType: 'string' },
  ]);
  datasetId = registered.datasetId;
  table = wideTableName(datasetId);
  channelIds = Object.fromEntries(registered.channels.map((c: { name: string; id: string }) => [c.name, c.id]));
});
afterAll(() => t?.stop());

describe('addressing', () => {
  it('writes values addressed by ch_N', async () => {
    const response = await append([{ timestamp: '2026-03-01T00:00:01Z', values: { ch_0: 100.5, ch_1: 20 } }]);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ rowsWritten: 1, valuesWritten: 2, ignoredKeys: [] });
    const rows = await storedRows(table, ['ch_0', 'ch_1', 'ch_2']);
    expect(rows).toEqual([{ time: '2026-03-01T00:00:01.000000Z', ch_0: '100.5', ch_1: '20', ch_2: null }]);
  });

  it('writes values addressed by channel name', async () => {
    const response = await append([{ timestamp: '2026-03-01T00:00:02Z', values: { altitude: 101.25, label: 'climb' } }]);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ rowsWritten: 1, valuesWritten: 2, ignoredKeys: [] });
    const rows = await storedRows(table, ['ch_0', 'ch_1', 'ch_2']);
    expect(rows[1]).toEqual({ time: '2026-03-01T00:00:02.000000Z', ch_0: '101.25', ch_1: null, ch_2: 'climb' });
  });

  it('a channel UUID as key succeeds, writes nothing and reports the key in ignoredKeys', async () => {
    const before = await storedRows(table, ['ch_0', 'ch_1', 'ch_2']);
    const uuid = channelIds.altitude!;
    const response = await append([{ timestamp: '2026-03-01T00:00:03Z', values: { [uuid]: 5 } }]);
    expect(response.status).toBe(200);
    expect(response.body.valuesWritten).toBe(0);
    expect(response.body.ignoredKeys).toEqual([uuid]);
    expect(await storedRows(table, ['ch_0', 'ch_1', 'ch_2'])).toEqual(before);
  });

  it('a ch_N that does not exist is 400 naming it, and nothing is written', async () => {
    const before = await rowCount(table);
    const response = await append([{ timestamp: '2026-03-01T00:00:04Z', values: { ch_0: 1, ch_7: 2 } }]);
    expectEnvelope(response, 400, 'invalid_request');
    expect(response.body.error.message).toContain('ch_7');
    expect(detailFields(response)).toEqual(['rows[0].values.ch_7']);
    expect(await rowCount(table)).toBe(before);
  });

  it('an unknown channel name is 400 naming it', async () => {
    const response = await append([
      { timestamp: '2026-03-01T00:00:04Z', values: { ch_0: 1 } },
      { timestamp: '2026-03-01T00:00:05Z', values: { heading: 2 } },
    ]);
    expectEnvelope(response, 400, 'invalid_request');
    expect(response.body.error.message).toContain('heading');
    expect(detailFields(response)).toEqual(['rows[1].values.heading']);
  });
});

describe('merging rows that share a timestamp', () => {
  it('merges rows of one request, including different spellings of the same instant', async () => {
    const response = await append([
      { timestamp: '2026-03-01T00:01:00Z', values: { ch_0: 1 } },
      { timestamp: '2026-03-01T01:01:00+01:00', values: { ch_1: 2 } },
      { timestamp: '2026-03-01T00:01:00.000Z', values: { label: 'merged' } },
    ]);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ rowsWritten: 1, valuesWritten: 3, ignoredKeys: [] });
    const stored = await sql<Record<string, string | null>>`
      select ch_0::text, ch_1::text, ch_2 from ${sql.table(table)} where time = '2026-03-01T00:01:00Z'::timestamptz`.execute(t.service.ctx.db);
    expect(stored.rows).toEqual([{ ch_0: '1', ch_1: '2', ch_2: 'merged' }]);
  });

  it('a later value for the same column in one request wins', async () => {
    const response = await append([
      { timestamp: '2026-03-01T00:02:00Z', values: { ch_0: 1 } },
      { timestamp: '2026-03-01T00:02:00Z', values: { ch_0: 2 } },
    ]);
    expect(response.status).toBe(200);
    expect(response.body.rowsWritten).toBe(1);
    const stored = await sql<{ v: string }>`select ch_0::text as v from ${sql.table(table)} where time = '2026-03-01T00:02:00Z'::timestamptz`.execute(
      t.service.ctx.db,
    );
    expect(stored.rows).toEqual([{ v: '2' }]);
  });

  it('a later request fills in columns of an existing instant and keeps the ones it does not send', async () => {
    const response = await append([{ timestamp: '2026-03-01T00:01:00Z', values: { ch_1: 3, ch_0: null } }]);
    expect(response.status).toBe(200);
    expect(response.body.valuesWritten).toBe(1);
    const stored = await sql<Record<string, string | null>>`
      select ch_0::text, ch_1::text, ch_2 from ${sql.table(table)} where time = '2026-03-01T00:01:00Z'::timestamptz`.execute(t.service.ctx.db);
    expect(stored.rows).toEqual([{ ch_0: '1', ch_1: '3', ch_2: 'merged' }]);
  });

  it('keeps microseconds apart: instants 1 µs apart are two rows', async () => {
    const response = await append([
      { timestamp: '2026-03-01T00:03:00.000001Z', values: { ch_0: 1 } },
      { timestamp: '2026-03-01T00:03:00.000002Z', values: { ch_0: 2 } },
    ]);
    expect(response.status).toBe(200);
    expect(response.body.rowsWritten).toBe(2);
    const stored = await sql<{ time: string; v: string }>`
      select to_char(time at time zone 'UTC', 'HH24:MI:SS.US') as time, ch_0::text as v from ${sql.table(table)}
      where time >= '2026-03-01T00:03:00Z' and time < '2026-03-01T00:03:01Z' order by time`.execute(t.service.ctx.db);
    expect(stored.rows).toEqual([
      { time: '00:03:00.000001', v: '1' },
      { time: '00:03:00.000002', v: '2' },
    ]);
  });
});

describe('validation', () => {
  it('a bad timestamp in the 13th row is named rows[12].timestamp', async () => {
    const rows: Row[] = Array.from({ length: 13 }, (_, i) => ({ timestamp: `2026-03-01T00:10:${String(i).padStart(2, '0')}Z`, values: { ch_0: i } }));
    rows[12]!.timestamp = 'yesterday at noon';
    const before = await rowCount(table);
    const response = await append(rows);
    expectEnvelope(response, 400, 'invalid_request');
    expect(detailFields(response)).toEqual(['rows[12].timestamp']);
    expect(await rowCount(table)).toBe(before);
  });

  it('a string into a double channel is 400 naming the field', async () => {
    const response = await append([{ timestamp: '2026-03-01T00:11:00Z', values: { ch_0: 'high' } }]);
    expectEnvelope(response, 400, 'invalid_request');
    expect(response.body.error.message).toContain('ch_0');
    expect(detailFields(response)).toEqual(['rows[0].values.ch_0']);

    const byName = await append([{ timestamp: '2026-03-01T00:11:00Z', values: { altitude: '12.5' } }]);
    expectEnvelope(byName, 400, 'invalid_request');
    expect(detailFields(byName)).toEqual(['rows[0].values.altitude']);
  });

  it('a number into a string channel is 400 naming the field', async () => {
    const response = await append([{ timestamp: '2026-03-01T00:11:00Z', values: { label: 3 } }]);
    expectEnvelope(response, 400, 'invalid_request');
    expect(detailFields(response)).toEqual(['rows[0].values.label']);
  });

  it('an empty rows array and a non-object value are 400', async () => {
    const empty = await append([]);
    expectEnvelope(empty, 400, 'invalid_request');
    expect(detailFields(empty)).toEqual(['rows']);
    const nested = await append([{ timestamp: '2026-03-01T00:11:00Z', values: { ch_0: { v: 1 } } }]);
    expectEnvelope(nested, 400, 'invalid_request');
    expect(detailFields(nested)[0]).toMatch(/^rows\[0\]\.values\.ch_0/);
  });
});

describe('refusals', () => {
  it('a narrow dataset is 409 conflict', async () => {
    const narrow = await t.call('POST', '/api/streams/register', {
      key: org.key,
      body: { experimentId, datasetName: 'flight', storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' },
    });
    expect(narrow.status).toBe(201);
    const response = await append([{ timestamp: '2026-03-01T00:00:00Z', values: { ch_0: 1 } }], { datasetId: narrow.body.datasetId });
    expectEnvelope(response, 409, 'conflict');
  });

  it('403 insufficient_scope without telemetry:write', async () => {
    const { apiKey } = await org.keyWith(['datasets:read', 'datasets:write', 'telemetry:read']);
    const before = await rowCount(table);
    const response = await append([{ timestamp: '2026-03-01T00:20:00Z', values: { ch_0: 1 } }], { key: apiKey });
    expectEnvelope(response, 403, 'insufficient_scope');
    expect(response.body.error.message).toContain('telemetry:write');
    expect(await rowCount(table)).toBe(before);
  });

  it('404 for another organization, an unknown dataset, and an experimentId that does not hold the dataset', async () => {
    const before = await rowCount(table);
    const rows = [{ timestamp: '2026-03-01T00:21:00Z', values: { ch_0: 1 } }];
    const other = await t.createOrg('Other');
    expectEnvelope(await append(rows, { key: other.key }), 404, 'not_found');
    expectEnvelope(await append(rows, { datasetId: crypto.randomUUID() }), 404, 'not_found');
    const second = await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'second' } });
    expectEnvelope(await append(rows, { experimentId: second.body.id }), 404, 'not_found');
    expect(await rowCount(table)).toBe(before);
  });
});

describe('every declared dataType round-trips', () => {
  const TYPES = ['double', 'float', 'int32', 'uint32', 'int64', 'uint64', 'bool', 'enum', 'string', 'bytes', 'bit_field', 'empty'] as const;
  let typedTable: string;
  let typedId: string;

  beforeAll(async () => {
    const registered = await registerWide(
      'typed',
      TYPES.map((dataType) => ({ name: `t_${dataType}`, dataType })),
    );
    typedId = registered.datasetId;
    typedTable = wideTableName(typedId);
    expect(registered.channels.map((c: { hypertableColName: string; dataType: string }) => `${c.hypertableColName}:${c.dataType}`)).toEqual(
      TYPES.map((type, i) => `ch_${i}:${type}`),
    );
  });

  it('writes and reads back each type exactly', async () => {
    const response = await append(
      [
        {
          timestamp: '2026-04-01T00:00:00Z',
          values: {
            t_double: 3.141592653589793,
            t_float: 1.5,
            t_int32: -2147483648,
            t_uint32: 4294967295,
            t_int64: '9223372036854775807',
            t_uint64: '18446744073709551615',
            t_bool: true,
            t_enum: 3,
            t_string: 'héllo ✓ "quoted", {braced}',
            t_bytes: 'AAEC/w==',
            t_bit_field: 'gAE=',
            t_empty: true,
          },
        },
        {
          timestamp: '2026-04-01T00:00:01Z',
          values: { ch_4: '-9223372036854775808', ch_5: 0, ch_6: false, ch_2: 7, ch_8: '', ch_9: '' },
        },
      ],
      { datasetId: typedId },
    );
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ rowsWritten: 2, valuesWritten: 18, ignoredKeys: [] });

    const result = await sql<Record<string, string | null>>`
      select ch_0::text as double, ch_1::text as float, ch_2::text as int32, ch_3::text as uint32, ch_4::text as int64,
             ch_5::text as uint64, ch_6::text as bool, ch_7::text as enum, ch_8 as string,
             encode(ch_9, 'base64') as bytes, encode(ch_10, 'base64') as bit_field, ch_11::text as empty
      from ${sql.table(typedTable)} order by time`.execute(t.service.ctx.db);
    expect(result.rows).toEqual([
      {
        double: '3.141592653589793',
        float: '1.5',
        int32: '-2147483648',
        uint32: '4294967295',
        int64: '9223372036854775807',
        uint64: '18446744073709551615',
        bool: 'true',
        enum: '3',
        string: 'héllo ✓ "quoted", {braced}',
        bytes: 'AAEC/w==',
        bit_field: 'gAE=',
        empty: 'true',
      },
      {
        double: null,
        float: null,
        int32: '7',
        uint32: null,
        int64: '-9223372036854775808',
        uint64: '0',
        bool: 'false',
        enum: null,
        string: '',
        bytes: '',
        bit_field: null,
        empty: null,
      },
    ]);
  });

  it('refuses values out of range or of the wrong kind, naming the field', async () => {
    const cases: Array<[string, unknown]> = [
      ['t_uint64', '18446744073709551616'],
      ['t_uint64', '-1'],
      ['t_int64', '9223372036854775808'],
      // Beyond 2^53 a JSON number has already lost digits; only a string is exact.
      ['t_int64', 9007199254740993],
      ['t_int32', 1.5],
      ['t_bool', 1],
      ['t_bytes', 'not base64!'],
      ['t_double', true],
    ];
    for (const [name, value] of cases) {
      const response = await append([{ timestamp: '2026-04-01T00:00:02Z', values: { [name]: value } }], { datasetId: typedId });
      expectEnvelope(response, 400, 'invalid_request');
      expect(detailFields(response), `${name}=${String(value)}`).toEqual([`rows[0].values.${name}`]);
    }
    expect(await rowCount(typedTable)).toBe(2);
  });
});

describe('widening by re-registration', () => {
  it('adds the new ch_N column and keeps the data already written', async () => {
    const columnsOf = async () =>
      (
        await sql<{ column_name: string }>`
          select column_name from information_schema.columns where table_name = ${table} order by ordinal_position`.execute(t.service.ctx.db)
      ).rows.map((r) => r.column_name);
    expect(await columnsOf()).toEqual(['time', 'ch_0', 'ch_1', 'ch_2']);
    const before = await storedRows(table, ['ch_0', 'ch_1', 'ch_2']);
    expect(before.length).toBeGreaterThan(0);

    const registered = await registerWide('bench', [
      { name: 'altitude', unit: 'm', dataType: 'double' },
      { name: 'airspeed', unit: 'm/s', dataType: 'double' },
      { name: 'label', dataType: 'string' },
      { name: 'battery', unit: 'V', dataType: 'double' },
    ]);
    expect(registered.datasetId).toBe(datasetId);
    expect(registered.created).toBe(false);
    expect(registered.addedColumns).toEqual(['ch_3']);
    expect(await columnsOf()).toEqual(['time', 'ch_0', 'ch_1', 'ch_2', 'ch_3']);

    const after = await storedRows(table, ['ch_0', 'ch_1', 'ch_2', 'ch_3']);
    expect(after).toEqual(before.map((row) => ({ ...row, ch_3: null })));

    const response = await append([{ timestamp: '2026-03-01T00:00:01Z', values: { battery: 12.6 } }]);
    expect(response.status).toBe(200);
    const merged = await storedRows(table, ['ch_0', 'ch_1', 'ch_3']);
    expect(merged[0]).toEqual({ time: '2026-03-01T00:00:01.000000Z', ch_0: '100.5', ch_1: '20', ch_3: '12.6' });
  });
});
