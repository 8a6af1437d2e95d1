import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTO_DISABLE_AFTER_FAILURES } from '../delivery/endpoint-health.ts';
import { eventually, newScenario, startDeliveryFixture, type DeliveryFixture } from '../testing/delivery-fixture.ts';

// What the webhooks list says of an endpoint's health, from real deliveries to a real HTTPS receiver: its
// failure streak, its latest attempt (status, time, error), and why it was disabled. An endpoint whose
// deliveries fail must not read as plainly "enabled".
let f: DeliveryFixture;
beforeAll(async () => {
  f = await startDeliveryFixture({ queue: 'memory' });
});
afterAll(() => f?.stop());

interface Listed {
  id: string;
  disabledAt: string | null;
  disabledReason: string | null;
  consecutiveFailures: number;
  lastAttempt: { at: string; statusCode: number; error: string | null; eventType: string } | null;
}

async function listed(key: string, id: string): Promise<Listed> {
  const response = await f.t.call('GET', '/api/webhooks/list', { key });
  expect(response.status).toBe(200);
  return (response.body as Listed[]).find((e) => e.id === id)!;
}

describe('GET /api/webhooks/list: endpoint health', () => {
  it('a new endpoint: no failures, no attempt yet; the streak grows with each failed attempt and a 2xx resets it', async () => {
    const s = await newScenario(f);
    try {
      expect(await listed(s.org.key, s.endpointId)).toMatchObject({ consecutiveFailures: 0, lastAttempt: null, disabledAt: null });
      // Three 503s, then a 202: the retries of one delivery.
      s.receiver.answer((_req, index) => ({ status: index < 3 ? 503 : 202 }));
      // The service runs on the fixture's manual clock, which stands still unless a test moves it: the
      // attempt is stamped with that clock's time, not the wall clock's.
      const before = f.t.clock.now().getTime();
      await s.dispatch();
      const failing = await eventually(async () => {
        const e = await listed(s.org.key, s.endpointId);
        return e.consecutiveFailures >= 2 ? e : undefined;
      }, 15_000, 'two failures in a row');
      expect(failing.lastAttempt).toMatchObject({ statusCode: 503, error: 'receiver answered 503', eventType: 'command.dispatched' });
      const healthy = await eventually(async () => {
        const e = await listed(s.org.key, s.endpointId);
        return e.lastAttempt?.statusCode === 202 ? e : undefined;
      }, 15_000, 'the delivery');
      expect(healthy.consecutiveFailures).toBe(0);
      expect(Date.parse(healthy.lastAttempt!.at)).toBeGreaterThanOrEqual(before);
      expect(s.receiver.requests).toHaveLength(4);
    } finally {
      await s.close();
    }
  });

  it('a receiver that never answers: the attempt says why (no HTTP status), and once disabled the list says why', async () => {
    const s = await newScenario(f);
    try {
      // Refuse the connection: the receiver's port is closed, so no HTTP answer ever comes.
      await s.receiver.close();
      await s.dispatch();
      const disabled = await eventually(async () => {
        const e = await listed(s.org.key, s.endpointId);
        return e.disabledAt ? e : undefined;
      }, 60_000, 'the endpoint to be disabled');
      expect(disabled.consecutiveFailures).toBe(AUTO_DISABLE_AFTER_FAILURES);
      expect(disabled.disabledReason).toBe(`${AUTO_DISABLE_AFTER_FAILURES} consecutive failed delivery attempts`);
      expect(disabled.lastAttempt).toMatchObject({ statusCode: 0, error: expect.stringMatching(/refused|ECONNREFUSED/i) });
    } finally {
      await s.close().catch(() => undefined);
    }
  });

  it('create, update and rotate answer the same fields', async () => {
    const s = await newScenario(f);
    try {
      const updated = await f.t.call('POST', '/api/webhooks/update', { key: s.org.key, body: { id: s.endpointId, label: 'renamed' } });
      expect(updated.body).toMatchObject({ consecutiveFailures: 0, lastAttempt: null });
      await s.dispatch();
      await eventually(async () => ((await listed(s.org.key, s.endpointId)).lastAttempt ? true : undefined), 15_000, 'an attempt');
      const rotated = await f.t.call('POST', '/api/webhooks/rotate', { key: s.org.key, body: { id: s.endpointId, overlapSeconds: 0 } });
      expect(rotated.body).toMatchObject({ consecutiveFailures: 0, lastAttempt: { statusCode: 200 } });
    } finally {
      await s.close();
    }
  });
});
