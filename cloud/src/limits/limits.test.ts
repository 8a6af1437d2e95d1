import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { createClient, type Client } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { LimitEventDataSchema, LimitRuleSchema, TelemetryService, type StreamSubmitRequestSchema } from '@sortie/contracts';
import { crcExtraOf } from '@sortie/contracts/mavlink';
import { buildFrame } from '@sortie/contracts/testing';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../platform/logger.ts';
import { loadConfig } from '../platform/config.ts';
import { SortieService } from '../service/service.ts';
import { detailFields, expectEnvelope } from '../testing/expect-envelope.ts';
import { tableResolver } from '../testing/table-resolver.ts';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';
import { boundOf, step, type Transition } from './crossing.ts';
import { loadStoredRules, persistChanges } from './states.ts';

// Limit rules end to end on the real service and PostgreSQL: the routes, then every ingest path (HTTP
// append, Submit, StreamSubmit, MAVLink) making LIMIT events, hold times across batches, redelivery,
// rule changes, and a second service on the same database standing for a restart or another replica.

type StreamMessage = MessageInitShape<typeof StreamSubmitRequestSchema>;

let t: TestService;
let org: TestOrg;
let grpc: Client<typeof TelemetryService>;
let experimentId: string;

const T0 = Date.UTC(2026, 2, 1, 12);
const at = (ms: number) => new Date(T0 + ms).toISOString();

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg('limits');
  grpc = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
  experimentId = (await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'test day' } })).body.id;
});
afterAll(() => t?.stop());

async function wideDataset(name: string, exp = experimentId): Promise<string> {
  const r = await t.call('POST', '/api/streams/register', { key: org.key, body: { experimentId: exp, datasetName: name, channels: [{ name: 'thrust', unit: 'N' }, { name: 'temp' }] } });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.datasetId;
}

async function narrowDataset(name: string, exp = experimentId): Promise<string> {
  const r = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId: exp, datasetName: name, storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.datasetId;
}

async function createRule(body: Record<string, unknown>, key = org.key) {
  const r = await t.call('POST', '/api/limits/create', { key, body });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return LimitRuleSchema.parse(r.body);
}

async function append(datasetId: string, rows: [ms: number, thrust: number][], base = t.url) {
  const r = await fetch(`${base}/api/datasets/append`, {
    method: 'POST',
    headers: { 'x-api-key': org.key, 'content-type': 'application/json' },
    body: JSON.stringify({ experimentId, datasetId, rows: rows.map(([ms, thrust]) => ({ timestamp: at(ms), values: { thrust } })) }),
  });
  expect(r.status, await r.clone().text()).toBe(200);
}

async function limitEvents(datasetId: string) {
  const r = await t.call('GET', `/api/datasets/events?datasetId=${datasetId}&kind=LIMIT`, { key: org.key });
  expect(r.status).toBe(200);
  return r.body as Array<{ id: string; timestamp: string; kind: string; message: string; data: Record<string, any> }>;
}

async function storedEvent(id: string) {
  return t.service.ctx.db.selectFrom('events').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
}

