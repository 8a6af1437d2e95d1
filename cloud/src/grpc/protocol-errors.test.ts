import http from 'node:http';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callRpc, CONNECT_STREAMING, envelope, RPC_METHODS, type RpcOutcome, type RpcProtocol } from '../testing/rpc-wire.ts';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';

let t: TestService;
let org: TestOrg;

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg();
});
afterAll(() => t?.stop());

const INVALID_ARGUMENT = 3;
const RESOURCE_EXHAUSTED = 8;
// The tag of field 536870911 with wire type 7, which does not exist: no protobuf reader accepts it.
const MALFORMED = Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0x0f);
const BINARY_PROTOCOLS: RpcProtocol[] = ['grpc', 'grpc-web', 'connect'];

function expectClientError(outcome: RpcOutcome, code: number, errorCode: string) {
  expect(outcome.code, outcome.message).toBe(code);
  expect(outcome.errorCode).toBe(errorCode);
  expect(outcome.requestId).toMatch(/^req_[0-9a-f]{32}$/);
  // No words of the protobuf reader or of Connect's internals reach the client.
  expect(outcome.message).not.toMatch(/parse binary|illegal tag|wire type|premature|decompression failed/i);
  expect(outcome.httpStatus).toBeLessThan(500);
}

describe('bytes that are not a protobuf message', () => {
  for (const protocol of BINARY_PROTOCOLS) {
    for (const method of RPC_METHODS) {
      it(`are INVALID_ARGUMENT (invalid_request) with a plain message: ${method} over ${protocol}`, async () => {
        const outcome = await callRpc(t.service.grpcUrl, { protocol, method, key: org.key, body: MALFORMED });
        expectClientError(outcome, INVALID_ARGUMENT, 'invalid_request');
        expect(outcome.message).toMatch(/^the request is not a valid sortie\.telemetry\.v1\.\w+Request message/);
        // Connect unary answers with the HTTP status of the code: 400, not 500 (a Connect stream answers 200
        // and ends with the error).
        if (protocol === 'connect' && !CONNECT_STREAMING.has(method)) expect(outcome.httpStatus).toBe(400);
      });
    }
  }

  it('are INVALID_ARGUMENT over Connect JSON too, with the trailer', async () => {
    const outcome = await callRpc(t.service.grpcUrl, { protocol: 'connect-json', method: 'Query', key: org.key, body: new TextEncoder().encode('{"datasetId": ') });
    expect(outcome.httpStatus).toBe(400);
    expect(outcome.code).toBe(INVALID_ARGUMENT);
    expect(outcome.errorCode).toBe('invalid_request');
  });

  it('a frame flagged compressed without a compression named, or a gzip that does not inflate, is INVALID_ARGUMENT', async () => {
    const flagged = await callRpc(t.service.grpcUrl, { protocol: 'grpc', method: 'Submit', key: org.key, body: envelope(MALFORMED, 1), raw: true });
    expectClientError(flagged, INVALID_ARGUMENT, 'invalid_request');
    const truncated = gzipSync(Buffer.alloc(64, 1)).subarray(0, 20);
    const broken = await callRpc(t.service.grpcUrl, {
      protocol: 'grpc',
      method: 'Submit',
      key: org.key,
      body: envelope(truncated, 1),
      raw: true,
      headers: { 'grpc-encoding': 'gzip' },
    });
    expectClientError(broken, INVALID_ARGUMENT, 'invalid_request');
  });
});

describe('a message over the 4 MiB limit', () => {
  // An envelope that announces 5 MiB: refused from its header, before the bytes are waited for.
  const announced = envelope(new Uint8Array(16));
  new DataView(announced.buffer).setUint32(1, 5 * 1024 * 1024);

  for (const protocol of ['grpc', 'grpc-web'] as const) {
    it(`is RESOURCE_EXHAUSTED with x-sortie-error-code payload_too_large over ${protocol}`, async () => {
      const outcome = await callRpc(t.service.grpcUrl, { protocol, method: 'Submit', key: org.key, body: announced.subarray(0, 5), raw: true });
      expectClientError(outcome, RESOURCE_EXHAUSTED, 'payload_too_large');
    });
  }

  it('is RESOURCE_EXHAUSTED with the header over Connect', async () => {
    const outcome = await callRpc(t.service.grpcUrl, { protocol: 'connect', method: 'Submit', key: org.key, body: new Uint8Array(4 * 1024 * 1024 + 1) });
    expectClientError(outcome, RESOURCE_EXHAUSTED, 'payload_too_large');
    expect(outcome.httpStatus).toBe(429);
  });
});

