import net from 'node:net';
import { ErrorEnvelopeSchema } from '@sortie/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';

let t: TestService;
let org: TestOrg;

beforeAll(async () => {
  t = await startTestService({ env: { SORTIE_HTTP_HEADERS_TIMEOUT_MS: '1000', SORTIE_HTTP_REQUEST_TIMEOUT_MS: '2000', SORTIE_HTTP_KEEP_ALIVE_TIMEOUT_MS: '7000' } });
  org = await t.createOrg();
});
afterAll(() => t?.stop());

interface RawResponse {
  status: number;
  headers: Map<string, string>;
  body: string;
}

/** Write bytes on a fresh connection, read until the server closes it, and split off each response. */
async function raw(port: number, ...writes: Array<string | { waitMs: number }>): Promise<RawResponse[]> {
  const socket = net.connect(port, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (c) => chunks.push(c));
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
  socket.on('error', () => {});
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  for (const w of writes) {
    if (typeof w === 'string') socket.write(w);
    else await new Promise((r) => setTimeout(r, w.waitMs));
  }
  const timer = setTimeout(() => socket.destroy(), 10_000);
  await closed;
  clearTimeout(timer);
  return parseResponses(Buffer.concat(chunks).toString('latin1'));
}

function parseResponses(text: string): RawResponse[] {
  const out: RawResponse[] = [];
  let rest = text;
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n');
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n');
    const headers = new Map(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()] as [string, string]));
    const length = Number(headers.get('content-length') ?? 0);
    out.push({ status: Number(statusLine!.split(' ')[1]), headers, body: rest.slice(end + 4, end + 4 + length) });
    rest = rest.slice(end + 4 + length);
  }
  return out;
}

/** The spec's envelope, with a generated request id in the body equal to the header's. */
function expectRawEnvelope(response: RawResponse | undefined, status: number, code: string) {
  expect(response, 'a response').toBeDefined();
  expect(response!.status).toBe(status);
  expect(response!.headers.get('content-type')).toMatch(/^application\/json/);
  const envelope = ErrorEnvelopeSchema.parse(JSON.parse(response!.body));
  expect(envelope.error.code).toBe(code);
  expect(envelope.error.message).not.toMatch(/HPE_|llhttp|Parse Error/);
  expect(envelope.error.request_id).toMatch(/^req_[0-9a-f]{32}$/);
  expect(response!.headers.get('x-request-id')).toBe(envelope.error.request_id);
}

const port = () => t.service.httpPort;

describe('what the HTTP parser refuses is answered in the envelope', () => {
  it('a 70 kB header: 431 headers_too_large', async () => {
    const [response] = await raw(port(), `GET /api/experiments/list HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(70_000)}\r\n\r\n`);
    expectRawEnvelope(response, 431, 'headers_too_large');
  });

  it('a malformed request line: 400 invalid_request', async () => {
    const [response] = await raw(port(), 'GARBAGE\r\n\r\n');
    expectRawEnvelope(response, 400, 'invalid_request');
  });

  it('a malformed chunk size: 400 invalid_request', async () => {
    const [response] = await raw(
      port(),
      `POST /api/experiments/create HTTP/1.1\r\nHost: x\r\nx-api-key: ${org.key}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
    );
    expectRawEnvelope(response, 400, 'invalid_request');
  });

  it('Content-Length and Transfer-Encoding together (a smuggling attempt): 400 invalid_request', async () => {
    const [response] = await raw(
      port(),
      `POST /api/experiments/create HTTP/1.1\r\nHost: x\r\nx-api-key: ${org.key}\r\nContent-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
    );
    expectRawEnvelope(response, 400, 'invalid_request');
  });

  it('a malformed request after a good one on a kept-alive connection (Node would send nothing)', async () => {
    const responses = await raw(port(), 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n', { waitMs: 200 }, 'NOT HTTP AT ALL\r\n\r\n');
    expect(responses[0]!.status).toBe(200);
    expectRawEnvelope(responses[1], 400, 'invalid_request');
  });

  it('headers that do not arrive within SORTIE_HTTP_HEADERS_TIMEOUT_MS: 408 request_timeout', async () => {
    const started = performance.now();
    const [response] = await raw(port(), 'GET /healthz HTTP/1.1\r\nHost: x\r\n');
    expectRawEnvelope(response, 408, 'request_timeout');
    expect(performance.now() - started).toBeLessThan(5000);
  });

  it('a body that does not arrive within SORTIE_HTTP_REQUEST_TIMEOUT_MS: 408 request_timeout', async () => {
    const [response] = await raw(port(), `POST /api/experiments/create HTTP/1.1\r\nHost: x\r\nx-api-key: ${org.key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":`);
    // The route had its headers, not its body: Node's request deadline answers, not the route.
    expectRawEnvelope(response, 408, 'request_timeout');
  });

  it('the gRPC port answers its HTTP/1.1 parser errors the same way', async () => {
    const [response] = await raw(t.service.grpcPort, `POST /sortie.telemetry.v1.TelemetryService/Query HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(70_000)}\r\n\r\n`);
    expectRawEnvelope(response, 431, 'headers_too_large');
  });
});

describe('timeouts are set from the configuration', () => {
  it('keep-alive connections announce SORTIE_HTTP_KEEP_ALIVE_TIMEOUT_MS', async () => {
    const response = await fetch(`${t.url}/healthz`);
    await response.text();
    expect(response.headers.get('keep-alive')).toBe('timeout=7');
  });
});

describe('empty bodies', () => {
  it('a POST without a body is 400 invalid_request in the envelope', async () => {
    const response = await t.call('POST', '/api/experiments/create', { key: org.key, rawBody: '', headers: { 'content-type': 'application/json' } });
    expect(response.status).toBe(400);
    expect(response.body.error.code).toBe('invalid_request');
    expect(response.body.error.request_id).toBe(response.headers.get('x-request-id'));
  });
});