describe('limit rules over the API', () => {
  it('create on a dataset or on an experiment, list by either, get, update, delete', async () => {
    const exp = (await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'rules' } })).body.id;
    const wide = await wideDataset('stand', exp);
    const onDataset = await createRule({ experimentId: exp, datasetId: wide, name: 'thrust high', signal: '0', condition: 'above', high: 900, holdMs: 250, severity: 'critical' });
    expect(onDataset).toMatchObject({ experimentId: exp, datasetId: wide, signal: '0', condition: 'above', low: null, high: 900, holdMs: 250, severity: 'critical' });
    const onExperiment = await createRule({ experimentId: exp, name: 'roll', signal: 'mavlink.ATTITUDE.roll', condition: 'outside', low: -0.6, high: 0.6 });
    expect(onExperiment).toMatchObject({ experimentId: exp, datasetId: null, holdMs: 0, severity: 'warning' });
    const other = await wideDataset('other', exp);
    await createRule({ experimentId: exp, datasetId: other, name: 'temp low', signal: '1', condition: 'below', low: -20 });

    const ofDataset = await t.call('GET', `/api/limits/list?datasetId=${wide}`, { key: org.key });
    expect(ofDataset.body.map((r: { id: string }) => r.id)).toEqual([onDataset.id, onExperiment.id]);
    const ofExperiment = await t.call('GET', `/api/limits/list?experimentId=${exp}`, { key: org.key });
    expect(ofExperiment.body).toHaveLength(3);

    expect((await t.call('GET', `/api/limits/get?id=${onDataset.id}`, { key: org.key })).body).toEqual(onDataset);
    const updated = await t.call('POST', '/api/limits/update', { key: org.key, body: { id: onDataset.id, condition: 'below', low: 10, name: 'thrust lost' } });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    // Changing the condition alone drops the bound the new one does not use.
    expect(updated.body).toMatchObject({ name: 'thrust lost', condition: 'below', low: 10, high: null, holdMs: 250 });

    const deleted = await t.call('POST', '/api/limits/delete', { key: org.key, body: { id: onDataset.id } });
    expect(deleted.body).toEqual({ id: onDataset.id, deleted: true });
    expectEnvelope(await t.call('GET', `/api/limits/get?id=${onDataset.id}`, { key: org.key }), 404, 'not_found');
    expectEnvelope(await t.call('POST', '/api/limits/delete', { key: org.key, body: { id: onDataset.id } }), 404, 'not_found');
  });

  it('refuses what cannot be watched, naming the field', async () => {
    const wide = await wideDataset('refusals');
    const narrow = await narrowDataset('refusals-mavlink');
    const cases: [body: Record<string, unknown>, fields: string[]][] = [
      [{ experimentId, datasetId: wide, name: 'x', signal: '0', condition: 'above' }, ['high']],
      [{ experimentId, datasetId: wide, name: 'x', signal: '0', condition: 'above', high: 1, low: 0 }, ['low']],
      [{ experimentId, datasetId: wide, name: 'x', signal: '0', condition: 'outside', low: 2, high: 1 }, ['high']],
      [{ name: 'x', signal: '0', condition: 'below', low: 1 }, ['experimentId']],
      [{ experimentId, datasetId: wide, name: 'x', signal: 'ch_0', condition: 'below', low: 1 }, ['signal']],
      [{ experimentId, datasetId: wide, name: 'x', signal: 'mavlink.ATTITUDE.roll', condition: 'below', low: 1 }, ['signal']],
      [{ experimentId, datasetId: narrow, name: 'x', signal: '0', condition: 'below', low: 1 }, ['signal']],
      [{ experimentId, datasetId: narrow, name: 'x', signal: 'mavlink.ATTITUDE.rol', condition: 'below', low: 1 }, ['signal']],
      [{ experimentId, datasetId: narrow, name: 'x', signal: 'mavlink.STATUSTEXT.text', condition: 'below', low: 1 }, ['signal']],
      [{ experimentId, datasetId: wide, name: 'x', signal: '0', condition: 'below', low: 1, holdMs: 3_600_001 }, ['holdMs']],
      [{ experimentId, datasetId: wide, name: '', signal: '0', condition: 'sideways', low: 1 }, ['name', 'condition']],
    ];
    for (const [body, fields] of cases) {
      const r = await t.call('POST', '/api/limits/create', { key: org.key, body });
      expectEnvelope(r, 400, 'invalid_request');
      expect(detailFields(r), JSON.stringify(body)).toEqual(fields);
    }
    const rule = await createRule({ experimentId, datasetId: wide, name: 'ok', signal: '0', condition: 'above', high: 1 });
    const moved = await t.call('POST', '/api/limits/update', { key: org.key, body: { id: rule.id, datasetId: narrow } });
    expectEnvelope(moved, 400, 'invalid_request');
    expect(moved.body.error.details[0].message).toContain('cannot be edited: datasetId');
    const inverted = await t.call('POST', '/api/limits/update', { key: org.key, body: { id: rule.id, condition: 'outside', low: 5 } });
    expect(detailFields(inverted)).toEqual(['high']);
  });

  it("are the organization's own, and need the datasets scopes", async () => {
    const wide = await wideDataset('scoped');
    const rule = await createRule({ experimentId, datasetId: wide, name: 'mine', signal: '0', condition: 'above', high: 1 });
    const stranger = await t.createOrg('stranger');
    expectEnvelope(await t.call('GET', `/api/limits/get?id=${rule.id}`, { key: stranger.key }), 404, 'not_found');
    expectEnvelope(await t.call('GET', `/api/limits/list?datasetId=${wide}`, { key: stranger.key }), 404, 'not_found');
    expectEnvelope(await t.call('POST', '/api/limits/create', { key: stranger.key, body: { experimentId, datasetId: wide, name: 'x', signal: '0', condition: 'above', high: 1 } }), 404, 'not_found');
    expectEnvelope(await t.call('POST', '/api/limits/update', { key: stranger.key, body: { id: rule.id, high: 2 } }), 404, 'not_found');

    const reader = (await org.keyWith(['datasets:read'])).apiKey;
    expect((await t.call('GET', `/api/limits/list?datasetId=${wide}`, { key: reader })).status).toBe(200);
    const refused = await t.call('POST', '/api/limits/create', { key: reader, body: { experimentId, datasetId: wide, name: 'x', signal: '0', condition: 'above', high: 1 } });
    expectEnvelope(refused, 403, 'insufficient_scope');
    expect(refused.body.error.message).toContain('datasets:write');
  });
});

