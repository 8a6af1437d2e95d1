import { afterAll, beforeAll, expect, it } from 'vitest';
import { eventually, newScenario, startDeliveryFixture, verifiedBody, type DeliveryFixture } from '../testing/delivery-fixture.ts';

/** The embedded default (PGlite, no NATS): the in-process queue gives the same delivery and retries. */
let f: DeliveryFixture;
beforeAll(async () => {
  f = await startDeliveryFixture({ queue: 'memory', embedded: true });
});
afterAll(() => f?.stop());

it('delivers, retries a 500 and takes the ack, with no NATS and no Postgres server', async () => {
  expect(f.t.service.delivery.queue.kind).toBe('memory');
  expect(f.t.service.ctx.database.kind).toBe('pglite');
  const s = await newScenario(f);
  try {
    s.receiver.answer((_r, i) => (i === 0 ? { status: 500 } : { status: 202 }));
    const commandId = await s.dispatch();
    const [, second] = await s.receiver.waitForRequests(2);
    const body = await verifiedBody(second!, s.secret);
    const ack = await fetch(f.t.url + new URL(body.ack.url).pathname, {
      method: 'POST',
      headers: { authorization: `Bearer ${body.ack.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ commandId, state: 'nacked', detail: 'vehicle refused: not in the air' }),
    });
    expect(ack.status).toBe(200);
    const list = await eventually(async () => {
      const r = await f.t.call('GET', `/api/webhooks/deliveries?commandId=${commandId}`, { key: s.org.key });
      return r.body.length === 2 ? r.body : undefined;
    });
    expect(list.map((r: any) => r.statusCode)).toEqual([202, 500]);
    const cmds = await f.t.call('GET', `/api/commands/list?experimentId=${s.experimentId}&datasetId=${s.datasetId}`, { key: s.org.key });
    expect(cmds.body[0]).toMatchObject({ id: commandId, status: 'nacked', deliveryAttempts: 2 });
  } finally {
    await s.close();
  }
});
