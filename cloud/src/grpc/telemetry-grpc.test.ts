import { Code, ConnectError, createClient, type Client } from '@connectrpc/connect';
import { compressionBrotli, compressionGzip, createConnectTransport, createGrpcTransport, createGrpcWebTransport } from '@connectrpc/connect-node';
import { authInterceptor, createGrpcTelemetryClient, createTelemetryClient, queryAnswer } from '@sortie/client/node';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { TelemetryService, type StreamSubmitRequestSchema, type SubmitRequestSchema, type TelemetryPointSchema } from '@sortie/contracts';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wideTableName } from '../datasets/wide-table.ts';
import { bucketsForBudget } from '../telemetry/series/series.ts';
import { planQuery } from '../telemetry/wide/query-plan.ts';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';

type PointInit = MessageInitShape<typeof TelemetryPointSchema>;
type StreamMessage = MessageInitShape<typeof StreamSubmitRequestSchema>;

let t: TestService;
let org: TestOrg;
let client: Client<typeof TelemetryService>;
let experimentId: string;
let types: { datasetId: string; table: string; channelIds: string[] };
let narrowId: string;

const T0 = Date.UTC(2026, 3, 1) / 1000; // seconds
const at = (secondsAfterT0: number, nanos = 0) => ({ seconds: BigInt(T0 + secondsAfterT0), nanos });
const headers = () => ({ 'x-api-key': org.key });

/** One channel per declared dataType, in DATA_TYPES order: ch_0 double … ch_11 empty. */
const DATA_TYPES = ['double', 'float', 'int32', 'uint32', 'int64', 'uint64', 'bool', 'enum', 'bit_field', 'string', 'bytes', 'empty'] as const;

async function register(name: string, channels: Array<{ name: string; dataType: string }>) {
  const response = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId, datasetName: name, channels: channels.map((c) => ({ unit: '', ...c })) },
  });
  expect(response.status, JSON.stringify(response.body)).toBeLessThan(300);
  return { datasetId: response.body.datasetId as string, table: wideTableName(response.body.datasetId), channelIds: response.body.channels.map((c: { id: string }) => c.id) as string[] };
}

async function* messages(...list: StreamMessage[]): AsyncGenerator<StreamMessage> {
  for (const m of list) yield m;
}

async function grpcError(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error('expected the call to fail');
}

function doubles(channelId: string, fromSecond: number, count: number, value: (i: number) => number, stepMs = 1): PointInit[] {
  return Array.from({ length: count }, (_, i) => {
    const ms = fromSecond * 1000 + i * stepMs;
    return { channelId, timestamp: at(Math.floor(ms / 1000), (ms % 1000) * 1_000_000), type: { case: 'double', value: value(i) } };
  });
}

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg();
  client = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
  const experiment = await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'grpc' } });
  experimentId = experiment.body.id;
  types = await register('types', DATA_TYPES.map((dataType) => ({ name: `type ${dataType}`, dataType })));
  const narrow = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId, datasetName: 'drone', storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' },
  });
  narrowId = narrow.body.datasetId;
});
afterAll(() => t?.stop());

/** A value of every oneof member, aimed at the channel declared with the matching dataType. */
const EVERY_TYPE: Array<{ point: PointInit['type']; sql: string; query?: number }> = [
  { point: { case: 'double', value: -0.1 }, sql: '-0.1', query: -0.1 },
  { point: { case: 'float', value: Math.fround(3.3) }, sql: '3.299999952316284', query: Math.fround(3.3) },
  { point: { case: 'int32', value: -2147483648 }, sql: '-2147483648', query: -2147483648 },
  { point: { case: 'uint32', value: 4294967295 }, sql: '4294967295', query: 4294967295 },
  { point: { case: 'int64', value: -9223372036854775808n }, sql: '-9223372036854775808', query: -9223372036854775808 },
  { point: { case: 'uint64', value: 18446744073709551615n }, sql: '18446744073709551615', query: 18446744073709551615 },
  { point: { case: 'bool', value: true }, sql: 'true', query: 1 },
  { point: { case: 'enum', value: 7 }, sql: '7', query: 7 },
  { point: { case: 'bitField', value: new Uint8Array([0xa1, 0x00]) }, sql: '\\xa100' },
  { point: { case: 'string', value: 'ünïcødé, "quoted" {x}' }, sql: 'ünïcødé, "quoted" {x}' },
  { point: { case: 'bytes', value: new Uint8Array([0, 255, 10]) }, sql: '\\x00ff0a' },
  { point: { case: 'empty', value: {} }, sql: 'true', query: 1 },
];