describe('HTTP append', () => {
  it('a crossing held across batches becomes one LIMIT event when it has held, ended when back within; a redelivery makes no second one', async () => {
    const datasetId = await wideDataset('append');
    const rule = await createRule({ experimentId, datasetId, name: 'thrust high', signal: '0', condition: 'above', high: 10, holdMs: 100 });

    await append(datasetId, [[0, 5], [10, 12], [20, 15]]);
    // Beyond since 10 ms, but not yet for 100 ms: waiting, stored only as the rule's state.
    expect(await limitEvents(datasetId)).toEqual([]);
    const waiting = await t.service.ctx.db.selectFrom('limit_states').selectAll().where('rule_id', '=', rule.id).executeTakeFirstOrThrow();
    expect(waiting).toMatchObject({ phase: 'pending', since_us: (T0 + 10) * 1000, worst_value: 15 });

    await append(datasetId, [[50, 11], [110, 20], [120, 13]]);
    const [started] = await limitEvents(datasetId);
    expect(started).toMatchObject({ kind: 'LIMIT', timestamp: at(10), message: 'thrust above 10 (warning)' });
    expect(LimitEventDataSchema.strict().parse(started!.data)).toEqual({
      ruleId: rule.id,
      ruleName: 'thrust high',
      signal: '0',
      severity: 'warning',
      condition: 'above',
      low: null,
      high: 10,
      holdMs: 100,
      start: at(10),
      end: null,
      worstValue: 20,
      worstTime: at(110),
      active: true,
    });
    const asStarted = await storedEvent(started!.id);

    await append(datasetId, [[150, 25], [200, 3]]);
    const [ended, ...more] = await limitEvents(datasetId);
    expect(more).toEqual([]);
    expect(ended!.id).toBe(started!.id);
    expect(ended!.data).toMatchObject({ start: at(10), end: at(200), worstValue: 25, worstTime: at(150), active: false });
    const asEnded = await storedEvent(started!.id);
    expect(asEnded.updated_at.getTime()).toBeGreaterThan(asStarted.updated_at.getTime());

    // The same rows again (a retried request): nothing new is stored, so nothing is evaluated.
    await append(datasetId, [[0, 5], [10, 12], [20, 15]]);
    await append(datasetId, [[50, 11], [110, 20], [120, 13], [150, 25], [200, 3]]);
    expect((await limitEvents(datasetId)).map((e) => e.id)).toEqual([started!.id]);
    expect((await storedEvent(started!.id)).updated_at).toEqual(asEnded.updated_at);

    // Only newly stored samples are evaluated: a rule made now sees nothing in a redelivery of stored rows.
    await createRule({ experimentId, datasetId, name: 'any thrust', signal: '0', condition: 'above', high: 0 });
    await append(datasetId, [[0, 5], [10, 12], [20, 15]]);
    expect((await limitEvents(datasetId)).map((e) => e.id)).toEqual([started!.id]);
  });

  it('an open crossing\'s event follows its worst value while it lasts (a follower\'s banner shows how far it went)', async () => {
    const datasetId = await wideDataset('worsening');
    await createRule({ experimentId, datasetId, name: 'thrust ceiling', signal: '0', condition: 'above', high: 10 });
    await append(datasetId, [[0, 12]]);
    const [opened] = await limitEvents(datasetId);
    expect(opened!.data).toMatchObject({ worstValue: 12, worstTime: at(0), active: true });
    const before = await storedEvent(opened!.id);

    await append(datasetId, [[10, 18], [20, 14]]);
    const [worse] = await limitEvents(datasetId);
    expect(worse!.data).toMatchObject({ worstValue: 18, worstTime: at(10), active: true, end: null });
    expect((await storedEvent(opened!.id)).updated_at.getTime()).toBeGreaterThan(before.updated_at.getTime());

    // Beyond but not worse: the event is left as it is.
    const unchanged = await storedEvent(opened!.id);
    await append(datasetId, [[30, 15]]);
    expect((await storedEvent(opened!.id)).updated_at).toEqual(unchanged.updated_at);

    await append(datasetId, [[40, 5]]);
    const [ended] = await limitEvents(datasetId);
    expect(ended!.data).toMatchObject({ worstValue: 18, end: at(40), active: false });
  });

  it('a crossing whose event was stored before (its state lost) links to that event: no second event, nobody told twice', async () => {
    const datasetId = await wideDataset('relinked');
    const rule = await createRule({ experimentId, datasetId, name: 'thrust', signal: '0', condition: 'above', high: 10 });
    await append(datasetId, [[0, 20]]);
    const [first] = await limitEvents(datasetId);
    // The rule's state is lost; the same crossing is evaluated again from clear.
    await t.service.ctx.db.deleteFrom('limit_states').where('rule_id', '=', rule.id).execute();
    const [stored] = (await loadStoredRules(t.service.ctx.db, { id: datasetId, organizationId: org.organizationId, experimentId })).filter((r) => r.rule.id === rule.id);
    const state = { ...stored!.state };
    const transitions: Transition[] = [];
    step(boundOf(stored!.rule), state, (T0 + 0) * 1000, 20, transitions);
    const result = await persistChanges(t.service.ctx.db, { id: datasetId, organizationId: org.organizationId }, [
      { rule: stored!.rule, stamp: stored!.stamp, label: 'thrust', expectedVersion: null, openEventId: null, state, transitions },
    ]);
    expect(result.events).toEqual([]);
    expect(state.eventId).toBe(first!.id);
    expect((await limitEvents(datasetId)).map((e) => e.id)).toEqual([first!.id]);
    // And the crossing, ended from that state, ends that event.
    await append(datasetId, [[10, 1]]);
    expect((await limitEvents(datasetId)).map((e) => [e.id, e.data.end])).toEqual([[first!.id, at(10)]]);
  });

  it('one event per crossing is structural: a second LIMIT row for the same rule, dataset and start is refused by the database', async () => {
    const datasetId = await wideDataset('unique');
    const rule = await createRule({ experimentId, datasetId, name: 'hot', signal: '1', condition: 'above', high: 50 });
    await t.call('POST', '/api/datasets/append', { key: org.key, body: { experimentId, datasetId, rows: [{ timestamp: at(0), values: { temp: 60 } }] } });
    const [event] = await limitEvents(datasetId);
    expect(event!.message).toBe('temp above 50 (warning)');
    const again = t.service.ctx.db
      .insertInto('events')
      .values({ id: crypto.randomUUID(), organization_id: org.organizationId, dataset_id: datasetId, time: new Date(T0), kind: 'LIMIT', message: '', data: '{}', limit_rule_id: rule.id })
      .execute();
    await expect(again).rejects.toMatchObject({ code: '23505' });
  });
});

