import { Code, ConnectError, createClient, type Client } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { TelemetryService, type StreamSubmitRequestSchema } from '@sortie/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { revokeApiKey } from './api-keys.ts';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';

// The spec lets gRPC cache key validity for up to five minutes; this service caches for 2 s and runs
// on a clock the test moves, so "within the configured cache time" is checked exactly.
const CACHE_SECONDS = 2;

let t: TestService;
let org: TestOrg;
let client: Client<typeof TelemetryService>;
let datasetId: string;

const point = (second: number) => ({ channelId: '0', timestamp: { seconds: BigInt(1_780_000_000 + second), nanos: 0 }, type: { case: 'double' as const, value: second } });

async function code(call: Promise<unknown>): Promise<Code | 'ok'> {
  try {
    await call;
    return 'ok';
  } catch (error) {
    return ConnectError.from(error).code;
  }
}

beforeAll(async () => {
  t = await startTestService({ env: { SORTIE_GRPC_KEY_CACHE_SECONDS: String(CACHE_SECONDS) } });
  org = await t.createOrg();
  client = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
  const experiment = await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'keys' } });
  const registered = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId: experiment.body.id, datasetName: 'd', channels: [{ name: 'value', unit: '' }] },
  });
  datasetId = registered.body.datasetId;
});
afterAll(() => t?.stop());

describe('gRPC key cache', () => {
  it('a revoked key keeps working until the cache time has passed, then is UNAUTHENTICATED', async () => {
    const { apiKey, keyId } = await org.keyWith(['telemetry:write']);
    const submit = () => client.submit({ datasetId, points: [point(1)] }, { headers: { 'x-api-key': apiKey } });
    expect(await code(submit())).toBe('ok'); // cached from here
    await revokeApiKey(t.service.ctx.db, keyId, t.clock.now());
    expect(await code(submit())).toBe('ok');
    t.clock.advance(CACHE_SECONDS * 1000 - 1);
    expect(await code(submit())).toBe('ok');
    t.clock.advance(1);
    expect(await code(submit())).toBe(Code.Unauthenticated);
  });

  it('an open stream with a revoked key is cut off once the cache time has passed', async () => {
    const { apiKey, keyId } = await org.keyWith(['telemetry:write']);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let firstWritten!: () => void;
    const written = new Promise<void>((resolve) => (firstWritten = resolve));
    async function* stream(): AsyncGenerator<MessageInitShape<typeof StreamSubmitRequestSchema>> {
      yield { message: { case: 'header', value: { datasetId } } };
      yield { message: { case: 'batch', value: { points: [point(10)] } } };
      firstWritten();
      await gate;
      yield { message: { case: 'batch', value: { points: [point(11)] } } };
    }
    const call = code(client.streamSubmit(stream(), { headers: { 'x-api-key': apiKey } }));
    await written;
    await revokeApiKey(t.service.ctx.db, keyId, t.clock.now());
    t.clock.advance(CACHE_SECONDS * 1000);
    release();
    expect(await call).toBe(Code.Unauthenticated);
  });

  it('a widened scope takes effect after the cache time too', async () => {
    const { apiKey, keyId } = await org.keyWith(['telemetry:write']);
    const query = () => client.query({ datasetId, channelIds: ['0'] }, { headers: { 'x-api-key': apiKey } });
    expect(await code(query())).toBe(Code.PermissionDenied);
    await t.service.ctx.db.updateTable('api_keys').set({ scopes: ['telemetry:write', 'telemetry:read'] }).where('id', '=', keyId).execute();
    expect(await code(query())).toBe(Code.PermissionDenied);
    t.clock.advance(CACHE_SECONDS * 1000);
    expect(await code(query())).toBe('ok');
  });
});