async function storedAt(table: string, second: number): Promise<Record<string, string | null> | undefined> {
  const columns = DATA_TYPES.map((_, i) => sql`${sql.ref(`ch_${i}`)}::text as ${sql.ref(`ch_${i}`)}`);
  const result = await sql<Record<string, string | null>>`
    select ${sql.join(columns)} from ${sql.table(table)} where time = to_timestamp(${T0 + second})`.execute(t.service.ctx.db);
  return result.rows[0];
}

describe('every value type round-trips', () => {
  for (const [protocol, makeClient] of [
    ['gRPC (binary, lazily decoded)', () => client],
    ['Connect JSON over HTTP/1.1', () => createClient(TelemetryService, createConnectTransport({ baseUrl: t.service.grpcUrl, httpVersion: '1.1', useBinaryFormat: false }))],
  ] as const) {
    it(`through ${protocol}: Submit, then read back by SQL and by Query`, async () => {
      const second = protocol.startsWith('gRPC') ? 10 : 20;
      const points = EVERY_TYPE.map((e, i) => ({ channelId: String(i), timestamp: at(second), type: e.point }));
      const response = await makeClient().submit({ experimentId, datasetId: types.datasetId, points }, { headers: headers() });
      expect([response.accepted, response.written, response.ignored]).toEqual([12n, 12n, 0n]);

      const row = await storedAt(types.table, second);
      expect(row).toEqual(Object.fromEntries(EVERY_TYPE.map((e, i) => [`ch_${i}`, e.sql])));

      const numeric = EVERY_TYPE.flatMap((e, i) => (e.query === undefined ? [] : [String(i)]));
      const query = await makeClient().query(
        { experimentId, datasetId: types.datasetId, channelIds: numeric, from: at(second), to: at(second + 1), maxPointsPerChannel: 10 },
        { headers: headers() },
      );
      expect(query.series.map((s) => s.channelId)).toEqual(numeric);
      for (const s of query.series) {
        expect(s.rawPoints).toBe(1n);
        expect(s.points).toHaveLength(1);
        expect(s.points[0]!.timestamp).toMatchObject({ seconds: BigInt(T0 + second), nanos: 0 });
        expect(Object.is(s.points[0]!.value, EVERY_TYPE[Number(s.channelId)]!.query)).toBe(true);
      }
      expect(query.totalRawPoints).toBe(BigInt(numeric.length));
    });
  }

  it('a value that does not fit its column is INVALID_ARGUMENT naming the point, and nothing of the batch is written', async () => {
    const error = await grpcError(
      client.submit(
        {
          datasetId: types.datasetId,
          points: [
            { channelId: '0', timestamp: at(30), type: { case: 'double', value: 1 } },
            { channelId: '2', timestamp: at(30), type: { case: 'double', value: 1.5 } },
          ],
        },
        { headers: headers() },
      ),
    );
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain('points[1]: channel 2: a double value does not fit');
    expect(error.metadata.get('x-sortie-error-code')).toBe('invalid_request');
    expect(await storedAt(types.table, 30)).toBeUndefined();
  });

  it('a ch_N without a physical column is INVALID_ARGUMENT naming the channel', async () => {
    const error = await grpcError(client.submit({ datasetId: types.datasetId, points: [{ channelId: '12', timestamp: at(31), type: { case: 'double', value: 1 } }] }, { headers: headers() }));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain('channel 12 (ch_12)');
  });
});