describe('gRPC ingest', () => {
  it('Submit: each committed batch is evaluated', async () => {
    const datasetId = await wideDataset('submit');
    await createRule({ experimentId, datasetId, name: 'cold', signal: '1', condition: 'below', low: -10, severity: 'critical' });
    const r = await fetch(`${t.url}/api/rpc/sortie.telemetry.v1.TelemetryService/Submit`, {
      method: 'POST',
      headers: { 'x-api-key': org.key, 'content-type': 'application/json' },
      body: JSON.stringify({ experimentId, datasetId, points: [0, 20, 40, 60].map((ms, i) => ({ timestamp: at(ms), channelId: '1', double: [0, -12, -30, 0][i] })) }),
    });
    expect(await r.json()).toMatchObject({ written: '4' });
    // gRPC ingest hands batches to the limits without waiting for them to be stored.
    await t.service.ctx.limits.settled(datasetId);
    const events = await limitEvents(datasetId);
    expect(events.map((e) => [e.timestamp, e.message, e.data.end, e.data.worstValue])).toEqual([[at(20), 'temp below -10 (critical)', at(60), -30]]);
  });

  it('StreamSubmit: a hold time spanning the messages of one stream', async () => {
    const datasetId = await wideDataset('stream');
    await createRule({ experimentId, datasetId, name: 'thrust', signal: '0', condition: 'outside', low: 0, high: 100, holdMs: 300 });
    async function* messages(): AsyncGenerator<StreamMessage> {
      yield { message: { case: 'header', value: { experimentId, datasetId, format: '' } } };
      for (let m = 0; m < 10; m++) {
        const points = [0, 50].map((offset) => {
          const ms = m * 100 + offset;
          return { timestamp: { seconds: BigInt(Math.floor((T0 + ms) / 1000)), nanos: ((T0 + ms) % 1000) * 1e6 }, channelId: '0', type: { case: 'double' as const, value: ms >= 200 && ms < 700 ? 150 + ms / 10 : 50 } };
        });
        yield { message: { case: 'batch', value: { points } } };
      }
    }
    const response = await grpc.streamSubmit(messages(), { headers: { 'x-api-key': org.key } });
    expect(response.written).toBe(20n);
    await t.service.ctx.limits.settled(datasetId);
    const events = await limitEvents(datasetId);
    expect(events.map((e) => [e.timestamp, e.data.end, e.data.worstValue, e.data.worstTime])).toEqual([[at(200), at(700), 215, at(650)]]);
  });
});

