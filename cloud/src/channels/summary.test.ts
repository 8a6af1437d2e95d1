// GET /api/datasets/summary: what a list of flights shows beside a dataset's name. On MAVLink flights from
// autopilots nobody on the project flew (an ArduSub dive whose companion computer sends HEARTBEATs too, a
// PX4 mission), on a flight that grows after it was summarised, and on a wide dataset.
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { TelemetryService } from '@sortie/contracts';
import { ardusubDiveWithCompanion, BLUEOS_COMPANION, heartbeatPayload, px4Mission, buildFrame, FIXTURE_CRC_EXTRA, type SyntheticFrame } from '@sortie/contracts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';

let t: TestService;
let org: TestOrg;
let experimentId: string;

const START_US = Date.UTC(2026, 0, 5, 9, 0, 0) * 1000;
const iso = (us: number) => `${new Date(Math.floor(us / 1000)).toISOString().slice(0, 23)}${String(us % 1000).padStart(3, '0')}Z`;

const summary = (datasetId: string, key = org.key) => t.call('GET', `/api/datasets/summary?experimentId=${experimentId}&datasetId=${datasetId}`, { key });
const span = async (datasetId: string) => (await t.call('GET', `/api/datasets/span?datasetId=${datasetId}`, { key: org.key })).body;

async function register(name: string): Promise<string> {
  const registered = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId, datasetName: name, storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' },
  });
  return registered.body.datasetId as string;
}

/** Frames as an agent sends them, each received 3 ms after it was sent; frame_seq continues from `firstSeq`. */
async function send(datasetId: string, frames: readonly SyntheticFrame[], firstSeq = 1): Promise<void> {
  const at = (us: number) => ({ seconds: BigInt(Math.floor(us / 1e6)), nanos: (us % 1e6) * 1000 });
  const points = frames.map((f, i) => ({ timestamp: at(START_US + f.atUs + 3_000), type: { case: 'bytes' as const, value: f.bytes }, frameSeq: BigInt(firstSeq + i) }));
  const client = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
  async function* messages() {
    yield { message: { case: 'header' as const, value: { experimentId, datasetId, format: 'mavlink-raw-v1' } } };
    for (let i = 0; i < points.length; i += 500) yield { message: { case: 'batch' as const, value: { points: points.slice(i, i + 500) } } };
  }
  const response = await client.streamSubmit(messages(), { headers: { 'x-api-key': org.key } });
  expect(response.written).toBe(BigInt(frames.length));
}

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg();
  experimentId = (await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'summaries' } })).body.id;
});
afterAll(() => t?.stop());

describe('GET /api/datasets/summary', () => {
  it("an ArduSub dive: the autopilot's vehicle, not the companion computer's, every frame counted, the span route's ends", async () => {
    const frames = ardusubDiveWithCompanion(20);
    const datasetId = await register('dive');
    await send(datasetId, frames);
    const answer = await summary(datasetId);
    expect(answer.status).toBe(200);
    const ends = await span(datasetId);
    expect(answer.body).toEqual({
      datasetId,
      first: ends.first,
      last: ends.last,
      frames: frames.length,
      samples: null,
      vehicle: { mavType: 12, type: 'submarine', mavAutopilot: 3, autopilot: 'ArduSub' },
    });
  });

  it('a PX4 mission names its quadrotor and PX4', async () => {
    const frames = px4Mission(10);
    const datasetId = await register('px4');
    await send(datasetId, frames);
    const { body } = await summary(datasetId);
    expect(body).toMatchObject({ frames: frames.length, vehicle: { mavType: 2, type: 'quadrotor', mavAutopilot: 12, autopilot: 'PX4' } });
    expect((Date.parse(body.last) - Date.parse(body.first)) / 1000).toBeCloseTo(9.98, 1);
  });

  it('follows a flight that grows: frames and span are read again once it was written; no vehicle before its autopilot speaks', async () => {
    const datasetId = await register('growing');
    expect((await summary(datasetId)).body).toEqual({ datasetId, first: null, last: null, frames: 0, samples: null, vehicle: null });
    // The companion computer alone: a HEARTBEAT, but not the vehicle's.
    const companion = { atUs: 0, sysid: 1, compid: 194, msgid: 0, bytes: buildFrame({ msgid: 0, payload: heartbeatPayload(BLUEOS_COMPANION), crcExtra: FIXTURE_CRC_EXTRA[0]!, seq: 0, sysid: 1, compid: 194 }) };
    await send(datasetId, [companion]);
    expect((await summary(datasetId)).body).toMatchObject({ frames: 1, vehicle: null });
    const dive = ardusubDiveWithCompanion(5).map((f) => ({ ...f, atUs: f.atUs + 1_000_000 }));
    await send(datasetId, dive, 2);
    const { body } = await summary(datasetId);
    expect(body).toMatchObject({ frames: 1 + dive.length, vehicle: { autopilot: 'ArduSub' } });
    expect(body.last).toBe((await span(datasetId)).last);
  });

  it('a wide dataset: its span and numeric samples, no frames or vehicle', async () => {
    const registered = await t.call('POST', '/api/streams/register', {
      key: org.key,
      body: { experimentId, datasetName: 'stand', channels: [{ name: 'thrust', dataType: 'double' }, { name: 'temperature', dataType: 'double' }, { name: 'note', dataType: 'string' }] },
    });
    const datasetId = registered.body.datasetId as string;
    expect((await summary(datasetId)).body).toEqual({ datasetId, first: null, last: null, frames: null, samples: 0, vehicle: null });
    const rows = [
      ...Array.from({ length: 11 }, (_, i) => ({ timestamp: iso(START_US + i * 1_000_000 + 250), values: { thrust: i, note: 'x' } })),
      ...Array.from({ length: 16 }, (_, i) => ({ timestamp: iso(START_US + 5_000_000 + i * 1_000_000), values: { temperature: 20 + i } })),
    ];
    expect((await t.call('POST', '/api/datasets/append', { key: org.key, body: { experimentId, datasetId, rows } })).status).toBe(200);
    expect((await summary(datasetId)).body).toEqual({ datasetId, first: '2026-01-05T09:00:00.000250Z', last: '2026-01-05T09:00:20.000000Z', frames: null, samples: 27, vehicle: null });
  });

  it("answers not_found for an unknown dataset or another organization's, and needs datasets:read", async () => {
    const datasetId = (await t.call('GET', '/api/experiments/list', { key: org.key })).body[0].datasets[0].id as string;
    const other = await t.createOrg();
    expect((await summary(datasetId, other.key)).status).toBe(404);
    expect((await t.call('GET', `/api/datasets/summary?datasetId=${crypto.randomUUID()}`, { key: org.key })).status).toBe(404);
    const { apiKey } = await org.keyWith(['telemetry:read']);
    expect((await summary(datasetId, apiKey)).status).toBe(403);
  });
});
