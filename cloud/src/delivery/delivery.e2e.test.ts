import { WEBHOOK_HEADERS, WEBHOOK_USER_AGENT, verifyWebhook } from '@sortie/contracts';
import { createSortieClient } from '@sortie/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, newScenario, startDeliveryFixture, verifiedBody, type DeliveryFixture, type Scenario } from '../testing/delivery-fixture.ts';
import { AUTO_DISABLE_AFTER_FAILURES } from './endpoint-health.ts';

/**
 * Dispatch → JetStream → worker → a real HTTPS receiver (certificate made for this run) → ack, on the
 * real Postgres and the real NATS.
 */

let f: DeliveryFixture;
beforeAll(async () => {
  f = await startDeliveryFixture();
});
afterAll(() => f?.stop());

async function deliveries(s: Scenario, commandId: string) {
  const r = await f.t.call('GET', `/api/webhooks/deliveries?commandId=${commandId}`, { key: s.org.key });
  expect(r.status).toBe(200);
  return r.body as Array<Record<string, any>>;
}

async function command(s: Scenario, commandId: string) {
  const r = await f.t.call('GET', `/api/commands/list?experimentId=${s.experimentId}&datasetId=${s.datasetId}`, { key: s.org.key });
  return (r.body as Array<Record<string, any>>).find((c) => c.id === commandId)!;
}

async function jobState(commandId: string) {
  return f.t.service.ctx.db.selectFrom('delivery_jobs').select(['state', 'finish_reason', 'attempts']).where('command_id', '=', commandId).executeTakeFirstOrThrow();
}

