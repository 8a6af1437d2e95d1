import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { McapStreamReader } from '@mcap/core';
import { TelemetryService } from '@sortie/contracts';
import { parseSignalName } from '@sortie/contracts/mavlink';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fixtureFrames, fixturePoints } from '../telemetry/narrow/fixture-frames.ts';
import { readStoredSamples } from '../telemetry/narrow/stored-samples.ts';
import { startTestService, type TestService } from '../testing/test-service.ts';

// The embedded default (PGlite: text parameters, its own SQL engine build) runs the same MAVLink export SQL.
let t: TestService;
beforeAll(async () => {
  t = await startTestService({ embedded: true });
});
afterAll(() => t?.stop());

it('exports a MAVLink capture on PGlite: one MCAP message per stored frame, and a CSV column equal to Query', async () => {
  const org = await t.createOrg();
  const experimentId = (await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'embedded export' } })).body.id;
  const registered = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId, datasetName: 'px4', storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' },
  });
  const datasetId = registered.body.datasetId as string;
  const client = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
  const headers = { 'x-api-key': org.key };
  await client.streamSubmit(
    (async function* () {
      yield { message: { case: 'header' as const, value: { experimentId, datasetId, format: 'mavlink-raw-v1' } } };
      yield { message: { case: 'batch' as const, value: { points: fixturePoints(fixtureFrames('px4-mixed-v1v2-junk.bin')) } } };
    })(),
    { headers },
  );

  const response = await fetch(`${t.url}/api/datasets/export?datasetId=${datasetId}&format=mcap`, { headers });
  expect(response.status).toBe(200);
  const reader = new McapStreamReader();
  reader.append(new Uint8Array(await response.arrayBuffer()));
  const topics = new Map<number, string>();
  const counts = new Map<string, number>();
  for (let record; (record = reader.nextRecord()); ) {
    if (record.type === 'Channel') topics.set(record.id, record.topic);
    if (record.type === 'Message') {
      const topic = topics.get(record.channelId)!;
      counts.set(topic, (counts.get(topic) ?? 0) + 1);
      JSON.parse(new TextDecoder().decode(record.data));
    }
  }
  const frames = new Map<number, string>();
  for (const s of await readStoredSamples(t.service.ctx.db, datasetId)) frames.set(s.frameSeq, parseSignalName(s.signal)!.message);
  const expected = new Map<string, number>();
  for (const message of frames.values()) expected.set(`/mavlink/${message}`, (expected.get(`/mavlink/${message}`) ?? 0) + 1);
  counts.delete('/events');
  expect(counts).toEqual(expected);

  const csv = await (await fetch(`${t.url}/api/datasets/export?datasetId=${datasetId}&format=csv&channel=mavlink.ATTITUDE.roll`, { headers })).text();
  const cells = csv.trim().split('\n').slice(1).map((line) => line.split(',').map(Number));
  const answer = await client.query({ datasetId, channelIds: ['mavlink.ATTITUDE.roll'], maxPointsPerChannel: 10_000 }, { headers });
  const points = answer.series[0]!.points.map((p) => [Number(p.timestamp!.seconds) * 1e6 + p.timestamp!.nanos / 1000, p.value]);
  expect(cells.map(([, us, v]) => [us, v])).toEqual(points);
  expect(points.length).toBeGreaterThan(5);
});
