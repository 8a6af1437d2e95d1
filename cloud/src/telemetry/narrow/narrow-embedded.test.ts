import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { TelemetryService } from '@sortie/contracts';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeFrame } from './decode.ts';
import { startTestService, type TestService } from '../../testing/test-service.ts';
import { fixtureFrames, fixturePoints, framePoint } from './fixture-frames.ts';
import { buildFrame } from '@sortie/contracts/testing';
import { crcExtraOf } from '@sortie/contracts/mavlink';
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

it('keeps 64-bit integers exact on PGlite (text parameters): uint64 beyond 2^63 and negative int64', async () => {
  const org = await t.createOrg();
  const experimentId = (await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'int64' } })).body.id;
  const registered = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId, datasetName: 'int64', storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' },
  });
  const datasetId = registered.body.datasetId;
  const systemTime = new Uint8Array(12);
  new DataView(systemTime.buffer).setBigUint64(0, 2n ** 64n - 1n, true);
  const timesync = new Uint8Array(18);
  new DataView(timesync.buffer).setBigInt64(0, -5n, true);
  const now = Date.UTC(2025, 0, 1) * 1000;
  const client = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
  await client.streamSubmit(
    (async function* () {
      yield { message: { case: 'header' as const, value: { experimentId, datasetId, format: 'mavlink-raw-v1' } } };
      yield {
        message: {
          case: 'batch' as const,
          value: {
            points: [
              framePoint(buildFrame({ msgid: 2, payload: systemTime, crcExtra: crcExtraOf(2)! }), now, 1),
              framePoint(buildFrame({ msgid: 111, payload: timesync, crcExtra: crcExtraOf(111)! }), now, 2),
            ],
          },
        },
      };
    })(),
    { headers: { 'x-api-key': org.key } },
  );
  const values = Object.fromEntries((await readStoredSamples(t.service.ctx.db, datasetId)).map((s) => [s.signal, s.value]));
  expect(values).toMatchObject({ 'mavlink.SYSTEM_TIME.time_unix_usec': '18446744073709551615', 'mavlink.TIMESYNC.tc1': -5 });
});
