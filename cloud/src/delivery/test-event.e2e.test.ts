import { mkdtemp, readFile, rm } from 'node:fs/promises';
import type { Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DeliveryAttemptSchema, PING_COMMAND_ID, PingBodySchema, verifyWebhook, WEBHOOK_HEADERS } from '@sortie/contracts';
import { createWebhookReceiver, serveReceiver, type WebhookReceiver } from '@sortie/contracts/examples/webhook-receiver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RECEIVER_HOST, startDeliveryFixture, type DeliveryFixture } from '../testing/delivery-fixture.ts';
import { expectEnvelope, detailFields } from '../testing/expect-envelope.ts';
import { startHttpsReceiver, type TestReceiver } from '../testing/https-receiver.ts';
import type { TestOrg } from '../testing/test-service.ts';

/**
 * POST /api/webhooks/test against real HTTPS receivers (a test-made certificate, the URL rules, the
 * engine's sender): the ping is signed so verifyWebhook accepts it, the example receiver answers it and
 * acts on nothing, failures come back as the attempt, and nothing is stored or counted.
 */
let f: DeliveryFixture;
let org: TestOrg;
let receiver: TestReceiver;

beforeAll(async () => {
  f = await startDeliveryFixture({ queue: 'memory' });
  org = await f.t.createOrg();
  receiver = await startHttpsReceiver(f.cert);
});
afterAll(async () => {
  await receiver?.close();
  await f?.stop();
});

async function createEndpoint(port: number, key = org.key): Promise<{ id: string; secret: string }> {
  const created = await f.t.call('POST', '/api/webhooks/create', { key, body: { label: 'ping me', url: `https://${RECEIVER_HOST}:${port}/hook` } });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return { id: created.body.id, secret: created.body.secret };
}

const ping = (endpointId: string, key = org.key) => f.t.call('POST', '/api/webhooks/test', { key, body: { endpointId } });