describe('a channel UUID as channel_id', () => {
  it('is accepted, written nowhere, and reported as ignored (Submit)', async () => {
    const uuid = types.channelIds[0]!;
    const response = await client.submit(
      {
        experimentId,
        datasetId: types.datasetId,
        points: [
          { channelId: uuid, timestamp: at(40), type: { case: 'double', value: 1 } },
          { channelId: uuid, timestamp: at(41), type: { case: 'double', value: 2 } },
          { channelId: '0', timestamp: at(42), type: { case: 'double', value: 3 } },
        ],
      },
      { headers: headers() },
    );
    expect(response).toMatchObject({ accepted: 3n, written: 1n, ignored: 2n, ignoredChannelIds: [uuid] });
    expect(await storedAt(types.table, 40)).toBeUndefined();
    expect(await storedAt(types.table, 41)).toBeUndefined();
    expect((await storedAt(types.table, 42))?.ch_0).toBe('3');
  });

  it('shows in the StreamSubmit counts too', async () => {
    const uuid = types.channelIds[1]!;
    const response = await client.streamSubmit(
      messages(
        { message: { case: 'header', value: { experimentId, datasetId: types.datasetId } } },
        { message: { case: 'point', value: { channelId: uuid, timestamp: at(43), type: { case: 'float', value: 1 } } } },
        { message: { case: 'batch', value: { points: [{ channelId: uuid, timestamp: at(44), type: { case: 'float', value: 1 } }, { channelId: '1', timestamp: at(44), type: { case: 'float', value: 2 } }] } } },
      ),
      { headers: headers() },
    );
    expect(response).toMatchObject({ accepted: 3n, written: 1n, ignored: 2n, ignoredChannelIds: [uuid], messages: 3n, duplicates: 0n });
    expect(await storedAt(types.table, 43)).toBeUndefined();
  });
});