describe('one delivery, end to end', () => {
  it('create → arm → dispatch → one signed POST the receiver verifies → ack → acked, with the attempt listed', async () => {
    expect(f.t.service.delivery.queue.kind).toBe('jetstream');
    const s = await newScenario(f);
    try {
      const commandId = await s.dispatch({ clientToken: 'op-42' });
      const [req] = await s.receiver.waitForRequests(1);
      expect(req!.method).toBe('POST');
      expect(req!.headers['user-agent']).toBe(WEBHOOK_USER_AGENT);
      expect(req!.headers['content-type']).toBe('application/json');
      expect(req!.headers[WEBHOOK_HEADERS.event]).toBe('command.dispatched');
      const deliveryHeader = String(req!.headers[WEBHOOK_HEADERS.delivery]);
      expect(deliveryHeader).toMatch(/^[0-9a-f-]{36}\.1$/);

      const body = await verifiedBody(req!, s.secret);
      expect(body.eventType).toBe('command.dispatched');
      expect(body.command).toMatchObject({
        id: commandId,
        datasetId: s.datasetId,
        experimentId: s.experimentId,
        organizationId: s.org.organizationId,
        commandText: 'RTL',
        args: { altitude: 30 },
        destructive: false,
        clientToken: 'op-42',
      });
      expect(body.ack.token).toMatch(/^cak_/);
      expect(new URL(body.ack.url).pathname).toBe('/api/commands/ack');
      expect(Date.parse(body.arming.expiresAt)).toBeGreaterThan(Date.now());
      // The token proves itself: nothing about it is stored before it is spent.
      const stored = await f.t.service.ctx.db.selectFrom('ack_tokens').select('token_hash').where('command_id', '=', commandId).execute();
      expect(stored).toEqual([]);

      // The receiver acks through ack.url (the test service listens on a port chosen at start).
      const ack = await fetch(f.t.url + new URL(body.ack.url).pathname, {
        method: 'POST',
        headers: { authorization: `Bearer ${body.ack.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ commandId, state: 'acked', detail: 'RTL engaged' }),
      });
      expect(ack.status).toBe(200);

      // The receiver can ack before the sender has recorded its 200 (attempt records share statements,
      // waiting up to 20 ms for company), so the record is waited for; then it says everything at once.
      const record = await eventually(async () => {
        const r = await command(s, commandId);
        return r.deliveredAt !== null ? r : undefined;
      });
      expect(record.status).toBe('acked');
      expect(record.deliveredAt).not.toBeNull();
      expect(record.deliveryAttempts).toBe(1);
      const rows = await deliveries(s, commandId);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({
        commandId,
        endpointId: s.endpointId,
        endpointUrl: `https://receiver.test:${s.receiver.port}/hook`,
        eventType: 'command.dispatched',
        attempt: 1,
        statusCode: 200,
        response: 'ok',
        error: null,
        deliveryId: deliveryHeader,
      });
      expect(s.receiver.requests).toHaveLength(1);
    } finally {
      await s.close();
    }
  });

  it('a live follower of the dataset sees the command queued, then its delivery recorded, as each happens', async () => {
    const s = await newScenario(f);
    const abort = new AbortController();
    const seen: Array<Record<string, any>> = [];
    let opened = false;
    try {
      const follower = (async () => {
        for await (const update of createSortieClient({ baseUrl: f.t.url, apiKey: s.org.key }).telemetry.follow({ datasetId: s.datasetId }, { signal: abort.signal })) {
          opened = true;
          seen.push(...(update.commands as Array<Record<string, any>>));
        }
      })();
      await eventually(async () => (opened ? true : undefined));
      const commandId = await s.dispatch();
      await s.receiver.waitForRequests(1);
      // No acknowledgement: what the follower sees is the dispatch and the attempt's record alone.
      const delivered = await eventually(async () => seen.find((c) => c.id === commandId && c.deliveredAt !== null));
      expect(delivered).toMatchObject({ status: 'queued', deliveryAttempts: 1 });
      abort.abort();
      await follower;
    } finally {
      abort.abort();
      await s.close();
    }
  });

  it('a template marked destructive is sent as command.destructive', async () => {
    const s = await newScenario(f);
    try {
      const tpl = await f.t.call('POST', '/api/commands/templates/create', {
        key: s.org.key,
        body: { key: 'terminate', description: 'flight termination', destructive: true },
      });
      expect(tpl.status).toBe(201);
      await s.dispatch({ templateKey: 'terminate', commandText: 'TERMINATE', args: {} });
      const [req] = await s.receiver.waitForRequests(1);
      expect((await verifiedBody(req!, s.secret)).command.destructive).toBe(true);
    } finally {
      await s.close();
    }
  });
});

describe('outcomes', () => {
  it('500 three times then 200: four attempts, one success, delivery ids suffixed per attempt', async () => {
    const s = await newScenario(f);
    try {
      s.receiver.answer((_req, i) => (i < 3 ? { status: 500, body: 'boom' } : { status: 200, body: 'ok' }));
      const commandId = await s.dispatch();
      await s.receiver.waitForRequests(4);
      const rows = await eventually(async () => {
        const r = await deliveries(s, commandId);
        return r.length === 4 ? r : undefined;
      });
      expect(rows.map((r) => [r.attempt, r.statusCode])).toEqual([
        [4, 200],
        [3, 500],
        [2, 500],
        [1, 500],
      ]);
      expect(rows[1]!.response).toBe('boom');
      expect(rows[1]!.error).toBe('receiver answered 500');
      const ids = s.receiver.requests.map((r) => String(r.headers[WEBHOOK_HEADERS.delivery]));
      const stem = ids[0]!.slice(0, ids[0]!.lastIndexOf('.'));
      expect(ids).toEqual([1, 2, 3, 4].map((n) => `${stem}.${n}`));
      // Every attempt carries its own valid signature and a fresh ack token.
      const tokens = await Promise.all(s.receiver.requests.map(async (r) => (await verifiedBody(r, s.secret)).ack.token));
      expect(new Set(tokens).size).toBe(4);
      expect(await jobState(commandId)).toMatchObject({ state: 'delivered', attempts: 4 });
      const record = await command(s, commandId);
      expect(record.deliveryAttempts).toBe(4);
      expect(record.deliveredAt).not.toBeNull();
      await new Promise((r) => setTimeout(r, 300));
      expect(s.receiver.requests).toHaveLength(4);
    } finally {
      await s.close();
    }
  });

  it('400 is final: one attempt, no retry', async () => {
    const s = await newScenario(f);
    try {
      s.receiver.answer(() => ({ status: 400, body: 'bad command' }));
      const commandId = await s.dispatch();
      await s.receiver.waitForRequests(1);
      await eventually(async () => ((await jobState(commandId)).state === 'failed' ? true : undefined));
      await new Promise((r) => setTimeout(r, 400));
      expect(s.receiver.requests).toHaveLength(1);
      const rows = await deliveries(s, commandId);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ attempt: 1, statusCode: 400, response: 'bad command' });
      expect((await command(s, commandId)).deliveredAt).toBeNull();
    } finally {
      await s.close();
    }
  });

  it('a redirect is never followed and is final', async () => {
    const s = await newScenario(f);
    try {
      s.receiver.answer((req) => (req.path === '/hook' ? { status: 307, headers: { location: '/elsewhere' } } : { status: 200 }));
      const commandId = await s.dispatch();
      await eventually(async () => ((await jobState(commandId)).state === 'failed' ? true : undefined));
      expect(s.receiver.requests.map((r) => r.path)).toEqual(['/hook']);
      const [row] = await deliveries(s, commandId);
      expect(row).toMatchObject({ statusCode: 307, error: 'redirect not followed (Location: /elsewhere)' });
    } finally {
      await s.close();
    }
  });

  it('a receiver slower than the time limit is a failed attempt that is retried', async () => {
    const slow = await startDeliveryFixture({ env: { SORTIE_WEBHOOK_TIMEOUT_MS: '300' } });
    const s = await newScenario(slow);
    try {
      s.receiver.answer((_r, i) => (i === 0 ? { status: 200, delayMs: 1500 } : { status: 200, body: 'ok' }));
      const commandId = await s.dispatch();
      const rows = await eventually(async () => {
        const r = await slow.t.call('GET', `/api/webhooks/deliveries?commandId=${commandId}`, { key: s.org.key });
        return r.body.length === 2 ? (r.body as Array<Record<string, any>>) : undefined;
      });
      expect(rows[1]).toMatchObject({ attempt: 1, statusCode: 0, error: 'timed out after 300 ms' });
      expect(rows[0]).toMatchObject({ attempt: 2, statusCode: 200 });
    } finally {
      await s.close();
      await slow.stop();
    }
  });
});

