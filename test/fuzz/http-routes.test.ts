import net from 'node:net';
import fc from 'fast-check';
import { API_ROUTES, buildOpenApiDocument, ErrorEnvelopeSchema, type ApiRoute, type JsonSchema, type OpenApiParameter } from '@sortie/contracts';
import { mintAckToken, startTestService, type TestOrg, type TestService } from '@sortie/cloud/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fuzzSettings, seedFor, summarize, type FuzzFailure } from './fuzz-settings.ts';
import { arbitraryFromSchema, HOSTILE_BODIES, HOSTILE_QUERY_VALUES, mutate, mutations, toJsonText, type IdPools } from './hostile-json.ts';

/**
 * Every route of the route table, with bodies and query strings generated from its schemas and then
 * spoiled, sent to the real service with a key holding every scope and the ids of real objects. Each
 * answer must be below 500, in the envelope with its request id when it is an error, and the service
 * must still answer /healthz. A route added to the table is fuzzed without a case written for it.
 */
const { seed, runs } = fuzzSettings(60);
const document = buildOpenApiDocument();
const REQUEST_TIMEOUT_MS = 15_000;
const DATA_TYPES = ['double', 'float', 'int32', 'uint32', 'int64', 'uint64', 'bool', 'enum', 'bit_field', 'string', 'bytes', 'empty'] as const;

let t: TestService;
let org: TestOrg;
let ids: IdPools;
let ackToken: string;

async function ok(method: string, path: string, body: unknown): Promise<any> {
  const response = await t.call(method, path, { key: org.key, body });
  if (response.status >= 300) throw new Error(`setup ${path}: ${response.status} ${JSON.stringify(response.body)}`);
  return response.body;
}