describe('StreamSubmit', () => {
  it('without a header first is INVALID_ARGUMENT', async () => {
    const error = await grpcError(
      client.streamSubmit(messages({ message: { case: 'point', value: { channelId: '0', timestamp: at(50), type: { case: 'double', value: 1 } } } }), { headers: headers() }),
    );
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain('first StreamSubmit message must be a StreamSessionHeader');
    expect(await storedAt(types.table, 50)).toBeUndefined();
  });

  it('empty, with a second header, or with an unknown format is INVALID_ARGUMENT', async () => {
    expect((await grpcError(client.streamSubmit(messages(), { headers: headers() }))).code).toBe(Code.InvalidArgument);
    const header: StreamMessage = { message: { case: 'header', value: { datasetId: types.datasetId } } };
    const twice = await grpcError(client.streamSubmit(messages(header, header), { headers: headers() }));
    expect([twice.code, twice.rawMessage]).toEqual([Code.InvalidArgument, 'message 1: the StreamSessionHeader may appear only once, as the first message']);
    const format = await grpcError(client.streamSubmit(messages({ message: { case: 'header', value: { datasetId: types.datasetId, format: 'csv' } } }), { headers: headers() }));
    expect(format.code).toBe(Code.InvalidArgument);
  });

  it('merges points sharing a timestamp within and across messages, and counts overwrites as duplicates', async () => {
    const wave = await register('merge', [
      { name: 'left', dataType: 'double' },
      { name: 'right', dataType: 'double' },
    ]);
    const left = doubles('0', 100, 100, (i) => i);
    const right = doubles('1', 100, 100, (i) => -i);
    const response = await client.streamSubmit(
      messages(
        { message: { case: 'header', value: { experimentId, datasetId: wave.datasetId } } },
        { message: { case: 'batch', value: { points: left } } },
        { message: { case: 'batch', value: { points: right } } },
        { message: { case: 'batch', value: { points: doubles('0', 100, 10, (i) => 1000 + i) } } },
        ...doubles('1', 200, 5, (i) => i).map((p) => ({ message: { case: 'point' as const, value: p } })),
        { message: { case: 'point', value: doubles('1', 200, 1, () => 9)[0]! } },
      ),
      { headers: headers() },
    );
    expect(response).toMatchObject({ accepted: 216n, written: 205n, duplicates: 11n, ignored: 0n, messages: 10n });
    const rows = await sql<{ n: number; both: number }>`
      select count(*)::int as n, count(*) filter (where ch_0 is not null and ch_1 is not null)::int as both from ${sql.table(wave.table)}`.execute(t.service.ctx.db);
    expect(rows.rows[0]).toEqual({ n: 105, both: 100 });
    const first = await sql<{ v: number; w: number }>`select ch_0 as v, ch_1 as w from ${sql.table(wave.table)} where time = to_timestamp(${T0 + 200})`.execute(t.service.ctx.db);
    expect(first.rows[0]).toEqual({ v: null, w: 9 });
  });

  it('a failing message ends the stream with its error; the messages before it stay written', async () => {
    const wave = await register('partial', [{ name: 'only', dataType: 'double' }]);
    const error = await grpcError(
      client.streamSubmit(
        messages(
          { message: { case: 'header', value: { datasetId: wave.datasetId } } },
          { message: { case: 'batch', value: { points: doubles('0', 300, 50, (i) => i) } } },
          { message: { case: 'point', value: doubles('0', 400, 1, () => 1)[0]! } },
          { message: { case: 'batch', value: { points: [...doubles('0', 500, 5, () => 1), { channelId: '0', timestamp: at(501), type: { case: 'string', value: 'x' } }] } } },
        ),
        { headers: headers() },
      ),
    );
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain('message 3, batch.points[5]');
    const count = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(wave.table)}`.execute(t.service.ctx.db);
    expect(count.rows[0]!.n).toBe(51);
  });
});

describe('errors and their gRPC codes', () => {
  const point = { channelId: '0', timestamp: at(60), type: { case: 'double' as const, value: 1 } };

  it('UNAUTHENTICATED without a key or with an unknown one', async () => {
    const none = await grpcError(client.submit({ datasetId: types.datasetId, points: [point] }));
    expect(none.code).toBe(Code.Unauthenticated);
    expect(none.metadata.get('x-sortie-error-code')).toBe('unauthorized');
    const unknown = await grpcError(client.submit({ datasetId: types.datasetId, points: [point] }, { headers: { 'x-api-key': `sk_${'A'.repeat(43)}` } }));
    expect(unknown.code).toBe(Code.Unauthenticated);
  });

  it('PERMISSION_DENIED for a key without the scope: telemetry:write to write, telemetry:read to query', async () => {
    const reader = await org.keyWith(['telemetry:read']);
    const writer = await org.keyWith(['telemetry:write']);
    const submit = await grpcError(client.submit({ datasetId: types.datasetId, points: [point] }, { headers: { 'x-api-key': reader.apiKey } }));
    expect([submit.code, submit.rawMessage]).toEqual([Code.PermissionDenied, 'this API key lacks the scope telemetry:write']);
    const stream = await grpcError(client.streamSubmit(messages({ message: { case: 'header', value: { datasetId: types.datasetId } } }), { headers: { 'x-api-key': reader.apiKey } }));
    expect(stream.code).toBe(Code.PermissionDenied);
    const query = await grpcError(client.query({ datasetId: types.datasetId, channelIds: ['0'] }, { headers: { 'x-api-key': writer.apiKey } }));
    expect([query.code, query.rawMessage]).toEqual([Code.PermissionDenied, 'this API key lacks the scope telemetry:read']);
  });

  it("NOT_FOUND for an unknown dataset, another organization's, or an experiment that does not hold it", async () => {
    const other = await t.createOrg('Other');
    const attempts: Array<[MessageInitShape<typeof SubmitRequestSchema>, string]> = [
      [{ datasetId: crypto.randomUUID(), points: [point] }, org.key],
      [{ datasetId: types.datasetId, points: [point] }, other.key],
      [{ experimentId: crypto.randomUUID(), datasetId: types.datasetId, points: [point] }, org.key],
    ];
    for (const [request, key] of attempts) {
      expect((await grpcError(client.submit(request, { headers: { 'x-api-key': key } }))).code).toBe(Code.NotFound);
    }
    expect((await grpcError(client.query({ datasetId: types.datasetId, channelIds: ['0'] }, { headers: { 'x-api-key': other.key } }))).code).toBe(Code.NotFound);
  });

  it('INVALID_ARGUMENT for ids that are not UUIDs', async () => {
    const error = await grpcError(client.submit({ datasetId: 'not-a-uuid', points: [point] }, { headers: headers() }));
    expect([error.code, error.rawMessage]).toEqual([Code.InvalidArgument, 'dataset_id is not a UUID: "not-a-uuid"']);
  });

  it('FAILED_PRECONDITION when the dataset shape does not match what the call carries', async () => {
    const submit = await grpcError(client.submit({ datasetId: narrowId, points: [point] }, { headers: headers() }));
    expect(submit.code).toBe(Code.FailedPrecondition);
    expect(submit.rawMessage).toContain('is narrow');
    const wideAsMavlink = await grpcError(client.streamSubmit(messages({ message: { case: 'header', value: { datasetId: types.datasetId, format: 'mavlink-raw-v1' } } }), { headers: headers() }));
    expect(wideAsMavlink.code).toBe(Code.FailedPrecondition);
    const narrowAsWide = await grpcError(client.streamSubmit(messages({ message: { case: 'header', value: { datasetId: narrowId } } }), { headers: headers() }));
    expect(narrowAsWide.code).toBe(Code.FailedPrecondition);
  });

  it('RESOURCE_EXHAUSTED for a message over the 4 MiB limit', async () => {
    const huge = { channelId: '9', timestamp: at(61), type: { case: 'string' as const, value: 'x'.repeat(4 * 1024 * 1024 + 1) } };
    const error = await grpcError(client.submit({ datasetId: types.datasetId, points: [huge] }, { headers: headers() }));
    expect(error.code).toBe(Code.ResourceExhausted);
  });

  it('echoes a request id, on success and in errors', async () => {
    let echoed: string | null = null;
    await client.submit({ datasetId: types.datasetId, points: [] }, { headers: { ...headers(), 'x-request-id': 'rig-7.run:42' }, onHeader: (h) => (echoed = h.get('x-request-id')) });
    expect(echoed).toBe('rig-7.run:42');
    const error = await grpcError(client.submit({ datasetId: crypto.randomUUID(), points: [point] }, { headers: { ...headers(), 'x-request-id': 'bad-1' } }));
    expect(error.metadata.get('x-request-id')).toBe('bad-1');
  });
});

describe('Query', () => {
  let wave: { datasetId: string; table: string };
  const COUNT = 120_000;
  const value = (i: number) => Math.sin(i / 900) * 100 + ((i * 7919) % 97) / 10 + (i % 10_007 === 5 ? 500 : 0) - (i % 13_001 === 9 ? 700 : 0);

  beforeAll(async () => {
    wave = await register('wave', [
      { name: 'signal', dataType: 'double' },
      { name: 'steps', dataType: 'int32' },
      { name: 'label', dataType: 'string' },
    ]);
    async function* stream(): AsyncGenerator<StreamMessage> {
      yield { message: { case: 'header', value: { experimentId, datasetId: wave.datasetId } } };
      for (let from = 0; from < COUNT; from += 5000) {
        const points = Array.from({ length: 5000 }, (_, i): PointInit => {
          const ms = 1_000_000 + (from + i) * 2; // 500 Hz
          return { channelId: '0', timestamp: at(Math.floor(ms / 1000), (ms % 1000) * 1_000_000), type: { case: 'double', value: value(from + i) } };
        });
        yield { message: { case: 'batch', value: { points } } };
      }
      // Overwrite some samples: one becomes the new global maximum, one a former spike's replacement.
      yield { message: { case: 'batch', value: { points: [{ channelId: '0', timestamp: at(1000 + 40), type: { case: 'double', value: 9999 } }, { channelId: '0', timestamp: at(1000, 10 * 2_000_000), type: { case: 'double', value: 0 } }] } } };
      yield { message: { case: 'batch', value: { points: Array.from({ length: 300 }, (_, i) => ({ channelId: '1', timestamp: at(1000 + i), type: { case: 'int32' as const, value: i % 7 } })) } } };
    }
    const response = await client.streamSubmit(stream(), { headers: headers() });
    expect(response.written).toBe(BigInt(COUNT + 300));
  }, 120_000);

  /** True per-bucket extremes from the raw rows, on the grid the query uses. */
  async function expectFaithful(from: number | undefined, to: number | undefined, budget: number) {
    const bounds = await sql<{ first: number; last: number; n: number }>`
      select min(round(date_part('epoch', time) * 1e6))::float8 as first, max(round(date_part('epoch', time) * 1e6))::float8 as last, count(*)::float8 as n
      from ${sql.table(wave.table)} where ch_0 is not null`.execute(t.service.ctx.db);
    const { first, last, n } = bounds.rows[0]!;
    const start = Math.max(from ?? -Infinity, first);
    const end = Math.min(to ?? Infinity, last + 1);
    // The server's grid: the documented plan for this range, budget and the channel's density.
    const plan = planQuery(start, end, bucketsForBudget(budget), n / (last - first + 1));
    const truth = await sql<{ qb: number; n: number; mn: number[]; mx: number[] }>`
      select floor((t - ${plan.origin}::float8) / ${plan.width}::float8) as qb, count(*)::int as n, min(array[v, t]) as mn, max(array[v, -t]) as mx
      from (select round(date_part('epoch', time) * 1e6) as t, ch_0 as v from ${sql.table(wave.table)}
            where ch_0 is not null and time >= to_timestamp(${start / 1e6}) and time < to_timestamp(${end / 1e6})) as raw
      group by 1`.execute(t.service.ctx.db);

    const toTs = (us: number) => ({ seconds: BigInt(Math.floor(us / 1e6)), nanos: (us % 1e6) * 1000 });
    const response = await client.query(
      { experimentId, datasetId: wave.datasetId, channelIds: ['0'], from: from === undefined ? undefined : toTs(from), to: to === undefined ? undefined : toTs(to), maxPointsPerChannel: budget },
      { headers: headers() },
    );
    const series = response.series[0]!;
    const rawCount = truth.rows.reduce((n, r) => n + r.n, 0);
    expect(series.rawPoints).toBe(BigInt(rawCount));
    expect(response.totalRawPoints).toBe(BigInt(rawCount));
    expect(series.points.length).toBeLessThanOrEqual(budget);
    const got = new Set(series.points.map((p) => `${Number(p.timestamp!.seconds) * 1e6 + p.timestamp!.nanos / 1000}:${p.value}`));
    for (const row of truth.rows) {
      expect(got).toContain(`${row.mn[1]}:${row.mn[0]}`);
      expect(got).toContain(`${-row.mx[1]!}:${row.mx[0]}`);
    }
    return { series, buckets: truth.rows.length };
  }

  it('whole range: at most the budget, every bucket minimum and maximum, exact raw count', async () => {
    const { series, buckets } = await expectFaithful(undefined, undefined, 500);
    expect(buckets).toBeGreaterThan(150);
    expect(series.points.length).toBeGreaterThan(400);
    expect(series.points.some((p) => p.value === 9999)).toBe(true);
  });

  it('odd sub-ranges read from rollups in the middle and raw rows at the edges, still exact', async () => {
    const base = (T0 + 1000) * 1e6;
    await expectFaithful(base + 12_345_678, base + 201_987_001, 300);
    await expectFaithful(base + 7_003, base + 3_000_017, 200); // small: raw rows only
    await expectFaithful(base + 100_000_000, undefined, 50);
  });

  it('answers compressed as the client prefers, brotli or gzip, and Sortie\'s client reads them as protobuf-es does', async () => {
    const request = { datasetId: wave.datasetId, channelIds: ['0', '1'], maxPointsPerChannel: 500 };
    const answers = [];
    for (const compression of [compressionBrotli, compressionGzip]) {
      const other = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl, acceptCompression: [compression] }));
      let encoding: string | null = null;
      answers.push(await other.query(request, { headers: headers(), onHeader: (h) => (encoding = h.get('grpc-encoding')) }));
      expect(encoding).toBe(compression.name);
    }
    expect(answers[0]).toEqual(answers[1]);
    expect(answers[0]!.series[0]!.points.length).toBeGreaterThan(400);
    // Sortie's client: series read from their bytes by hand, into the same answer the generated classes give.
    const sortie = createGrpcTelemetryClient({ grpcUrl: t.service.grpcUrl, apiKey: org.key });
    expect(await sortie.query(request)).toStrictEqual(queryAnswer(answers[1]!));
    // A transport given as JSON keeps the generated descriptor (a Series is no base64 text).
    const jsonTransport = createConnectTransport({ baseUrl: t.service.grpcUrl, httpVersion: '1.1', useBinaryFormat: false, interceptors: [authInterceptor(org.key)] });
    const overJson = createTelemetryClient({ baseUrl: t.service.grpcUrl, transport: jsonTransport, json: true });
    expect(await overJson.query(request)).toStrictEqual(queryAnswer(answers[1]!));
  });

  it('several channels in request order, budget default and clamping, a budget of 1', async () => {
    const response = await client.query({ datasetId: wave.datasetId, channelIds: ['1', '0'] }, { headers: headers() });
    expect(response.series.map((s) => [s.channelId, s.rawPoints])).toEqual([
      ['1', 300n],
      ['0', BigInt(COUNT)],
    ]);
    expect(response.totalRawPoints).toBe(BigInt(COUNT + 300));
    expect(response.series[1]!.points.length).toBeLessThanOrEqual(1000);
    const one = await client.query({ datasetId: wave.datasetId, channelIds: ['0'], maxPointsPerChannel: 1 }, { headers: headers() });
    expect(one.series[0]!.points.map((p) => p.value)).toEqual([9999]);
  });

  it('several channels read together answer exactly what each answers alone', async () => {
    // Three channels over the same rows (one statement aggregates them together, raw rows scanned once),
    // the third with holes, plus the wave's channels whose extents differ (their own statements).
    const trio = await register('trio', [
      { name: 'alpha', dataType: 'double' },
      { name: 'beta', dataType: 'double' },
      { name: 'holes', dataType: 'float' },
    ]);
    async function* stream(): AsyncGenerator<StreamMessage> {
      yield { message: { case: 'header', value: { experimentId, datasetId: trio.datasetId } } };
      for (let from = 0; from < 40_000; from += 4000) {
        const points: PointInit[] = [];
        for (let i = from; i < from + 4000; i++) {
          const ms = 1_000_000 + i * 3; // 333 Hz
          const timestamp = at(Math.floor(ms / 1000), (ms % 1000) * 1_000_000);
          points.push({ channelId: '0', timestamp, type: { case: 'double', value: value(i) } });
          points.push({ channelId: '1', timestamp, type: { case: 'double', value: -value(i * 7) } });
          if (i % 5 !== 0) points.push({ channelId: '2', timestamp, type: { case: 'float', value: Math.fround(value(i + 11) / 3) } });
        }
        yield { message: { case: 'batch', value: { points } } };
      }
    }
    await client.streamSubmit(stream(), { headers: headers() });
    const base = (T0 + 1000) * 1e6;
    const ts = (us: number) => ({ seconds: BigInt(Math.floor(us / 1e6)), nanos: (us % 1e6) * 1000 });
    const ranges: Array<[number | undefined, number | undefined]> = [
      [undefined, undefined],
      [base + 7_654_321, base + 101_234_567], // rollups in the middle, raw rows at the edges
      [base + 3_000_017, base + 3_400_000], // raw rows only
    ];
    for (const [from, to] of ranges) {
      const range = { from: from === undefined ? undefined : ts(from), to: to === undefined ? undefined : ts(to), maxPointsPerChannel: 400 };
      const together = await client.query({ datasetId: trio.datasetId, channelIds: ['2', '0', '1', '0'], ...range }, { headers: headers() });
      const alone = await Promise.all(['2', '0', '1', '0'].map((id) => client.query({ datasetId: trio.datasetId, channelIds: [id], ...range }, { headers: headers() })));
      expect(together.series).toEqual(alone.map((r) => r.series[0]));
      expect(together.series[0]!.rawPoints).toBeLessThan(together.series[1]!.rawPoints);
      expect(together.series[1]!.points.length).toBeGreaterThan(100);
    }
    const mixed = await client.query({ datasetId: wave.datasetId, channelIds: ['0', '1'], maxPointsPerChannel: 300 }, { headers: headers() });
    const mixedAlone = await Promise.all(['0', '1'].map((id) => client.query({ datasetId: wave.datasetId, channelIds: [id], maxPointsPerChannel: 300 }, { headers: headers() })));
    expect(mixed.series).toEqual(mixedAlone.map((r) => r.series[0]));
  });

  it('columns answer the same samples as points, as two arrays', async () => {
    const pointsUs = (s: { points: Array<{ timestamp?: { seconds: bigint; nanos: number }; value: number }> }) =>
      s.points.map((p) => Number(p.timestamp!.seconds) * 1e6 + p.timestamp!.nanos / 1000);
    // The whole range, rollups in the middle with raw rows at the edges, and raw rows only.
    const ranges = [{}, { from: at(1012, 123_457_000), to: at(1190, 3_000_000) }, { from: at(1012, 123_457_000), to: at(1012, 923_457_000) }];
    for (const range of ranges) {
      const request = { datasetId: wave.datasetId, channelIds: ['0', '1', '0'], maxPointsPerChannel: 300, ...range };
      const points = await client.query(request, { headers: headers() });
      const columns = await client.query({ ...request, columns: true }, { headers: headers() });
      expect(columns.totalRawPoints).toBe(points.totalRawPoints);
      expect(columns.series.map((s) => ({ channelId: s.channelId, rawPoints: s.rawPoints, points: s.points.length, timesUs: s.timesUs, values: s.values }))).toEqual(
        points.series.map((s) => ({ channelId: s.channelId, rawPoints: s.rawPoints, points: 0, timesUs: pointsUs(s), values: s.points.map((p) => p.value) })),
      );
      expect(points.series.every((s) => s.timesUs.length === 0 && s.values.length === 0)).toBe(true);
      expect(columns.series[0]!.timesUs.length).toBeGreaterThan(200);
    }
  });

  it('an empty range answers no points and zero counts', async () => {
    const response = await client.query({ datasetId: wave.datasetId, channelIds: ['0'], from: at(0), to: at(1) }, { headers: headers() });
    expect(response.series[0]).toMatchObject({ channelId: '0', points: [], rawPoints: 0n });
  });

  it('refuses what it cannot chart', async () => {
    const cases: Array<[Parameters<typeof client.query>[0], Code, string]> = [
      [{ datasetId: wave.datasetId, channelIds: [] }, Code.InvalidArgument, 'channel_ids is empty'],
      [{ datasetId: wave.datasetId, channelIds: ['7'] }, Code.NotFound, 'channel 7 (ch_7)'],
      [{ datasetId: wave.datasetId, channelIds: [crypto.randomUUID()] }, Code.InvalidArgument, 'not by UUID'],
      [{ datasetId: wave.datasetId, channelIds: ['2'] }, Code.InvalidArgument, 'numeric and boolean channels only'],
      [{ datasetId: wave.datasetId, channelIds: ['0'], from: at(10), to: at(5) }, Code.InvalidArgument, '`from` is after `to`'],
    ];
    for (const [request, code, text] of cases) {
      const error = await grpcError(client.query(request, { headers: headers() }));
      expect([error.code, error.rawMessage]).toEqual([code, expect.stringContaining(text)]);
    }
  });

  it('answers over gRPC-Web and Connect on HTTP/1.1 as well', async () => {
    for (const transport of [
      createGrpcWebTransport({ baseUrl: t.service.grpcUrl, httpVersion: '1.1' }),
      createConnectTransport({ baseUrl: t.service.grpcUrl, httpVersion: '1.1' }),
      createConnectTransport({ baseUrl: t.service.grpcUrl, httpVersion: '2', useBinaryFormat: false }),
    ]) {
      const response = await createClient(TelemetryService, transport).query({ datasetId: wave.datasetId, channelIds: ['1'], maxPointsPerChannel: 10 }, { headers: headers() });
      expect(response.totalRawPoints).toBe(300n);
    }
  });
});