// ATTITUDE (30): time_boot_ms, then roll and five more floats. SYSTEM_TIME (2): time_unix_usec, time_boot_ms.
function attitude(bootMs: number, roll: number): Uint8Array {
  const payload = new Uint8Array(28);
  const view = new DataView(payload.buffer);
  view.setUint32(0, bootMs, true);
  view.setFloat32(4, roll, true);
  return buildFrame({ msgid: 30, payload, crcExtra: crcExtraOf(30)! });
}
function systemTime(unixUs: number, bootMs: number): Uint8Array {
  const payload = new Uint8Array(12);
  const view = new DataView(payload.buffer);
  view.setBigUint64(0, BigInt(unixUs), true);
  view.setUint32(8, bootMs, true);
  return buildFrame({ msgid: 2, payload, crcExtra: crcExtraOf(2)! });
}

describe('MAVLink ingest', () => {
  // The agent received each frame exactly at the vehicle's boot time + AGENT (no link delay), and the
  // vehicle's GPS clock is 15 s ahead of the agent's: aligned time is GPS time.
  const AGENT_US = T0 * 1000;
  const GPS_US = AGENT_US + 15_000_000;
  const BOOT0 = 100_000;
  const point = (bytes: Uint8Array, bootMs: number, frameSeq: number) => {
    const us = AGENT_US + bootMs * 1000;
    return { timestamp: { seconds: BigInt(Math.floor(us / 1e6)), nanos: (us % 1e6) * 1000 }, type: { case: 'bytes' as const, value: bytes }, frameSeq: BigInt(frameSeq) };
  };
  // 50 Hz: roll beyond 0.5 from the 11th frame to the 30th (400 ms), back within after.
  const rolls = Array.from({ length: 50 }, (_, i) => (i >= 10 && i < 30 ? 0.6 + (i === 20 ? 0.3 : 0) : 0.1));
  const frames = [
    point(systemTime(GPS_US + BOOT0 * 1000, BOOT0), BOOT0, 1),
    ...rolls.map((roll, i) => point(attitude(BOOT0 + 20 * i, roll), BOOT0 + 20 * i, i + 2)),
  ];
  async function* streamOf(exp: string, datasetId: string, points: typeof frames, size: number): AsyncGenerator<StreamMessage> {
    yield { message: { case: 'header', value: { experimentId: exp, datasetId, format: 'mavlink-raw-v1' } } };
    for (let i = 0; i < points.length; i += size) yield { message: { case: 'batch', value: { points: points.slice(i, i + size) } } };
  }

  it("an experiment's rule watches a MAVLink dataset created after it; the event sits on the charts' aligned axis; a redelivery makes no second event", async () => {
    const exp = (await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'flight' } })).body.id;
    const rule = await createRule({ experimentId: exp, name: 'roll limit', signal: 'mavlink.ATTITUDE.roll', condition: 'above', high: 0.5, holdMs: 200, severity: 'critical' });
    const datasetId = await narrowDataset('vehicle-1', exp);
    const sent = await grpc.streamSubmit(streamOf(exp, datasetId, frames, 7), { headers: { 'x-api-key': org.key } });
    expect(sent.written).toBe(51n);
    await t.service.ctx.limits.settled(datasetId);

    const r = await t.call('GET', `/api/datasets/events?datasetId=${datasetId}&kind=LIMIT`, { key: org.key });
    expect(r.body).toHaveLength(1);
    const event = r.body[0];
    expect(event.message).toBe('ATTITUDE.roll above 0.5 (critical)');
    // Where Query puts the first sample beyond the bound (the 11th ATTITUDE): GPS time.
    const query = await fetch(`${t.url}/api/rpc/sortie.telemetry.v1.TelemetryService/Query`, {
      method: 'POST',
      headers: { 'x-api-key': org.key, 'content-type': 'application/json' },
      body: JSON.stringify({ experimentId: exp, datasetId, channelIds: ['mavlink.ATTITUDE.roll'], maxPointsPerChannel: 1000 }),
    });
    const series = ((await query.json()) as { series: { points: { timestamp: string; value: number }[] }[] }).series[0]!.points;
    const firstBeyond = series.find((p) => p.value > 0.5)!;
    const firstBack = series.find((p, i) => i > 10 && p.value < 0.5)!;
    const iso = (s: string) => new Date(s).toISOString();
    expect(iso(firstBeyond.timestamp)).toBe(new Date((GPS_US + (BOOT0 + 200) * 1000) / 1000).toISOString());
    expect(event.timestamp).toBe(iso(firstBeyond.timestamp));
    expect(event.data).toMatchObject({
      ruleId: rule.id,
      signal: 'mavlink.ATTITUDE.roll',
      start: event.timestamp,
      end: iso(firstBack.timestamp),
      worstTime: new Date((GPS_US + (BOOT0 + 400) * 1000) / 1000).toISOString(),
      active: false,
    });
    expect(event.data.worstValue).toBeCloseTo(0.9, 6);
    // Stored on the agent's clock like the dataset's other events, 15 s behind the aligned axis.
    expect((await storedEvent(event.id)).time.toISOString()).toBe(new Date(T0 + BOOT0 + 200).toISOString());

    // The agent resends everything (a reconnect replaying its spool): all duplicates, no second event.
    const again = await grpc.streamSubmit(streamOf(exp, datasetId, frames, 13), { headers: { 'x-api-key': org.key } });
    expect([again.written, again.duplicates]).toEqual([0n, 51n]);
    await t.service.ctx.limits.settled(datasetId);
    const after = await t.call('GET', `/api/datasets/events?datasetId=${datasetId}&kind=LIMIT`, { key: org.key });
    expect(after.body).toEqual(r.body);
    // Only newly stored frames are evaluated: a rule made now sees nothing in a replay of stored ones.
    await createRule({ experimentId: exp, datasetId, name: 'any roll', signal: 'mavlink.ATTITUDE.roll', condition: 'above', high: 0 });
    await grpc.streamSubmit(streamOf(exp, datasetId, frames, 50), { headers: { 'x-api-key': org.key } });
    await t.service.ctx.limits.settled(datasetId);
    expect((await t.call('GET', `/api/datasets/events?datasetId=${datasetId}&kind=LIMIT`, { key: org.key })).body).toEqual(r.body);
  });
});

