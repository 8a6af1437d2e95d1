import net from 'node:net';
import { create, toBinary, toJsonString, type DescMessage } from '@bufbuild/protobuf';
import fc from 'fast-check';
import { FollowRequestSchema, QueryRequestSchema, StreamSubmitRequestSchema, SubmitRequestSchema, TelemetryService } from '@sortie/contracts';
import { callRpc, CONNECT_STREAMING, envelope, RPC_PROTOCOLS, startTestService, type RpcMethod, type RpcProtocol, type TestOrg, type TestService } from '@sortie/cloud/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fuzzSettings, seedFor, summarize, type FuzzFailure } from './fuzz-settings.ts';
import { mutate, mutations, toJsonText } from './hostile-json.ts';

/**
 * Every RPC of TelemetryService on every protocol of the gRPC port (gRPC over h2c, gRPC-Web, Connect
 * binary and JSON), with random bytes, valid messages spoiled byte by byte, and broken framing. Each
 * answer must be a status that is not a server fault (INTERNAL, UNKNOWN, DATA_LOSS; HTTP 5xx), carry
 * x-sortie-error-code when it is an error and a request id always, and the service must still answer
 * /healthz. The methods come from the service descriptor, so a new RPC is fuzzed without a case.
 */
const { seed, runs } = fuzzSettings(30);
const REQUEST_TIMEOUT_MS = 15_000;
const SERVER_FAULTS = new Set([2, 13, 15]);

let t: TestService;
let org: TestOrg;
let datasetIds: string[];
let experimentId: string;

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg('Fuzz RPC Org');
  const experiment = await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'fuzz-rpc' } });
  experimentId = experiment.body.id;
  const wide = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId, datasetName: 'wide', channels: DATA_TYPES.map((dataType) => ({ name: `c_${dataType}`, dataType })) },
  });
  const narrow = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId, datasetName: 'drone', storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' },
  });
  datasetIds = [wide.body.datasetId, narrow.body.datasetId];
  console.log(`fuzz seed ${seed}, ${runs} cases per RPC and protocol (replay: SORTIE_FUZZ_SEED=${seed} SORTIE_FUZZ_RUNS=${runs} npx vitest run test/fuzz)`);
});
afterAll(() => t?.stop());

const timestamp = fc.oneof(
  { weight: 4, arbitrary: fc.record({ seconds: fc.bigInt({ min: 1_700_000_000n, max: 1_800_000_000n }), nanos: fc.integer({ min: 0, max: 999_999_999 }) }) },
  { weight: 1, arbitrary: fc.record({ seconds: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), nanos: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }) }) },
);
// One channel of every data type, addressed by index (and some that do not exist).
const DATA_TYPES = ['double', 'float', 'int32', 'uint32', 'int64', 'uint64', 'bool', 'enum', 'bit_field', 'string', 'bytes', 'empty'] as const;
const channelId = fc.oneof(fc.constantFrom(...DATA_TYPES.map((_, i) => String(i)), '12', '99999', '-1', '', 'c_double'), fc.string({ maxLength: 40 }));
/** A value of each oneof member, by the data type of the channel it fits. */
const VALUE_OF: Record<(typeof DATA_TYPES)[number], fc.Arbitrary<{ case: string; value: unknown }>> = {
  double: fc.record({ case: fc.constant('double'), value: fc.double() }),
  float: fc.record({ case: fc.constant('float'), value: fc.float() }),
  int32: fc.record({ case: fc.constant('int32'), value: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }) }),
  uint32: fc.record({ case: fc.constant('uint32'), value: fc.nat() }),
  int64: fc.record({ case: fc.constant('int64'), value: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }) }),
  uint64: fc.record({ case: fc.constant('uint64'), value: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }) }),
  bool: fc.record({ case: fc.constant('bool'), value: fc.boolean() }),
  enum: fc.record({ case: fc.constant('enum'), value: fc.nat() }),
  bit_field: fc.record({ case: fc.constant('bitField'), value: fc.uint8Array({ maxLength: 8 }) }),
  string: fc.record({ case: fc.constant('string'), value: fc.string({ maxLength: 30 }).map((s) => s + ['', '', '\u0000', '\ud800'][s.length % 4]) }),
  bytes: fc.record({ case: fc.constant('bytes'), value: fc.uint8Array({ maxLength: 30 }) }),
  empty: fc.record({ case: fc.constant('empty'), value: fc.constant({}) }),
};
const pointValue = fc.oneof(...Object.values(VALUE_OF));
// Mostly a point its channel accepts, so spoiling one byte of a batch lands among valid neighbours.
const point = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .nat({ max: DATA_TYPES.length - 1 })
      .chain((i) => fc.record({ channelId: fc.constant(String(i)), timestamp, type: VALUE_OF[DATA_TYPES[i]!] })),
  },
  { weight: 1, arbitrary: fc.record({ channelId, timestamp, type: pointValue }) },
);
const id = (kind: 'dataset' | 'experiment') =>
  fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...(kind === 'dataset' ? datasetIds : [experimentId, ''])) },
    { weight: 1, arbitrary: fc.constantFrom(...datasetIds, experimentId, '') },
    { weight: 1, arbitrary: fc.uuid() },
    { weight: 1, arbitrary: fc.string({ maxLength: 40 }) },
  );

