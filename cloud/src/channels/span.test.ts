// GET /api/datasets/span: a dataset's first and last sample as stored, over all its channels, on the axis
// Query answers on. Checked against what Query returns for every signal, on MAVLink flights whose messages
// run on different clocks, and on a wide dataset whose channels start and end apart.
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { TelemetryService } from '@sortie/contracts';
import { ardusubDiveWithCompanion, px4Mission, type SyntheticFrame } from '@sortie/contracts/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';

let t: TestService;
let org: TestOrg;
let experimentId: string;

const START_US = Date.UTC(2026, 0, 5, 9, 0, 0) * 1000;
const iso = (us: number) => `${new Date(Math.floor(us / 1000)).toISOString().slice(0, 23)}${String(us % 1000).padStart(3, '0')}Z`;

const span = (datasetId: string, key = org.key) => t.call('GET', `/api/datasets/span?experimentId=${experimentId}&datasetId=${datasetId}`, { key });

async function rpc(method: string, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(`${t.url}/api/rpc/sortie.telemetry.v1.TelemetryService/${method}`, {
    method: 'POST',
    headers: { 'x-api-key': org.key, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const answer = (await response.json()) as Record<string, unknown>;
  if (!response.ok) throw new Error(`${method}: ${response.status} ${JSON.stringify(answer)}`);
  return answer;
}

/** A MAVLink flight as an agent would send it: each frame received `latencyUs` after it was sent. */
async function narrowFlight(name: string, frames: readonly SyntheticFrame[], latencyUs: (f: SyntheticFrame) => number): Promise<string> {
  const registered = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId, datasetName: name, storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' },
  });
  const datasetId = registered.body.datasetId as string;
  const at = (us: number) => ({ seconds: BigInt(Math.floor(us / 1e6)), nanos: (us % 1e6) * 1000 });
  const points = frames.map((f, i) => ({ timestamp: at(START_US + f.atUs + latencyUs(f)), type: { case: 'bytes' as const, value: f.bytes }, frameSeq: BigInt(i + 1) }));
  const client = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
  async function* messages() {
    yield { message: { case: 'header' as const, value: { experimentId, datasetId, format: 'mavlink-raw-v1' } } };
    for (let i = 0; i < points.length; i += 500) yield { message: { case: 'batch' as const, value: { points: points.slice(i, i + 500) } } };
  }
  const response = await client.streamSubmit(messages(), { headers: { 'x-api-key': org.key } });
  expect(response.written).toBe(BigInt(frames.length));
  return datasetId;
}

/** First and last sample of each signal as Query answers them, every sample asked for. */
async function queried(datasetId: string, signals: string[]): Promise<Array<{ first: string; last: string }>> {
  const answer = await rpc('Query', { experimentId, datasetId, channelIds: signals, maxPointsPerChannel: 100_000 });
  return (answer['series'] as Array<{ points: Array<{ timestamp: string }> }>).map((s) => ({ first: s.points[0]!.timestamp, last: s.points.at(-1)!.timestamp }));
}

const micros = (rfc3339: string) => Date.parse(rfc3339.replace(/\.\d+/, '')) * 1000 + Number(((/\.(\d+)/.exec(rfc3339)?.[1] ?? '') + '000000').slice(0, 6));

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg();
  experimentId = (await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'spans' } })).body.id;
});
afterAll(() => t?.stop());

describe('GET /api/datasets/span', () => {
  it('a MAVLink flight: from its first sample of any signal to its last, not one signal\'s (HEARTBEAT starts after ATTITUDE and ends before it)', async () => {
    // PX4 stamps ATTITUDE with its boot clock; HEARTBEAT carries none and is placed by its receipt, 40 ms late.
    const datasetId = await narrowFlight('px4-mission', px4Mission(10), (f) => (f.msgid === 0 ? 40_000 : 2_000));
    const [roll, heartbeat] = await queried(datasetId, ['mavlink.ATTITUDE.roll', 'mavlink.HEARTBEAT.type']);
    const answer = await span(datasetId);
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ datasetId, first: expect.any(String), last: expect.any(String) });
    const first = Math.min(micros(roll!.first), micros(heartbeat!.first));
    const last = Math.max(micros(roll!.last), micros(heartbeat!.last));
    expect(micros(answer.body.first)).toBe(first);
    expect(micros(answer.body.last)).toBe(last);
    // The first ATTITUDE, a quarter second before the first HEARTBEAT; 10 s of flight, where HEARTBEAT alone spans 9.
    expect(micros(answer.body.first)).toBe(micros(roll!.first));
    expect(micros(heartbeat!.first) - micros(answer.body.first)).toBeGreaterThan(200_000);
    expect((last - first) / 1e6).toBeCloseTo(9.98, 2);
  });

  it("a flight with a companion computer: every component's signals, each on its own clock", async () => {
    const datasetId = await narrowFlight('ardusub-dive', ardusubDiveWithCompanion(20), () => 3_000);
    const signals = ['mavlink.ATTITUDE.roll', 'mavlink.HEARTBEAT.type', 'mavlink.SYSTEM_TIME.time_boot_ms'];
    const ends = await queried(datasetId, signals);
    const { body } = await span(datasetId);
    expect(micros(body.first)).toBe(Math.min(...ends.map((e) => micros(e.first))));
    expect(micros(body.last)).toBe(Math.max(...ends.map((e) => micros(e.last))));
  });

  it('a wide dataset: from the earliest channel\'s first row to the latest channel\'s last', async () => {
    const registered = await t.call('POST', '/api/streams/register', {
      key: org.key,
      body: { experimentId, datasetName: 'stand', channels: [{ name: 'thrust', dataType: 'double' }, { name: 'temperature', dataType: 'double' }] },
    });
    const datasetId = registered.body.datasetId as string;
    const empty = await span(datasetId);
    expect(empty.body).toEqual({ datasetId, first: null, last: null });
    const rows = [
      ...Array.from({ length: 11 }, (_, i) => ({ timestamp: iso(START_US + i * 1_000_000 + 250), values: { thrust: i } })),
      ...Array.from({ length: 16 }, (_, i) => ({ timestamp: iso(START_US + 5_000_000 + i * 1_000_000), values: { temperature: 20 + i } })),
    ];
    expect((await t.call('POST', '/api/datasets/append', { key: org.key, body: { experimentId, datasetId, rows } })).status).toBe(200);
    expect((await span(datasetId)).body).toEqual({ datasetId, first: '2026-01-05T09:00:00.000250Z', last: '2026-01-05T09:00:20.000000Z' });
  });

  it('answers not_found for an unknown dataset or another organization\'s, and needs datasets:read', async () => {
    const other = await t.createOrg();
    const datasetId = (await t.call('GET', '/api/experiments/list', { key: org.key })).body[0].datasets[0].id as string;
    expect((await t.call('GET', `/api/datasets/span?datasetId=${datasetId}`, { key: other.key })).status).toBe(404);
    expect((await t.call('GET', `/api/datasets/span?datasetId=${crypto.randomUUID()}`, { key: org.key })).status).toBe(404);
    const { apiKey } = await org.keyWith(['telemetry:read']);
    expect((await t.call('GET', `/api/datasets/span?datasetId=${datasetId}`, { key: apiKey })).status).toBe(403);
  });
});
