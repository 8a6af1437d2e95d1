import { CommandDispatchedBodySchema, LimitCrossingBodySchema, verifyWebhook, WEBHOOK_HEADERS, WEBHOOK_USER_AGENT } from '@sortie/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, RECEIVER_HOST, startDeliveryFixture, type DeliveryFixture } from '../testing/delivery-fixture.ts';
import { startHttpsReceiver, type ReceivedRequest, type TestReceiver } from '../testing/https-receiver.ts';
import type { TestOrg } from '../testing/test-service.ts';

// Limit events as signed webhooks through the delivery engine (JetStream, the real PostgreSQL), to real
// HTTPS receivers with a certificate made for this run: an endpoint that opted in gets each crossing's
// start and end, verified with its secret; one that did not gets commands and nothing else.

let f: DeliveryFixture;
let org: TestOrg;
let optedIn: TestReceiver;
let commandsOnly: TestReceiver;
const endpoint = { optedIn: { id: '', secret: '' }, commandsOnly: { id: '', secret: '' } };
let experimentId: string;
let datasetId: string;
let ruleId: string;

const T0 = Date.UTC(2026, 3, 1, 9);
const at = (ms: number) => new Date(T0 + ms).toISOString();

async function append(rows: [ms: number, thrust: number][]) {
  const r = await f.t.call('POST', '/api/datasets/append', { key: org.key, body: { experimentId, datasetId, rows: rows.map(([ms, thrust]) => ({ timestamp: at(ms), values: { thrust } })) } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
}

const eventOf = (req: ReceivedRequest) => String(req.headers[WEBHOOK_HEADERS.event]);
const limitRequests = (receiver: TestReceiver) => receiver.requests.filter((r) => eventOf(r) === 'limit.crossing');

beforeAll(async () => {
  f = await startDeliveryFixture();
  org = await f.t.createOrg('limit webhooks');
  optedIn = await startHttpsReceiver(f.cert);
  commandsOnly = await startHttpsReceiver(f.cert);
  const a = await f.t.call('POST', '/api/webhooks/create', { key: org.key, body: { label: 'conductor', url: `https://${RECEIVER_HOST}:${optedIn.port}/limits`, limitEvents: true } });
  const b = await f.t.call('POST', '/api/webhooks/create', { key: org.key, body: { label: 'vehicle bridge', url: `https://${RECEIVER_HOST}:${commandsOnly.port}/commands` } });
  expect([a.status, a.body.limitEvents, b.status, b.body.limitEvents]).toEqual([201, true, 201, false]);
  endpoint.optedIn = { id: a.body.id, secret: a.body.secret };
  endpoint.commandsOnly = { id: b.body.id, secret: b.body.secret };
  experimentId = (await f.t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'test day' } })).body.id;
  datasetId = (await f.t.call('POST', '/api/streams/register', { key: org.key, body: { experimentId, datasetName: 'stand', channels: [{ name: 'thrust' }] } })).body.datasetId;
  const rule = await f.t.call('POST', '/api/limits/create', {
    key: org.key,
    body: { experimentId, datasetId, name: 'thrust high', signal: '0', condition: 'above', high: 10, severity: 'critical' },
  });
  ruleId = rule.body.id;
});
afterAll(async () => {
  await optedIn?.close();
  await commandsOnly?.close();
  await f?.stop();
});