/** Valid messages of each method's request type, with real ids most of the time. */
function messagesOf(method: RpcMethod): fc.Arbitrary<{ schema: DescMessage; messages: unknown[] }> {
  switch (method) {
    case 'Submit':
      return fc
        .record({ experimentId: id('experiment'), datasetId: id('dataset'), points: fc.array(point, { maxLength: 5 }) })
        .map((m) => ({ schema: SubmitRequestSchema, messages: [create(SubmitRequestSchema, m as never)] }));
    case 'Query':
      return fc
        .record({
          experimentId: id('experiment'),
          datasetId: id('dataset'),
          channelIds: fc.array(fc.oneof({ weight: 3, arbitrary: fc.constantFrom('0', '1', '2', '3', '4', '5', '6', '7') }, { weight: 1, arbitrary: channelId }), { maxLength: 3 }),
          from: timestamp,
          to: timestamp,
          maxPointsPerChannel: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 0, max: 5000 }) }, { weight: 1, arbitrary: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }) }),
        })
        .map((m) => ({ schema: QueryRequestSchema, messages: [create(QueryRequestSchema, m as never)] }));
    case 'StreamSubmit':
      return fc
        .tuple(
          fc.record({ experimentId: id('experiment'), datasetId: id('dataset'), format: fc.constantFrom('', '', '', 'mavlink-raw-v1', 'csv') }),
          fc.array(fc.oneof(point.map((p) => ({ case: 'point', value: p })), fc.array(point, { maxLength: 3 }).map((points) => ({ case: 'batch', value: { points } }))), { maxLength: 3 }),
        )
        .map(([header, rest]) => ({
          schema: StreamSubmitRequestSchema,
          messages: [{ message: { case: 'header', value: header } }, ...rest.map((message) => ({ message }))].map((m) => create(StreamSubmitRequestSchema, m as never)),
        }));
    case 'Follow':
      return fc
        .record({
          experimentId: id('experiment'),
          datasetId: id('dataset'),
          channelIds: fc.array(fc.oneof({ weight: 3, arbitrary: fc.constantFrom('0', '1', '2', 'mavlink.ATTITUDE.roll') }, { weight: 1, arbitrary: channelId }), { maxLength: 3 }),
          windowMs: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 0, max: 120_000 }) }, { weight: 1, arbitrary: fc.nat() }),
          maxPointsPerWindow: fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 0, max: 5000 }) }, { weight: 1, arbitrary: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }) }),
        })
        .map((m) => ({ schema: FollowRequestSchema, messages: [create(FollowRequestSchema, m as never)] }));
    default:
      // A method added to the service: random messages only, until it gets a generator of its own.
      return fc.constant({ schema: SubmitRequestSchema, messages: [] });
  }
}

interface RpcCase {
  description: string;
  body: Uint8Array;
  raw: boolean;
  headers?: Record<string, string>;
}