describe('endpoint health', () => {
  it(`${AUTO_DISABLE_AFTER_FAILURES} consecutive failures disable the endpoint and notify the owners`, async () => {
    const s = await newScenario(f);
    try {
      s.receiver.answer(() => ({ status: 503, body: 'down' }));
      const commandId = await s.dispatch();
      const list = await eventually(async () => {
        const r = await f.t.call('GET', '/api/webhooks/list', { key: s.org.key });
        return r.body[0].disabledAt ? r.body : undefined;
      }, 30_000, 'the endpoint to be disabled');
      expect(list[0].disabledReason).toBe(`${AUTO_DISABLE_AFTER_FAILURES} consecutive failed delivery attempts`);
      await new Promise((r) => setTimeout(r, 300));
      expect(s.receiver.requests).toHaveLength(AUTO_DISABLE_AFTER_FAILURES);
      expect(await deliveries(s, commandId)).toHaveLength(AUTO_DISABLE_AFTER_FAILURES);
      expect(await jobState(commandId)).toMatchObject({ state: 'abandoned', finish_reason: 'endpoint disabled' });

      const notes = await f.t.call('GET', '/api/notifications', { key: s.org.key });
      expect(notes.status).toBe(200);
      expect(notes.body).toHaveLength(1);
      expect(notes.body[0]).toMatchObject({ kind: 'webhook.endpoint_disabled', data: { endpointId: s.endpointId } });
      expect(notes.body[0].subject).toContain('was disabled');

      // A disabled endpoint gets no further dispatch either.
      const again = await f.t.call('POST', '/api/commands/create', {
        key: s.org.key,
        body: { experimentId: s.experimentId, datasetId: s.datasetId, commandText: 'LAND', relTime: 2 },
      });
      const refused = await f.t.call('POST', '/api/commands/dispatch', { key: s.org.key, body: { commandId: again.body.id } });
      expect(refused.status).toBe(409);
    } finally {
      await s.close();
    }
  });

  it('a success resets the failure streak', async () => {
    const s = await newScenario(f);
    try {
      s.receiver.answer((_r, i) => (i < 15 ? { status: 500 } : { status: 200 }));
      const first = await s.dispatch();
      await eventually(async () => ((await jobState(first)).state === 'delivered' ? true : undefined), 20_000);
      s.receiver.answer((_r, i) => (i < 15 + 16 ? { status: 500 } : { status: 200 }));
      const second = await s.dispatch({ relTime: 3 });
      await eventually(async () => ((await jobState(second)).state === 'delivered' ? true : undefined), 20_000);
      const r = await f.t.call('GET', '/api/webhooks/list', { key: s.org.key });
      expect(r.body[0].disabledAt).toBeNull();
    } finally {
      await s.close();
    }
  });

  it('an endpoint deleted while a delivery is retrying gets no further attempt, and its history stays', async () => {
    const s = await newScenario(f);
    try {
      let deleted = false;
      s.receiver.answer(async (_r, i) => {
        if (i === 1 && !deleted) {
          deleted = true;
          const r = await f.t.call('POST', '/api/webhooks/delete', { key: s.org.key, body: { id: s.endpointId } });
          expect(r.status).toBe(200);
        }
        return { status: 500 };
      });
      const commandId = await s.dispatch();
      await eventually(async () => ((await jobState(commandId)).state === 'abandoned' ? true : undefined));
      await new Promise((r) => setTimeout(r, 400));
      expect(s.receiver.requests).toHaveLength(2);
      expect((await jobState(commandId)).finish_reason).toBe('endpoint deleted');
      const rows = await deliveries(s, commandId);
      expect(rows.map((r) => r.attempt)).toEqual([2, 1]);
      expect(rows[0]!.endpointUrl).toContain('receiver.test');
    } finally {
      await s.close();
    }
  });
});