describe('limit events as webhooks', () => {
  it('an endpoint that opted in receives the start and the end, signed with its secret and retried like a command', async () => {
    // The first limit delivery is refused with a 503: it is retried (same job, attempt 2), as a command's would be.
    let refusedOnce = false;
    optedIn.answer((req) => {
      if (eventOf(req) === 'limit.crossing' && !refusedOnce) {
        refusedOnce = true;
        return { status: 503, body: 'busy' };
      }
      return { status: 200, body: 'ok' };
    });
    await append([[0, 5], [10, 12], [20, 30], [30, 8]]);
    await eventually(async () => (limitRequests(optedIn).length >= 3 ? true : undefined), 15_000, 'the start (refused, then again) and the end');

    const [refused, start, end] = limitRequests(optedIn);
    for (const req of [refused!, start!, end!]) {
      expect(req.headers['user-agent']).toBe(WEBHOOK_USER_AGENT);
      expect(req.headers['content-type']).toBe('application/json');
    }
    const [jobOfRefused, firstAttempt] = String(refused!.headers[WEBHOOK_HEADERS.delivery]).split('.');
    expect(firstAttempt).toBe('1');
    // The retry is the same job's second attempt; the end is a job of its own.
    const startDelivery = String(start!.headers[WEBHOOK_HEADERS.delivery]);
    const endDelivery = String(end!.headers[WEBHOOK_HEADERS.delivery]);
    expect(startDelivery === `${jobOfRefused}.2` || endDelivery === `${jobOfRefused}.2`).toBe(true);

    const bodies = await Promise.all(
      [start!, end!].map(async (req) => LimitCrossingBodySchema.parse((await verifyWebhook(new Uint8Array(req.rawBody), req.headers, endpoint.optedIn.secret)).body)),
    );
    const byPhase = Object.fromEntries(bodies.map((b) => [b.event.data.active ? 'start' : 'end', b]));
    const events = await f.t.call('GET', `/api/datasets/events?datasetId=${datasetId}&kind=LIMIT`, { key: org.key });
    expect(events.body).toHaveLength(1);
    const stored = events.body[0];
    expect(byPhase.start!.event).toMatchObject({
      id: stored.id,
      datasetId,
      experimentId,
      organizationId: org.organizationId,
      kind: 'LIMIT',
      timestamp: at(10),
      message: 'thrust above 10 (critical)',
      data: { ruleId, start: at(10), end: null, active: true, worstValue: 12, worstTime: at(10), severity: 'critical' },
    });
    expect(byPhase.end!.event).toMatchObject({ id: stored.id, data: { start: at(10), end: at(30), active: false, worstValue: 30, worstTime: at(20) } });
    // The end's body is the event as listed.
    expect(byPhase.end!.event.data).toEqual(stored.data);
    // Another secret does not verify it.
    await expect(verifyWebhook(new Uint8Array(end!.rawBody), end!.headers, endpoint.commandsOnly.secret)).rejects.toMatchObject({ code: 'signature_mismatch' });
  });

  it('an endpoint that did not opt in receives commands and never a limit event', async () => {
    const armed = await f.t.call('POST', '/api/datasets/arm', { key: org.key, body: { datasetId, ttlSeconds: 600 } });
    expect(armed.status).toBe(200);
    const created = await f.t.call('POST', '/api/commands/create', { key: org.key, body: { experimentId, datasetId, commandText: 'ABORT', relTime: 1 } });
    const dispatched = await f.t.call('POST', '/api/commands/dispatch', { key: org.key, body: { commandId: created.body.id, ackTimeoutSeconds: 60 } });
    expect(dispatched.body.endpoints.map((e: { id: string }) => e.id).sort()).toEqual([endpoint.optedIn.id, endpoint.commandsOnly.id].sort());
    const before = limitRequests(optedIn).length;
    await append([[100, 50], [110, 1]]);
    // Both got the command; the opted-in one also got the crossing's start and end...
    await eventually(async () => (limitRequests(optedIn).length >= before + 2 && commandsOnly.requests.length >= 1 ? true : undefined), 15_000, 'deliveries');
    // ...and, given time for anything else to arrive, the other got the command alone.
    await new Promise((r) => setTimeout(r, 1500));
    expect(commandsOnly.requests.map(eventOf)).toEqual(['command.dispatched']);
    const [command] = commandsOnly.requests;
    const body = CommandDispatchedBodySchema.parse((await verifyWebhook(new Uint8Array(command!.rawBody), command!.headers, endpoint.commandsOnly.secret)).body);
    expect(body.command.id).toBe(created.body.id);
    const jobs = await f.t.service.ctx.db.selectFrom('delivery_jobs').select(['endpoint_id', 'event_type']).where('organization_id', '=', org.organizationId).execute();
    expect(jobs.filter((j) => j.endpoint_id === endpoint.commandsOnly.id).map((j) => j.event_type)).toEqual(['command.dispatched']);
  });

  it('opting in and out through /api/webhooks/update takes effect for the next crossing', async () => {
    const optIn = await f.t.call('POST', '/api/webhooks/update', { key: org.key, body: { id: endpoint.commandsOnly.id, limitEvents: true } });
    const optOut = await f.t.call('POST', '/api/webhooks/update', { key: org.key, body: { id: endpoint.optedIn.id, limitEvents: false, label: 'conductor (muted)' } });
    expect([optIn.status, optIn.body.limitEvents, optOut.body.limitEvents, optOut.body.label]).toEqual([200, true, false, 'conductor (muted)']);
    const listed = await f.t.call('GET', '/api/webhooks/list', { key: org.key });
    expect(Object.fromEntries(listed.body.map((e: { id: string; limitEvents: boolean }) => [e.id, e.limitEvents]))).toEqual({
      [endpoint.optedIn.id]: false,
      [endpoint.commandsOnly.id]: true,
    });
    const mutedBefore = limitRequests(optedIn).length;
    await append([[200, 40], [210, 2]]);
    await eventually(async () => (limitRequests(commandsOnly).length >= 2 ? true : undefined), 15_000, 'the newly opted-in endpoint');
    await new Promise((r) => setTimeout(r, 1000));
    expect(limitRequests(optedIn)).toHaveLength(mutedBefore);
    const stranger = await f.t.createOrg('stranger');
    const refused = await f.t.call('POST', '/api/webhooks/update', { key: stranger.key, body: { id: endpoint.optedIn.id, limitEvents: true } });
    expect(refused.status).toBe(404);
    const notEditable = await f.t.call('POST', '/api/webhooks/update', { key: org.key, body: { id: endpoint.optedIn.id, url: 'https://elsewhere.test/' } });
    expect([notEditable.status, notEditable.body.error.details[0].message]).toEqual([400, 'cannot be edited: url']);
  });
});