/** Request headers a client library would never send: bad deadlines, unknown compressions, odd ids. */
const HOSTILE_HEADERS: readonly Record<string, string>[] = [
  { 'grpc-timeout': 'abc' },
  { 'grpc-timeout': '99999999999H' },
  { 'grpc-timeout': '0n' },
  { 'connect-timeout-ms': '-1' },
  { 'connect-timeout-ms': '1e999' },
  { 'grpc-encoding': 'br' },
  { 'grpc-encoding': 'gzip' },
  { 'connect-content-encoding': 'zstd' },
  { 'content-encoding': 'gzip' },
  { 'x-request-id': 'x'.repeat(500) },
  { 'x-request-id': 'a b c' },
  { 'x-api-key': 'sk_' + 'A'.repeat(43) },
  { 'x-api-key': '' },
  { 'grpc-accept-encoding': 'identity;q=0, *;q=0' },
];

const BYTE_MUTATION = fc.record({ kind: fc.constantFrom('flip', 'truncate', 'insert', 'bad-tag', 'huge-length'), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) });

function spoil(bytes: Uint8Array, m: { kind: string; at: number; byte: number }): Uint8Array<ArrayBuffer> {
  const at = bytes.length === 0 ? 0 : m.at % bytes.length;
  switch (m.kind) {
    case 'flip': {
      const out = bytes.slice();
      if (out.length > 0) out[at] = m.byte;
      return out;
    }
    case 'truncate':
      return bytes.slice(0, at);
    case 'insert':
      return Uint8Array.from([...bytes.subarray(0, at), m.byte, ...bytes.subarray(at)]);
    case 'bad-tag':
      // field 536870911, wire type 7
      return Uint8Array.from([...bytes.subarray(0, at), 0xff, 0xff, 0xff, 0xff, 0x0f, ...bytes.subarray(at)]);
    default:
      // a length-delimited field announcing far more than follows
      return Uint8Array.from([...bytes.subarray(0, at), 0x1a, 0xff, 0xff, 0xff, 0xff, 0x07, ...bytes.subarray(at)]);
  }
}

/** Proto JSON of a message; values proto JSON cannot write (a timestamp past year 9999) as that text. */
function jsonOf(schema: DescMessage, message: unknown): string {
  try {
    return toJsonString(schema, message as never);
  } catch {
    return JSON.stringify(JSON.parse(toJsonString(schema, create(schema) as never)));
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}

function caseArbitrary(method: RpcMethod, protocol: RpcProtocol): fc.Arbitrary<RpcCase> {
  return fc
    .tuple(bodyArbitrary(method, protocol), fc.option(fc.constantFrom(...HOSTILE_HEADERS), { freq: 6 }))
    .map(([c, headers]) => (headers ? { ...c, headers, description: `${c.description} headers ${JSON.stringify(headers).slice(0, 80)}` } : c));
}

function bodyArbitrary(method: RpcMethod, protocol: RpcProtocol): fc.Arbitrary<RpcCase> {
  const json = protocol === 'connect-json';
  const unaryConnect = protocol.startsWith('connect') && !CONNECT_STREAMING.has(method);
  const encode = (schema: DescMessage, message: unknown): Uint8Array => (json ? new TextEncoder().encode(jsonOf(schema, message)) : toBinary(schema, message as never));
  // The request as the protocol frames it: one body for Connect unary, envelopes otherwise.
  const frame = (payloads: Uint8Array[]) => (unaryConnect ? (payloads[0] ?? new Uint8Array()) : concat(payloads.map((p) => envelope(p))));
  const valid = messagesOf(method).map(({ schema, messages }) => messages.map((m) => encode(schema, m)));
  return fc.oneof(
    { weight: 2, arbitrary: valid.map((payloads) => ({ description: 'valid', body: frame(payloads), raw: true })) },
    {
      weight: 4,
      arbitrary: fc.tuple(valid, fc.array(BYTE_MUTATION, { minLength: 1, maxLength: 3 }), fc.nat()).map(([payloads, ms, which]) => {
        const spoilt = payloads.slice();
        const i = payloads.length === 0 ? 0 : which % payloads.length;
        spoilt[i] = ms.reduce(spoil, payloads[i] ?? new Uint8Array());
        return { description: `spoilt message ${i}: ${JSON.stringify(ms)}`, body: frame(spoilt), raw: true };
      }),
    },
    { weight: 2, arbitrary: fc.uint8Array({ maxLength: 300 }).map((bytes) => ({ description: 'random message bytes', body: frame([bytes]), raw: true })) },
    {
      // JSON protocols: the valid JSON, spoiled as the HTTP fuzz spoils bodies
      weight: json ? 4 : 0,
      arbitrary: fc.tuple(valid, mutations).map(([payloads, ms]) => {
        const spoilt = payloads.map((p) => new TextEncoder().encode(toJsonText(ms.reduce(mutate, JSON.parse(new TextDecoder().decode(p)) as unknown))));
        return { description: `spoilt JSON ${JSON.stringify(ms)}`, body: frame(spoilt), raw: true };
      }),
    },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }).map((bytes) => ({ description: 'random body, no framing', body: bytes, raw: true })) },
    {
      weight: 1,
      // framing: any flags byte, a length that lies, a trailing partial envelope
      arbitrary: fc.tuple(valid, fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.boolean()).map(([payloads, flags, length, partial]) => {
        const head = envelope(payloads[0] ?? new Uint8Array(), flags);
        if (!partial) new DataView(head.buffer).setUint32(1, length);
        return { description: `envelope flags ${flags} length ${partial ? 'true' : length}${partial ? ' + partial' : ''}`, body: partial ? concat([head, Uint8Array.of(0, 0, 0)]) : head, raw: true };
      }),
    },
  );
}

