import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { TelemetryService } from '@sortie/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../testing/test-service.ts';

// The embedded default (PGlite) takes parameters as text only: the same ingest and Query run there
// with array literals instead of binary arrays.

let t: TestService;

beforeAll(async () => {
  t = await startTestService({ embedded: true });
}, 120_000);
afterAll(() => t?.stop());

describe('gRPC on the embedded database', () => {
  it('streams, merges, overwrites and queries back exactly', async () => {
    const org = await t.createOrg();
    const experiment = await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'embedded' } });
    const registered = await t.call('POST', '/api/streams/register', {
      key: org.key,
      body: { experimentId: experiment.body.id, datasetName: 'd', channels: [{ name: 'volts', unit: 'V' }, { name: 'ticks', unit: '', dataType: 'int64' }] },
    });
    const datasetId = registered.body.datasetId;
    const client = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
    const headers = { 'x-api-key': org.key };
    const at = (ms: number) => ({ seconds: BigInt(1_790_000_000 + Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 });
    const points = Array.from({ length: 3000 }, (_, i) => ({ channelId: '0', timestamp: at(i), type: { case: 'double' as const, value: i === 1500 ? -0 : Math.sin(i / 50) } }));
    async function* stream() {
      yield { message: { case: 'header' as const, value: { datasetId } } };
      yield { message: { case: 'batch' as const, value: { points } } };
      yield { message: { case: 'batch' as const, value: { points: [{ channelId: '1', timestamp: at(10), type: { case: 'int64' as const, value: 9007199254740993n } }, { channelId: '0', timestamp: at(20), type: { case: 'double' as const, value: 42 } }] } } };
    }
    const response = await client.streamSubmit(stream(), { headers });
    expect(response).toMatchObject({ accepted: 3002n, written: 3001n, duplicates: 1n });

    const query = await client.query({ datasetId, channelIds: ['0', '1'], maxPointsPerChannel: 100 }, { headers });
    expect(query.series.map((s) => s.rawPoints)).toEqual([3000n, 1n]);
    expect(query.series[0]!.points.length).toBeLessThanOrEqual(100);
    expect(query.series[0]!.points.some((p) => p.value === 42)).toBe(true);
    expect(query.series[1]!.points.map((p) => p.value)).toEqual([9007199254740992]);
  });
});
