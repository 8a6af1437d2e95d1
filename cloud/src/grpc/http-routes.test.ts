import { Code, ConnectError, createClient, type Client } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-web';
import { TelemetryService } from '@sortie/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectEnvelope } from '../testing/expect-envelope.ts';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';

/**
 * TelemetryService on the HTTP port under /api/rpc: the fetch-based Connect client (the one a browser
 * uses) in binary and JSON, curl's plain JSON POST, the same auth and error code header as the gRPC
 * port, and zero counters written in JSON on both ports.
 */
let t: TestService;
let org: TestOrg;
let experimentId: string;
let datasetId: string;
const T0 = Date.UTC(2026, 3, 1) / 1000;
const QUERY = '/api/rpc/sortie.telemetry.v1.TelemetryService/Query';
const SUBMIT = '/api/rpc/sortie.telemetry.v1.TelemetryService/Submit';

function clientOf(baseUrl: string, key: string, useBinaryFormat: boolean): Client<typeof TelemetryService> {
  return createClient(TelemetryService, createConnectTransport({ baseUrl, useBinaryFormat, interceptors: [(next) => (req) => (req.header.set('x-api-key', key), next(req))] }));
}

async function failure(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error('expected the call to fail');
}

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg();
  experimentId = (await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'rpc on http' } })).body.id;
  const registered = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId, datasetName: 'wide', channels: [{ name: 'alt', dataType: 'double' }] },
  });
  datasetId = registered.body.datasetId;
});
afterAll(() => t?.stop());

describe('/api/rpc on the HTTP port', () => {
  for (const binary of [true, false]) {
    it(`Submit then Query with the web Connect client (${binary ? 'binary' : 'JSON'})`, async () => {
      const client = clientOf(`${t.url}/api/rpc`, org.key, binary);
      const offset = binary ? 0 : 100;
      const points = Array.from({ length: 5 }, (_, i) => ({
        channelId: '0',
        timestamp: { seconds: BigInt(T0 + offset + i), nanos: 0 },
        type: { case: 'double' as const, value: i * 1.5 },
      }));
      const submitted = await client.submit({ experimentId, datasetId, points });
      expect(submitted.accepted).toBe(5n);
      expect(submitted.written).toBe(5n);
      const answer = await client.query({
        experimentId,
        datasetId,
        channelIds: ['0'],
        from: { seconds: BigInt(T0 + offset), nanos: 0 },
        to: { seconds: BigInt(T0 + offset + 5), nanos: 0 },
      });
      expect(answer.totalRawPoints).toBe(5n);
      expect(answer.series[0]!.points.map((p) => p.value)).toEqual([0, 1.5, 3, 4.5, 6]);
    });
  }

  it('answers curl-style JSON with zero counters written out, on both ports', async () => {
    const body = JSON.stringify({ experimentId, datasetId, points: [{ channelId: 'ch_999', timestamp: new Date(T0 * 1000).toISOString(), double: 1 }] });
    for (const base of [t.url + '/api/rpc', t.service.grpcUrl]) {
      const response = await fetch(`${base}/sortie.telemetry.v1.TelemetryService/Submit`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': org.key },
        body,
      });
      expect(response.status, base).toBe(200);
      // The point addresses no ch_N index, so it is ignored: `written` is present and zero.
      expect(await response.json(), base).toEqual({ accepted: '1', written: '0', ignored: '1', ignoredChannelIds: ['ch_999'] });
    }
  });

  it('an empty Query answers its empty series and zero total rather than leaving them out', async () => {
    const response = await fetch(t.url + QUERY, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': org.key },
      body: JSON.stringify({ datasetId, channelIds: ['0'], from: '2000-01-01T00:00:00Z', to: '2000-01-02T00:00:00Z' }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ series: [{ channelId: '0', points: [], rawPoints: '0', timesUs: [], values: [] }], totalRawPoints: '0' });
  });

  it('authenticates as the gRPC port does, with the spec code and the request id', async () => {
    const anonymous = await fetch(t.url + QUERY, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'rpc-1' }, body: '{}' });
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('x-sortie-error-code')).toBe('unauthorized');
    expect(anonymous.headers.get('x-request-id')).toBe('rpc-1');
    expect((await anonymous.json()).code).toBe('unauthenticated');

    const writer = await org.keyWith(['telemetry:write']);
    const refused = await failure(clientOf(`${t.url}/api/rpc`, writer.apiKey, true).query({ datasetId }));
    expect(refused.code).toBe(Code.PermissionDenied);
    expect(refused.metadata.get('x-sortie-error-code')).toBe('insufficient_scope');

    const reader = await org.keyWith(['telemetry:read']);
    const denied = await failure(clientOf(`${t.url}/api/rpc`, reader.apiKey, false).submit({ datasetId, points: [] }));
    expect(denied.code).toBe(Code.PermissionDenied);
  });

  it('bad input is INVALID_ARGUMENT naming the field, another organization’s dataset NOT_FOUND', async () => {
    const client = clientOf(`${t.url}/api/rpc`, org.key, false);
    const invalid = await failure(client.query({ datasetId: 'not-a-uuid' }));
    expect(invalid.code).toBe(Code.InvalidArgument);
    expect(invalid.metadata.get('x-sortie-error-code')).toBe('invalid_request');
    const other = await t.createOrg('Other');
    const missing = await failure(clientOf(`${t.url}/api/rpc`, other.key, true).query({ datasetId }));
    expect(missing.code).toBe(Code.NotFound);
  });

  it('a message over the gRPC limit is RESOURCE_EXHAUSTED from Connect, not the HTTP body limit', async () => {
    const response = await fetch(t.url + SUBMIT, {
      method: 'POST',
      headers: { 'content-type': 'application/proto', 'x-api-key': org.key },
      body: new Uint8Array(4 * 1024 * 1024 + 1),
    });
    expect(response.status).toBe(429);
    expect(response.headers.get('x-sortie-error-code')).toBe('payload_too_large');
    expect((await response.json()).code).toBe('resource_exhausted');
  });

  it('StreamSubmit and unknown methods are 404 in the envelope; the route is not in the OpenAPI table', async () => {
    for (const method of ['StreamSubmit', 'Nope']) {
      const response = await t.call('POST', `/api/rpc/sortie.telemetry.v1.TelemetryService/${method}`, { key: org.key, body: {} });
      expectEnvelope(response, 404, 'not_found');
      expect(response.headers.get('x-sortie-error-code')).toBe('not_found');
    }
  });
});