async function healthy(): Promise<boolean> {
  try {
    const response = await fetch(`${t.url}/healthz`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    await response.arrayBuffer();
    return response.status === 200;
  } catch {
    return false;
  }
}

/**
 * The same service on the HTTP port under /api/rpc (Connect binary and JSON): every method of the
 * descriptor but the client-streaming ones, by design (a client stream over HTTP/1.1 through a proxy is
 * what the gRPC port's h2c listener is for; cloud/src/grpc/http-routes.ts).
 */
const HTTP_PORT_PREFIX = '/api/rpc';

/**
 * A valid Follow never ends by itself: each Follow case carries a short deadline of its protocol (in
 * place of any hostile deadline header), and a stream that runs to it ends as any stream would.
 */
const FOLLOW_DEADLINE: Record<RpcProtocol, Record<string, string>> = {
  grpc: { 'grpc-timeout': '400m' },
  'grpc-web': { 'grpc-timeout': '400m' },
  connect: { 'connect-timeout-ms': '400' },
  'connect-json': { 'connect-timeout-ms': '400' },
};

describe('fuzzing every RPC on every protocol', () => {
  const failures: FuzzFailure[] = [];
  let cases = 0;
  const methods = TelemetryService.methods.map((m) => m.name as RpcMethod);
  const httpPort = new Set(TelemetryService.methods.filter((m) => m.methodKind !== 'client_streaming').map((m) => m.name as RpcMethod));
  const mounts: Array<{ port: 'gRPC' | 'HTTP'; protocols: readonly RpcProtocol[]; methods: RpcMethod[] }> = [
    { port: 'gRPC', protocols: RPC_PROTOCOLS, methods },
    { port: 'HTTP', protocols: ['connect', 'connect-json'], methods: methods.filter((m) => httpPort.has(m)) },
  ];

  const targets = mounts.flatMap(({ port, protocols, methods }) => methods.flatMap((method) => protocols.map((protocol) => ({ port, method, protocol }))));

  it('fuzzes the unary and server-streaming methods on the HTTP port too', () => {
    expect(targets.filter((x) => x.port === 'HTTP').map((x) => x.method)).toEqual(expect.arrayContaining(['Query', 'Submit', 'Follow']));
  });

  for (const { port, method, protocol } of targets) {
    const target = `${method} over ${protocol}${port === 'HTTP' ? ' on the HTTP port' : ''}`;
    it(`${target}: no server fault, x-sortie-error-code and a request id, the service stays up`, async () => {
      const baseUrl = port === 'gRPC' ? t.service.grpcUrl : t.url + HTTP_PORT_PREFIX;
      const samples = fc.sample(caseArbitrary(method, protocol), { seed: seedFor(seed, target), numRuns: runs });
      const mine: FuzzFailure[] = [];
      for (const c of samples) {
        cases++;
        const request = `${c.description} body=${Buffer.from(c.body.subarray(0, 200)).toString('hex')}`;
        let failure: Omit<FuzzFailure, 'target' | 'request'> | undefined;
        let answered = '';
        try {
          const headers = method === 'Follow' ? { ...c.headers, ...FOLLOW_DEADLINE[protocol] } : c.headers;
          const outcome = await callRpc(baseUrl, { protocol, method, key: org.key, body: c.body, raw: c.raw, headers, timeoutMs: REQUEST_TIMEOUT_MS });
          answered = `code ${outcome.code} ${outcome.errorCode ?? ''} ${outcome.message.slice(0, 80)}`;
          if (!(await healthy())) failure = { kind: 'crash', detail: '/healthz no longer answers 200' };
          else if (outcome.httpStatus >= 500 || SERVER_FAULTS.has(outcome.code)) failure = { kind: '5xx', detail: `HTTP ${outcome.httpStatus}, code ${outcome.code}: ${outcome.message}` };
          else if (outcome.code < 0) failure = { kind: 'bare', detail: `HTTP ${outcome.httpStatus} without a status` };
          else if (!outcome.requestId) failure = { kind: 'bare', detail: `code ${outcome.code} without X-Request-Id` };
          else if (outcome.code !== 0 && !outcome.errorCode) failure = { kind: 'bare', detail: `code ${outcome.code} without x-sortie-error-code: ${outcome.message}` };
        } catch (error) {
          const message = `${(error as Error).message} ${((error as { cause?: Error }).cause?.message ?? '')}`.trim();
          failure = /no answer within|TimeoutError|aborted due to timeout/i.test(`${message} ${(error as Error).name}`)
            ? { kind: 'hang', detail: message }
            : { kind: (await healthy()) ? 'bare' : 'crash', detail: `no answer: ${message}` };
        }
        // SORTIE_FUZZ_TRACE=1 prints every case, to find the one before a failure that set it up.
        if (process.env.SORTIE_FUZZ_TRACE) console.log(`${Math.round(performance.now())} ${target} #${cases}: ${failure ? `${failure.kind} ${failure.detail}` : answered} | ${request.slice(0, 200)}`);
        if (failure) mine.push({ target, ...failure, request });
      }
      failures.push(...mine);
      expect(mine.map((f) => `${f.kind}: ${f.detail}\n    request: ${f.request}`)).toEqual([]);
    }, 120_000);
  }

  it('raw bytes on the gRPC port, with and without the HTTP/2 preface: the connection ends, the service stays up', async () => {
    const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
    const raw = fc.record({ preface: fc.boolean(), bytes: fc.uint8Array({ minLength: 1, maxLength: 400 }) });
    const mine: FuzzFailure[] = [];
    for (const r of fc.sample(raw, { seed: seedFor(seed, 'raw bytes'), numRuns: runs })) {
      cases++;
      const body = Buffer.concat([r.preface ? PREFACE : Buffer.alloc(0), r.bytes]);
      const ended = await new Promise<string>((resolve) => {
        const socket = net.connect(t.service.grpcPort, '127.0.0.1', () => socket.end(body));
        const timer = setTimeout(() => {
          socket.destroy();
          resolve('hang');
        }, REQUEST_TIMEOUT_MS);
        socket.on('data', () => {});
        socket.on('error', () => {});
        socket.on('close', () => {
          clearTimeout(timer);
          resolve('closed');
        });
      });
      const request = `${r.preface ? 'preface + ' : ''}${Buffer.from(r.bytes.subarray(0, 100)).toString('hex')}`;
      if (ended === 'hang') mine.push({ target: 'raw bytes', kind: 'hang', detail: `connection still open after ${REQUEST_TIMEOUT_MS} ms`, request });
      else if (!(await healthy())) mine.push({ target: 'raw bytes', kind: 'crash', detail: '/healthz no longer answers 200', request });
    }
    failures.push(...mine);
    expect(mine.map((f) => `${f.kind}: ${f.detail}\n    request: ${f.request}`)).toEqual([]);
  }, 120_000);

  afterAll(() => {
    console.log(`${summarize('RPCs', cases, failures)} (seed ${seed})`);
  });
});
