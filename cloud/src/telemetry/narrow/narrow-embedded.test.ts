import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { TelemetryService } from '@sortie/contracts';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeFrame } from './decode.ts';
import { startTestService, type TestService } from '../../testing/test-service.ts';
import { fixtureFrames, fixturePoints } from './fixture-frames.ts';
import { readStoredSamples } from './stored-samples.ts';

// The embedded default (PGlite: text parameters, no binary arrays) runs the same narrow path.
let t: TestService;
beforeAll(async () => {
  t = await startTestService({ embedded: true });
});
afterAll(() => t?.stop());

it('ingests, dedupes, lists and queries a capture on PGlite', async () => {
  const org = await t.createOrg();
  const experiment = await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'embedded' } });
  const experimentId = experiment.body.id;
  const registered = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId, datasetName: 'px4', storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' },
  });
  const datasetId = registered.body.datasetId;
  const client = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
  const frames = fixtureFrames('px4-mixed-v1v2-junk.bin');
  const send = () =>
    client.streamSubmit(
      (async function* () {
        yield { message: { case: 'header' as const, value: { experimentId, datasetId, format: 'mavlink-raw-v1' } } };
        yield { message: { case: 'batch' as const, value: { points: fixturePoints(frames) } } };
      })(),
      { headers: { 'x-api-key': org.key } },
    );
  expect((await send()).written).toBe(138n);
  expect((await send()).duplicates).toBe(138n);
  const samples = await readStoredSamples(t.service.ctx.db, datasetId);
  expect(samples).toHaveLength(frames.reduce((n, f) => n + decodeFrame(f.frame).length, 0));
  const channels = await t.call('GET', `/api/datasets/channels?datasetId=${datasetId}&experimentId=${experimentId}`, { key: org.key });
  expect(channels.body.map((c: { name: string }) => c.name)).toContain('mavlink.UNKNOWN_300.raw');
  const query = await client.query({ datasetId, channelIds: ['mavlink.ATTITUDE.roll'] }, { headers: { 'x-api-key': org.key } });
  expect(Number(query.totalRawPoints)).toBe(frames.filter((f) => f.frame.msgid === 30).length);
});