beforeAll(async () => {
  // Webhook URLs may point at loopback (port 443, where nothing listens): no delivery leaves the machine.
  t = await startTestService({ env: { SORTIE_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8' } });
  org = await t.createOrg('Fuzz Org');
  const experiment = await ok('POST', '/api/experiments/create', { name: 'fuzz' });
  const wide = await ok('POST', '/api/streams/register', {
    experimentId: experiment.id,
    datasetName: 'fuzz-wide',
    // One channel of every data type, so spoiled values meet every column type.
    channels: DATA_TYPES.map((dataType) => ({ name: `c_${dataType}`, unit: 'u', dataType })),
  });
  const narrow = await ok('POST', '/api/streams/register', {
    experimentId: experiment.id,
    datasetName: 'fuzz-drone',
    storageShape: 'narrow',
    codec: 'mavlink',
    dialect: 'ardupilotmega',
    format: 'mavlink-raw-v1',
  });
  const template = await ok('POST', '/api/commands/templates/create', { key: 'fuzz_template', argsSchema: { type: 'object' } });
  const command = await ok('POST', '/api/commands/create', { experimentId: experiment.id, datasetId: wide.datasetId, commandText: 'hover', relTime: 1, templateKey: template.key });
  const endpoint = await ok('POST', '/api/webhooks/create', { label: 'fuzz', url: 'https://127.0.0.1/hook' });
  await ok('POST', '/api/datasets/arm', { datasetId: wide.datasetId, ttlSeconds: 600 });
  const channelIds = (wide.channels as Array<{ id: string }>).map((c) => c.id);
  ids = {
    experimentId: [experiment.id],
    datasetId: [wide.datasetId, narrow.datasetId],
    channelId: channelIds,
    commandId: [command.id],
    endpointId: [endpoint.id],
    id: [command.id, endpoint.id, ...channelIds],
    key: [template.key],
    templateKey: [template.key],
    channelKey: [...DATA_TYPES.map((_, i) => `ch_${i}`), ...DATA_TYPES.map((type) => `c_${type}`), channelIds[0]!],
    url: ['https://127.0.0.1/hook', 'https://127.0.0.1:8443/sortie'],
    any: [experiment.id, wide.datasetId, narrow.datasetId, command.id, endpoint.id, ...channelIds],
  };
  ackToken = mintAckToken(t.service.ctx.secretKey, command.id, new Date(Date.now() + 3_600_000));
  console.log(`fuzz seed ${seed}, ${runs} cases per route (replay: SORTIE_FUZZ_SEED=${seed} SORTIE_FUZZ_RUNS=${runs} npx vitest run test/fuzz)`);
});
afterAll(() => t?.stop());

interface HttpCase {
  description: string;
  query: string;
  body: string | undefined;
  contentType: string | undefined;
  auth: 'valid' | 'garbage';
}

function operationOf(route: ApiRoute) {
  const operation = document.paths[route.path]?.[route.method];
  if (!operation) throw new Error(`${route.method} ${route.path} is not in the OpenAPI document`);
  return operation;
}

function queryArbitrary(route: ApiRoute): fc.Arbitrary<string> {
  const params = operationOf(route).parameters.filter((p): p is OpenApiParameter => !('$ref' in p) && p.in === 'query');
  if (params.length === 0) return fc.constantFrom('', '?x=%00', '?' + 'a=1&'.repeat(2000));
  const one = (p: OpenApiParameter) =>
    fc.oneof(
      { weight: 3, arbitrary: arbitraryFromSchema(document, p.schema as JsonSchema, ids, p.name).map((v) => encodeURIComponent(String(v))) },
      { weight: 2, arbitrary: fc.constantFrom(...HOSTILE_QUERY_VALUES) },
    );
  const pairs = params.map((p) =>
    fc.oneof(
      { weight: p.required ? 6 : 2, arbitrary: one(p).map((v) => [`${p.name}=${v}`]) },
      { weight: 1, arbitrary: fc.constant([] as string[]) },
      // the parameter twice, with different values
      { weight: 1, arbitrary: fc.tuple(one(p), one(p)).map(([a, b]) => [`${p.name}=${a}`, `${p.name}=${b}`]) },
    ),
  );
  return fc.tuple(...pairs).map((lists) => {
    const text = lists.flat().join('&');
    return text ? `?${text}` : '';
  });
}

function caseArbitrary(route: ApiRoute): fc.Arbitrary<HttpCase> {
  const operation = operationOf(route);
  const bodyRef = operation.requestBody?.content['application/json']?.schema;
  const query = queryArbitrary(route);
  const auth = fc.oneof({ weight: 9, arbitrary: fc.constant('valid' as const) }, { weight: 1, arbitrary: fc.constant('garbage' as const) });
  const contentType = fc.oneof(
    { weight: 8, arbitrary: fc.constant('application/json') },
    { weight: 1, arbitrary: fc.constantFrom(undefined, 'text/plain', 'application/json; charset=latin1', 'multipart/form-data; boundary=x', 'application/x-www-form-urlencoded') },
  );
  if (route.rawBody) {
    // A file as the body (an imported log): spoiled queries with bodies that are no log, or none.
    const file = fc.constantFrom(undefined, ...HOSTILE_BODIES);
    return fc.record({ query, auth, contentType, file }).map(({ file, ...c }) => ({ ...c, body: file, description: `query ${c.query.slice(0, 300)}, file ${JSON.stringify(file?.slice(0, 40))}` }));
  }
  if (!bodyRef) {
    return fc.record({ query, auth, contentType }).map((c) => ({ ...c, body: undefined, description: `query ${c.query.slice(0, 300)}` }));
  }
  const valid = arbitraryFromSchema(document, bodyRef as JsonSchema, ids);
  const body = fc.oneof(
    { weight: 3, arbitrary: valid.map((v) => ({ text: toJsonText(v), description: 'generated' })) },
    { weight: 6, arbitrary: fc.tuple(valid, mutations).map(([v, ms]) => ({ text: toJsonText(ms.reduce(mutate, v)), description: `mutated ${JSON.stringify(ms)}` })) },
    { weight: 1, arbitrary: fc.constantFrom(...HOSTILE_BODIES).map((text) => ({ text, description: 'hostile body' })) },
  );
  return fc.record({ body, auth, contentType, query: fc.oneof({ weight: 9, arbitrary: fc.constant('') }, { weight: 1, arbitrary: query }) }).map((c) => ({
    description: c.body.description,
    body: c.body.text,
    query: c.query,
    contentType: c.contentType,
    auth: c.auth,
  }));
}

function isEnvelope(text: string): boolean {
  try {
    return ErrorEnvelopeSchema.safeParse(JSON.parse(text)).success;
  } catch {
    return false;
  }
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

/** Send one case and judge the answer; undefined when it is as the spec requires. */
async function judge(
  route: Pick<ApiRoute, 'method' | 'path' | 'auth'>,
  c: HttpCase,
  seen: (status: number) => void,
  extraHeaders: Record<string, string> = {},
): Promise<Omit<FuzzFailure, 'target' | 'request'> | undefined> {
  const headers: Record<string, string> = { ...extraHeaders };
  if (c.contentType) headers['content-type'] = c.contentType;
  if (route.auth === 'ack-token') headers.authorization = c.auth === 'valid' ? `Bearer ${ackToken}` : 'Bearer \u00e9\u0000';
  else headers['x-api-key'] = c.auth === 'valid' ? org.key : 'sk_%00';
  let response: Response;
  let text: string;
  try {
    // Header values must be ByteStrings for fetch; a refused one is the client's problem, not a case.
    for (const [k, v] of Object.entries(headers)) headers[k] = v.replace(/[^\x20-\x7e]/g, '?');
    response = await fetch(t.url + route.path + c.query, { method: route.method.toUpperCase(), headers, body: c.body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    text = await response.text();
  } catch (error) {
    const name = (error as Error).name;
    if (name === 'TimeoutError') return { kind: 'hang', detail: `no answer within ${REQUEST_TIMEOUT_MS} ms` };
    return { kind: (await healthy()) ? 'bare' : 'crash', detail: `no HTTP answer: ${(error as Error).message} ${(error as { cause?: Error }).cause?.message ?? ''}` };
  }
  seen(response.status);
  if (!(await healthy())) return { kind: 'crash', detail: `after ${response.status}, /healthz no longer answers 200` };
  if (response.status >= 500) return { kind: '5xx', detail: `${response.status} ${text.slice(0, 400)}` };
  const requestId = response.headers.get('x-request-id');
  if (!requestId) return { kind: 'bare', detail: `${response.status} without X-Request-Id` };
  const sentId = extraHeaders['x-request-id'];
  if (sentId !== undefined && requestId !== sentId && !/^req_[0-9a-f]{32}$/.test(requestId)) {
    return { kind: 'bare', detail: `X-Request-Id ${JSON.stringify(sentId)} came back as ${JSON.stringify(requestId)}` };
  }
  // HEAD answers carry no body by definition.
  if (response.status >= 400 && route.method !== ('head' as string)) {
    let envelope;
    try {
      envelope = ErrorEnvelopeSchema.safeParse(JSON.parse(text));
    } catch {
      return { kind: 'bare', detail: `${response.status}, not JSON: ${text.slice(0, 200)}` };
    }
    if (!envelope.success) return { kind: 'bare', detail: `${response.status}, not the envelope: ${text.slice(0, 300)}` };
    if (envelope.data.error.request_id !== requestId) return { kind: 'bare', detail: `${response.status}, request_id ${envelope.data.error.request_id} differs from the header ${requestId}` };
  }
  return undefined;
}

describe('fuzzing every route of the route table', () => {
  const failures: FuzzFailure[] = [];
  const statuses = new Map<string, number>();
  let cases = 0;

  it('has the routes the OpenAPI document lists', () => {
    expect(API_ROUTES.length).toBeGreaterThan(0);
    for (const route of API_ROUTES) expect(() => operationOf(route)).not.toThrow();
  });

  for (const route of API_ROUTES) {
    const target = `${route.method.toUpperCase()} ${route.path}`;
    it(`${target}: no 5xx, always the envelope and a request id, the service stays up`, async () => {
      const samples = fc.sample(caseArbitrary(route), { seed: seedFor(seed, target), numRuns: runs });
      const mine: FuzzFailure[] = [];
      for (const c of samples) {
        cases++;
        const failure = await judge(route, c, (status) => statuses.set(`${target} ${status}`, (statuses.get(`${target} ${status}`) ?? 0) + 1));
        if (failure) mine.push({ target, ...failure, request: `${c.description} ${c.query.slice(0, 200)} body=${(c.body ?? '').slice(0, 600)}` });
      }
      failures.push(...mine);
      expect(mine.map((f) => `${f.kind}: ${f.detail}\n    request: ${f.request}`)).toEqual([]);
    }, 120_000);
  }

  it('paths, methods and request ids off the table: the envelope and a request id, never a 5xx', async () => {
    const offTable = fc.record({
      route: fc.constantFrom(...API_ROUTES),
      method: fc.constantFrom('get', 'post', 'put', 'delete', 'patch', 'options', 'head'),
      suffix: fc.constantFrom('', '', '/', '/x', '/%00', '/%ZZ', '/..%2f..%2fetc%2fpasswd', '?' + '&'.repeat(5000), '//', '/' + 'a'.repeat(5000)),
      requestId: fc.constantFrom(undefined, 'trace-1', 'x'.repeat(129), 'a b', '%00', '<script>', 'req_' + 'f'.repeat(32), ''),
    });
    const mine: FuzzFailure[] = [];
    for (const o of fc.sample(offTable, { seed: seedFor(seed, 'off the table'), numRuns: runs * 2 })) {
      cases++;
      const target = `${o.method.toUpperCase()} ${o.route.path}${o.suffix.slice(0, 40)}`;
      const c: HttpCase = { description: 'off the table', query: '', body: o.method === 'get' || o.method === 'head' ? undefined : '{}', contentType: 'application/json', auth: 'valid' };
      const extra: Record<string, string> = o.requestId === undefined ? {} : { 'x-request-id': o.requestId };
      const failure = await judge({ method: o.method as ApiRoute['method'], path: (o.route.path + o.suffix) as ApiRoute['path'], auth: o.route.auth }, c, () => {}, extra);
      if (failure) mine.push({ target, ...failure, request: `x-request-id ${JSON.stringify(o.requestId)}` });
    }
    failures.push(...mine);
    expect(mine.map((f) => `${f.target} ${f.kind}: ${f.detail} (${f.request})`)).toEqual([]);
  }, 120_000);

  it('raw bytes on the API port: an error in the envelope with a request id, or nothing; the service stays up', async () => {
    const raw = fc.oneof(
      fc.uint8Array({ minLength: 1, maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
      // a request line and headers with random bytes where the parser is strictest
      fc.tuple(fc.constantFrom('GET /healthz', 'POST /api/experiments/create', 'GET /api/experiments/list'), fc.uint8Array({ maxLength: 60 })).map(([line, bytes]) =>
        Buffer.concat([Buffer.from(`${line} HTTP/1.1\r\nHost: x\r\nX-Noise: `), Buffer.from(bytes), Buffer.from('\r\nContent-Length: 2\r\n\r\n{}')]),
      ),
    );
    const mine: FuzzFailure[] = [];
    for (const bytes of fc.sample(raw, { seed: seedFor(seed, 'raw bytes'), numRuns: runs })) {
      cases++;
      const answer = await new Promise<string | undefined>((resolve) => {
        const socket = net.connect(t.service.httpPort, '127.0.0.1', () => socket.end(bytes));
        let text = '';
        const timer = setTimeout(() => {
          socket.destroy();
          resolve(undefined);
        }, REQUEST_TIMEOUT_MS);
        socket.on('data', (chunk) => (text += chunk.toString('latin1')));
        socket.on('error', () => {});
        socket.on('close', () => {
          clearTimeout(timer);
          resolve(text);
        });
      });
      const request = bytes.subarray(0, 120).toString('hex');
      let failure: Omit<FuzzFailure, 'target' | 'request'> | undefined;
      if (answer === undefined) failure = { kind: 'hang', detail: `connection still open after ${REQUEST_TIMEOUT_MS} ms` };
      else if (!(await healthy())) failure = { kind: 'crash', detail: '/healthz no longer answers 200' };
      else {
        // Several answers may follow one another (a valid request, then garbage): judge each.
        for (const response of answer.split(/(?=HTTP\/1\.1 \d{3} )/).filter((r) => r.startsWith('HTTP/1.1 '))) {
          const status = Number(response.slice(9, 12));
          const [head = '', body = ''] = response.split('\r\n\r\n');
          const requestId = /^x-request-id: (.*)$/im.exec(head)?.[1]?.trim();
          if (status >= 500) failure = { kind: '5xx', detail: response.slice(0, 300) };
          else if (!requestId) failure = { kind: 'bare', detail: `no X-Request-Id: ${head.slice(0, 200)}` };
          else if (status >= 400 && !isEnvelope(body)) failure = { kind: 'bare', detail: `not the envelope: ${response.slice(0, 300)}` };
        }
      }
      if (failure) mine.push({ target: 'raw bytes', ...failure, request });
    }
    failures.push(...mine);
    expect(mine.map((f) => `${f.kind}: ${f.detail}\n    request: ${f.request}`)).toEqual([]);
  }, 120_000);

  afterAll(() => {
    console.log(`${summarize('HTTP routes', cases, failures)} (seed ${seed})`);
    if (process.env.SORTIE_FUZZ_STATUSES) console.log([...statuses].sort().map(([k, n]) => `${k}: ${n}`).join('\n'));
  });
});