describe('secrets and addresses', () => {
  it('during a rotation overlap two signatures, each verifying with its own secret; after the window only the new one', async () => {
    const s = await newScenario(f);
    try {
      const rotated = await f.t.call('POST', '/api/webhooks/rotate', { key: s.org.key, body: { id: s.endpointId, overlapSeconds: 60 } });
      expect(rotated.status).toBe(200);
      const newSecret = rotated.body.secret as string;
      await s.dispatch();
      const [during] = await s.receiver.waitForRequests(1);
      const values = String(during!.headers[WEBHOOK_HEADERS.signature]).split(',');
      expect(values).toHaveLength(2);
      for (const secret of [s.secret, newSecret]) {
        await expect(verifyWebhook(new Uint8Array(during!.rawBody), during!.headers, secret)).resolves.toBeDefined();
      }
      // Each value matches exactly one secret: drop one value and only its secret still verifies.
      const onlyFirst = { ...during!.headers, [WEBHOOK_HEADERS.signature]: values[0]! };
      await expect(verifyWebhook(new Uint8Array(during!.rawBody), onlyFirst, newSecret)).resolves.toBeDefined();
      await expect(verifyWebhook(new Uint8Array(during!.rawBody), onlyFirst, s.secret)).rejects.toThrow();

      f.t.clock.advance(61_000);
      await s.dispatch({ relTime: 5 });
      const [, after] = await s.receiver.waitForRequests(2);
      expect(String(after!.headers[WEBHOOK_HEADERS.signature]).split(',')).toHaveLength(1);
      await expect(verifyWebhook(new Uint8Array(after!.rawBody), after!.headers, newSecret, { now: () => f.t.clock.now().getTime() })).resolves.toBeDefined();
      await expect(verifyWebhook(new Uint8Array(after!.rawBody), after!.headers, s.secret, { now: () => f.t.clock.now().getTime() })).rejects.toThrow();
    } finally {
      await s.close();
    }
  });

  it('a name that resolved public at registration and private at delivery: the attempt is refused and recorded', async () => {
    const saved = f.hosts['receiver.test'];
    // Registration sees a public address (nothing connects at registration) ...
    f.hosts['receiver.test'] = ['93.184.216.34'];
    const s = await newScenario(f);
    try {
      // ... delivery sees loopback outside the allow-list (127.0.0.1/32 here), as a rebinding DNS server
      // would answer. Were the check skipped, the connection would still stay on this machine.
      f.hosts['receiver.test'] = ['127.0.0.2'];
      const commandId = await s.dispatch();
      const rows = await eventually(async () => {
        const r = await deliveries(s, commandId);
        return r.length >= 1 ? r : undefined;
      });
      expect(rows.at(-1)).toMatchObject({ attempt: 1, statusCode: 0 });
      expect(rows.at(-1)!.error).toMatch(/^refused by the URL rules: .*127\.0\.0\.2/);
      expect(s.receiver.requests).toHaveLength(0);
    } finally {
      f.hosts['receiver.test'] = saved!;
      await s.close();
    }
  });
});