describe('a stream refused at its first message, with more of its body unread', () => {
  it('does not hold up the next call on the same HTTP/1.1 connection', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const post = (body: Uint8Array) =>
      new Promise<{ status: number; connection: string | undefined; text: string }>((resolve, reject) => {
        const req = http.request(
          `${t.service.grpcUrl}/sortie.telemetry.v1.TelemetryService/StreamSubmit`,
          { method: 'POST', agent, headers: { 'content-type': 'application/connect+json', 'x-api-key': org.key, 'content-length': body.byteLength } },
          (res) => {
            let text = '';
            res.on('data', (c) => (text += c));
            res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, text }));
          },
        );
        req.setTimeout(4000, () => req.destroy(new Error('no answer within 4 s')));
        req.on('error', reject);
        req.end(body);
      });
    const message = (value: unknown) => envelope(new TextEncoder().encode(JSON.stringify(value)));
    // A header with a bad id, then 300 kB of points the server never needs to read.
    const filler = message({ batch: { points: Array.from({ length: 3000 }, () => ({ channelId: '0', double: 1 })) } });
    const refused = await post(Buffer.concat([message({ header: { datasetId: 'not-a-uuid' } }), filler, filler, filler]));
    expect(refused.text).toContain('invalid_argument');
    expect(refused.connection).toBe('close');
    const next = await post(Buffer.concat([message({ header: { datasetId: 'still-not-a-uuid' } })]));
    expect(next.text).toContain('still-not-a-uuid');
    agent.destroy();
  });
});

describe('a stream refused at its first message with a large answer, while the client is still sending', () => {
  it('reaches the client whole: the server reads and drops the rest of the body before it closes (no reset)', async () => {
    const message = (value: unknown) => envelope(new TextEncoder().encode(JSON.stringify(value)));
    // An unknown format is refused naming it, so the answer is as large as the format; 4 MB follow it.
    const filler = message({ batch: { points: Array.from({ length: 20_000 }, () => ({ channelId: '0', double: 1 })) } });
    const body = Buffer.concat([message({ header: { datasetId: crypto.randomUUID(), format: 'x'.repeat(200_000) } }), ...Array.from({ length: 8 }, () => filler)]);
    for (let attempt = 0; attempt < 5; attempt++) {
      const response = await fetch(`${t.service.grpcUrl}/sortie.telemetry.v1.TelemetryService/StreamSubmit`, {
        method: 'POST',
        headers: { 'content-type': 'application/connect+json', 'connect-protocol-version': '1', 'x-api-key': org.key },
        body,
        signal: AbortSignal.timeout(10_000),
      });
      const bytes = Buffer.from(await response.arrayBuffer());
      expect(response.headers.get('connection')).toBe('close');
      // One end-of-stream frame, whole: flags 0x02, its length, then JSON naming the error.
      expect(bytes[0]).toBe(0x02);
      const end = JSON.parse(bytes.subarray(5, 5 + bytes.readUInt32BE(1)).toString()) as { error: { code: string } };
      expect(end.error.code).toBe('invalid_argument');
    }
  }, 60_000);
});

describe('answers Connect gives before a call starts', () => {
  it('an unknown path is 404 in the envelope with the request id; a wrong content type still carries the request id', async () => {
    const missing = await fetch(`${t.service.grpcUrl}/sortie.telemetry.v1.TelemetryService/Nothing`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(missing.status).toBe(404);
    const body = await missing.json();
    expect(body.error.code).toBe('not_found');
    expect(body.error.request_id).toMatch(/^req_/);
    expect(missing.headers.get('x-request-id')).toBe(body.error.request_id);
    const wrongType = await fetch(`${t.service.grpcUrl}/sortie.telemetry.v1.TelemetryService/Query`, { method: 'POST', headers: { 'content-type': 'text/plain', 'x-request-id': 'mine-1' }, body: '{}' });
    await wrongType.arrayBuffer();
    expect(wrongType.status).toBe(415);
    expect(wrongType.headers.get('x-request-id')).toBe('mine-1');
  });

  it('a call echoes the request id the client sent', async () => {
    const outcome = await callRpc(t.service.grpcUrl, { protocol: 'grpc', method: 'Query', key: org.key, body: MALFORMED, headers: { 'x-request-id': 'trace-42' } });
    expect(outcome.requestId).toBe('trace-42');
  });
});