describe('changing a rule', () => {
  it('ends its open crossing at the newest sample it had seen, and judges later samples by the new rule', async () => {
    const datasetId = await wideDataset('edited');
    const rule = await createRule({ experimentId, datasetId, name: 'thrust', signal: '0', condition: 'above', high: 10 });
    await append(datasetId, [[0, 20], [10, 30]]);
    const updated = await t.call('POST', '/api/limits/update', { key: org.key, body: { id: rule.id, high: 100 } });
    expect(updated.status).toBe(200);
    const [first] = await limitEvents(datasetId);
    // Ended as judged by the old bound, at the last sample seen.
    expect(first!.data).toMatchObject({ high: 10, end: at(10), worstValue: 30, active: false });
    await append(datasetId, [[20, 50], [30, 150], [40, 0]]);
    const events = await limitEvents(datasetId);
    expect(events.map((e) => [e.timestamp, e.data.high, e.data.end])).toEqual([
      [at(0), 10, at(10)],
      [at(30), 100, at(40)],
    ]);
    // Deleting a rule leaves its events on the timeline.
    await t.call('POST', '/api/limits/delete', { key: org.key, body: { id: rule.id } });
    expect(await limitEvents(datasetId)).toHaveLength(2);
  });
});

describe('state kept in the database', () => {
  it('a second service on the same database (a restart, another replica) goes on with a crossing the first began, and a stale copy is corrected', async () => {
    const datasetId = await wideDataset('replicas');
    await createRule({ experimentId, datasetId, name: 'thrust', signal: '0', condition: 'above', high: 10, holdMs: 100 });
    const dataDir = await mkdtemp(path.join(tmpdir(), 'sortie-limits-'));
    const config = loadConfig({
      SORTIE_DATA_DIR: dataDir,
      SORTIE_HTTP_PORT: '0',
      SORTIE_GRPC_PORT: '0',
      SORTIE_LOG_LEVEL: 'silent',
      SORTIE_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
      SORTIE_DATABASE_URL: t.service.ctx.config.databaseUrl!,
    });
    const other = await SortieService.create(config, { clock: t.clock, logger: createLogger('silent'), resolver: tableResolver({}) });
    await other.start();
    try {
      // This service sees the crossing begin (and caches the rule's state as waiting)...
      await append(datasetId, [[0, 1], [10, 20]]);
      expect(await limitEvents(datasetId)).toEqual([]);
      // ...the other one sees it hold: the event starts where the first service saw it begin.
      await append(datasetId, [[60, 30], [120, 25]], other.httpUrl);
      const [started] = await limitEvents(datasetId);
      expect(started!.data).toMatchObject({ start: at(10), worstValue: 30, active: true });
      // Back here within a second: this service's copy still says "waiting"; its write finds the state
      // moved, reads it again and ends the crossing the other one stored.
      await append(datasetId, [[200, 2]]);
      const events = await limitEvents(datasetId);
      expect(events.map((e) => [e.id, e.data.end, e.data.active])).toEqual([[started!.id, at(200), false]]);
      const state = await t.service.ctx.db.selectFrom('limit_states').selectAll().where('dataset_id', '=', datasetId).executeTakeFirstOrThrow();
      expect(state).toMatchObject({ phase: 'clear', event_id: null, last_us: (T0 + 200) * 1000 });
    } finally {
      await other.destroy();
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('the watcher', () => {
  it('copies what the rules watch when a batch is handed over, so ingest may reuse its arrays before the evaluation runs', async () => {
    const datasetId = await wideDataset('reused');
    await createRule({ experimentId, datasetId, name: 'thrust', signal: '0', condition: 'above', high: 10 });
    const watched = { id: datasetId, organizationId: org.organizationId, experimentId, shape: 'wide' as const };
    // Batches whose arrays the writer reuses (as the MAVLink sink's pooled groups are): zeroed as soon as handed over.
    const batch = (points: [ms: number, value: number][]) => {
      const times = new Float64Array(points.map(([ms]) => (T0 + ms) * 1000));
      const values = new Float64Array(points.map(([, v]) => v));
      return { times, values, samples: { forEach: (signal: string, visit: (t: number, v: number) => void) => signal === '0' && times.forEach((t, i) => visit(t, values[i]!)) } };
    };
    const first = batch([[0, 1], [10, 50]]);
    const second = batch([[20, 60], [30, 2]]);
    await t.service.ctx.limits.committed(watched, first.samples);
    // The first batch's crossing is being stored; the second waits behind it, its arrays already reused.
    await t.service.ctx.limits.committed(watched, second.samples);
    first.values.fill(0);
    second.values.fill(0);
    await t.service.ctx.limits.settled(datasetId);
    const [event] = await limitEvents(datasetId);
    expect(event!.data).toMatchObject({ start: at(10), end: at(30), worstValue: 60, worstTime: at(20) });
  });
});

describe('live followers', () => {
  it("hear of a LIMIT event when it is stored and when it ends, as the dataset's events changing", async () => {
    const datasetId = await wideDataset('followed');
    await createRule({ experimentId, datasetId, name: 'thrust', signal: '0', condition: 'above', high: 10 });
    const heard: string[] = [];
    const stop = t.service.ctx.live.follow(datasetId, (change) => heard.push(change));
    try {
      await append(datasetId, [[0, 1]]);
      await append(datasetId, [[10, 20]]);
      await append(datasetId, [[20, 1]]);
      await new Promise((r) => setTimeout(r, 50));
      // Each append's telemetry; the second also stored the event, the third ended it.
      expect(heard).toEqual(['telemetry', 'telemetry', 'events', 'telemetry', 'events']);
    } finally {
      stop();
    }
  });
});

describe('the events table', () => {
  it('holds LIMIT events with the rule that made them, and every other event without one', async () => {
    const datasetId = await wideDataset('kinds');
    await createRule({ experimentId, datasetId, name: 'hot', signal: '1', condition: 'above', high: 50 });
    await t.call('POST', '/api/datasets/append', { key: org.key, body: { experimentId, datasetId, rows: [{ timestamp: at(0), values: { temp: 60 } }] } });
    await t.call('POST', '/api/datasets/events', { key: org.key, body: { experimentId, datasetId, events: [{ timestamp: at(5), kind: 'NOTE' }] } });
    const rows = await sql<{ kind: string; with_rule: boolean }>`
      select kind, limit_rule_id is not null as with_rule from events where dataset_id = ${datasetId}::uuid order by kind`.execute(t.service.ctx.db);
    expect(rows.rows).toEqual([{ kind: 'LIMIT', with_rule: true }, { kind: 'NOTE', with_rule: false }]);
  });
});