describe('POST /api/webhooks/test', () => {
  it('delivers a signed ping that verifyWebhook accepts, and answers its attempt', async () => {
    const endpoint = await createEndpoint(receiver.port);
    receiver.answer(() => ({ status: 200, body: 'pong' }));
    const before = receiver.requests.length;
    const response = await ping(endpoint.id);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    const attempt = DeliveryAttemptSchema.parse(response.body);
    expect(attempt).toMatchObject({ commandId: PING_COMMAND_ID, endpointId: endpoint.id, eventType: 'ping', attempt: 1, statusCode: 200, response: 'pong', error: null });
    expect(attempt.endpointUrl).toBe(`https://${RECEIVER_HOST}:${receiver.port}/hook`);

    const [request] = receiver.requests.slice(before);
    expect(receiver.requests.length - before).toBe(1);
    expect(request!.headers[WEBHOOK_HEADERS.event.toLowerCase()]).toBe('ping');
    expect(request!.headers[WEBHOOK_HEADERS.delivery.toLowerCase()]).toBe(attempt.deliveryId);
    const verified = await verifyWebhook(new Uint8Array(request!.rawBody), request!.headers, endpoint.secret);
    const body = PingBodySchema.parse(verified.body);
    expect(body.endpoint).toEqual({ id: endpoint.id, organizationId: org.organizationId });
    expect(Object.keys(body).sort()).toEqual(['endpoint', 'eventType', 'sentAt']);
  });

  it('signs with both secrets during a rotation overlap', async () => {
    const endpoint = await createEndpoint(receiver.port);
    const rotated = await f.t.call('POST', '/api/webhooks/rotate', { key: org.key, body: { id: endpoint.id, overlapSeconds: 600 } });
    expect(rotated.status).toBe(200);
    const before = receiver.requests.length;
    expect((await ping(endpoint.id)).body.statusCode).toBe(200);
    const request = receiver.requests[before]!;
    await verifyWebhook(new Uint8Array(request.rawBody), request.headers, endpoint.secret);
    await verifyWebhook(new Uint8Array(request.rawBody), request.headers, rotated.body.secret as string);
  });

  it('the example receiver answers a ping 200 and acts on nothing, acks nothing, journals nothing', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'sortie-ping-'));
    const journalPath = path.join(dir, 'journal.jsonl');
    const acted: string[] = [];
    const fetched: string[] = [];
    let example: WebhookReceiver | undefined;
    let server: Server | undefined;
    try {
      // The endpoint is made first (its secret is the receiver's), on a port reserved by listening.
      server = serveReceiver(
        { handle: (raw, headers) => example!.handle(raw, headers), idle: async () => {}, close: async () => {} },
        { cert: f.cert.cert, key: f.cert.key },
      );
      await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
      const endpoint = await createEndpoint((server.address() as AddressInfo).port);
      example = await createWebhookReceiver({
        secrets: [endpoint.secret],
        journalPath,
        act: async (command) => {
          acted.push(command.id);
          return { state: 'acked', detail: 'no' };
        },
        fetch: async (url) => {
          fetched.push(String(url));
          return new Response('{}');
        },
      });
      const response = await ping(endpoint.id);
      expect(response.body).toMatchObject({ statusCode: 200, response: 'pong', error: null });
      await example.idle();
      expect(acted).toEqual([]);
      expect(fetched).toEqual([]);
      expect(await readFile(journalPath, 'utf8')).toBe('');
    } finally {
      await example?.close();
      await new Promise((resolve) => server?.close(resolve));
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a failing receiver is still 200 with the failure in the attempt; pings are not stored and never disable the endpoint', async () => {
    const endpoint = await createEndpoint(receiver.port);
    receiver.answer(() => ({ status: 503, body: 'down for maintenance' }));
    try {
      for (let i = 0; i < 22; i++) {
        const response = await ping(endpoint.id);
        expect(response.status).toBe(200);
        expect(response.body).toMatchObject({ statusCode: 503, response: 'down for maintenance', error: 'receiver answered 503' });
      }
    } finally {
      receiver.answer(() => ({ status: 200, body: 'ok' }));
    }
    const listed = await f.t.call('GET', '/api/webhooks/list', { key: org.key });
    expect(listed.body.find((e: { id: string }) => e.id === endpoint.id)).toMatchObject({ disabledAt: null });
    const stored = await f.t.service.ctx.db.selectFrom('delivery_attempts').select('id').where('endpoint_id', '=', endpoint.id).execute();
    expect(stored).toEqual([]);
  });

  it('no answer and a refused address are statusCode 0 with the reason', async () => {
    const closed = await startHttpsReceiver(f.cert);
    const endpoint = await createEndpoint(closed.port);
    await closed.close();
    const unreachable = await ping(endpoint.id);
    expect(unreachable.status).toBe(200);
    expect(unreachable.body.statusCode).toBe(0);
    expect(unreachable.body.error).toBeTruthy();

    const refused = await createEndpoint(receiver.port);
    // The name now resolves outside SORTIE_WEBHOOK_ALLOW_CIDRS: the URL rules refuse before any connection.
    f.hosts[RECEIVER_HOST] = ['10.1.2.3'];
    try {
      const before = receiver.requests.length;
      const response = await ping(refused.id);
      expect(response.body.statusCode).toBe(0);
      expect(response.body.error).toMatch(/^refused by the URL rules: .*10\.1\.2\.3/);
      expect(receiver.requests.length).toBe(before);
    } finally {
      f.hosts[RECEIVER_HOST] = ['127.0.0.1'];
    }
  });

  it('unknown, deleted, foreign and disabled endpoints are refused in the envelope; bad bodies name endpointId', async () => {
    expectEnvelope(await ping(crypto.randomUUID()), 404, 'not_found');
    const deleted = await createEndpoint(receiver.port);
    expect((await f.t.call('POST', '/api/webhooks/delete', { key: org.key, body: { id: deleted.id } })).status).toBe(200);
    expectEnvelope(await ping(deleted.id), 404, 'not_found');
    const other = await f.t.createOrg('Other');
    const foreign = await createEndpoint(receiver.port, other.key);
    expectEnvelope(await ping(foreign.id), 404, 'not_found');

    const disabled = await createEndpoint(receiver.port);
    await f.t.service.ctx.db
      .updateTable('webhook_endpoints')
      .set({ disabled_at: new Date(), disabled_reason: '20 consecutive failed deliveries' })
      .where('id', '=', disabled.id)
      .execute();
    const refused = await ping(disabled.id);
    expectEnvelope(refused, 409, 'conflict');
    expect(refused.body.error.message).toContain('20 consecutive failed deliveries');

    for (const body of [{}, { endpointId: 'nope' }]) {
      const response = await f.t.call('POST', '/api/webhooks/test', { key: org.key, body });
      expectEnvelope(response, 400, 'invalid_request');
      expect(detailFields(response)).toEqual(['endpointId']);
    }
    const reader = await org.keyWith(['webhooks:read']);
    expectEnvelope(await ping(foreign.id, reader.apiKey), 403, 'insufficient_scope');
  });
});
