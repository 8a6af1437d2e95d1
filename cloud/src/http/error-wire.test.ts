import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';

/**
 * The bytes a client receives when it is refused: status, the headers it branches on and the body,
 * exactly. Errors are raised deep in storage and commands and mapped to the wire at each edge; this
 * pins what the edges write so that moving where errors are made never changes what clients read.
 */
let t: TestService;
let org: TestOrg;

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg();
});
afterAll(() => t?.stop());

async function wire(path: string, init: { method?: string; key?: string; body?: string; contentType?: string } = {}) {
  const response = await fetch(t.url + path, {
    method: init.method ?? 'GET',
    headers: {
      'x-request-id': 'wire-check',
      ...(init.key && { 'x-api-key': init.key }),
      ...(init.body !== undefined && { 'content-type': init.contentType ?? 'application/json' }),
    },
    body: init.body,
  });
  const headers = Object.fromEntries(['content-type', 'retry-after', 'x-sortie-error-code'].flatMap((n) => (response.headers.has(n) ? [[n, response.headers.get(n)]] : [])));
  return { status: response.status, headers, body: await response.text() };
}

describe('error answers on the wire', () => {
  it('an unknown route', async () => {
    expect(await wire('/api/nothing-here', { key: org.key })).toEqual({
      status: 404,
      headers: { 'content-type': 'application/json' },
      body: '{"error":{"code":"not_found","message":"no route for GET /api/nothing-here","details":[],"request_id":"wire-check"}}',
    });
  });

  it('no API key', async () => {
    expect(await wire('/api/experiments/list')).toEqual({
      status: 401,
      headers: { 'content-type': 'application/json' },
      body: '{"error":{"code":"unauthorized","message":"missing or malformed API key (send it as x-api-key)","details":[],"request_id":"wire-check"}}',
    });
  });

  it('a body the contract refuses, with the field named', async () => {
    expect(await wire('/api/experiments/create', { method: 'POST', key: org.key, body: '{"name":7}' })).toEqual({
      status: 400,
      headers: { 'content-type': 'application/json' },
      body: '{"error":{"code":"invalid_request","message":"invalid request body: name Invalid input: expected string, received number","details":[{"field":"name","message":"Invalid input: expected string, received number"}],"request_id":"wire-check"}}',
    });
  });

  it('a dataset that is not there, raised by storage', async () => {
    const id = '00000000-0000-4000-8000-000000000000';
    expect(await wire(`/api/datasets/parameters?datasetId=${id}`, { key: org.key })).toEqual({
      status: 404,
      headers: { 'content-type': 'application/json' },
      body: '{"error":{"code":"not_found","message":"no dataset 00000000-0000-4000-8000-000000000000","details":[],"request_id":"wire-check"}}',
    });
  });

  it('an RPC the HTTP port does not serve: the envelope and the code header', async () => {
    expect(await wire('/api/rpc/sortie.telemetry.v1.TelemetryService/Nope', { method: 'POST', key: org.key, body: '{}' })).toEqual({
      status: 404,
      headers: { 'content-type': 'application/json', 'x-sortie-error-code': 'not_found' },
      body: '{"error":{"code":"not_found","message":"no RPC at /api/rpc/sortie.telemetry.v1.TelemetryService/Nope; the HTTP port serves Query, Submit and Follow of TelemetryService","details":[],"request_id":"wire-check"}}',
    });
  });

  it('a Query RPC with a dataset id that is no UUID: Connect JSON and the code header', async () => {
    const body = JSON.stringify({ experimentId: '00000000-0000-4000-8000-000000000000', datasetId: 'flight-7' });
    expect(await wire('/api/rpc/sortie.telemetry.v1.TelemetryService/Query', { method: 'POST', key: org.key, body })).toEqual({
      status: 400,
      headers: { 'content-type': 'application/json', 'x-sortie-error-code': 'invalid_request' },
      body: '{"code":"invalid_argument","message":"dataset_id is not a UUID: \\"flight-7\\""}',
    });
  });
});
