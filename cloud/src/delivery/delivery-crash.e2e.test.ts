import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setUpDispatchingOrg, startChildCloudFixture, type ChildCloudFixture } from '../testing/child-cloud-fixture.ts';
import { eventually, newScenario, startDeliveryFixture, verifiedBody } from '../testing/delivery-fixture.ts';
import { startHttpsReceiver, type TestReceiver } from '../testing/https-receiver.ts';
import { startNatsServer, type TestNatsServer } from '../testing/nats-server.ts';
import { startServiceChild } from '../testing/service-child.ts';

describe('the cloud killed with SIGKILL after a dispatch commits and before it publishes', () => {
  let f: ChildCloudFixture;
  let receiver: TestReceiver;

  beforeAll(async () => {
    f = await startChildCloudFixture();
    receiver = await startHttpsReceiver(f.cert);
  });
  afterAll(async () => {
    await receiver?.close();
    await f?.close();
  });

  it('the relay of the restarted process delivers the command', async () => {
    const first = await startServiceChild(f.env({ SORTIE_TEST_CRASH_AFTER_DISPATCH: '1' }));
    const db = f.database.db;
    const org = await setUpDispatchingOrg(f, first.url, receiver.port, 'crash test');
    const created = await org.call(first.url, '/api/commands/create', { experimentId: org.experimentId, datasetId: org.datasetId, commandText: 'HOLD', relTime: 0 });
    expect(created.status).toBe(201);
    const commandId = created.body.id as string;

    // The dispatch commits, then the process dies before answering or publishing.
    await expect(org.call(first.url, '/api/commands/dispatch', { commandId })).rejects.toThrow();
    expect(await first.exited).toBe('SIGKILL');
    const job = await db.selectFrom('delivery_jobs').selectAll().where('command_id', '=', commandId).executeTakeFirstOrThrow();
    expect(job.published_at).toBeNull();
    expect(job.state).toBe('pending');
    const command = await db.selectFrom('commands').select('status').where('id', '=', commandId).executeTakeFirstOrThrow();
    expect(command.status).toBe('queued');
    expect(receiver.requests).toHaveLength(0);

    const second = await startServiceChild(f.env());
    try {
      const [req] = await receiver.waitForRequests(1, 20_000);
      expect((await verifiedBody(req!, org.secret)).command.id).toBe(commandId);
      const done = await eventually(async () => {
        const row = await db.selectFrom('delivery_jobs').selectAll().where('id', '=', job.id).executeTakeFirstOrThrow();
        return row.state === 'delivered' ? row : undefined;
      });
      expect(done.published_at).not.toBeNull();
      expect(receiver.requests).toHaveLength(1);
    } finally {
      second.process.kill('SIGTERM');
      await second.exited;
    }
  }, 60_000);
});

describe('NATS restarted during a run of dispatches', () => {
  let nats: TestNatsServer;
  beforeAll(async () => {
    nats = await startNatsServer();
  });
  afterAll(() => nats?.destroy());

  it('deliveries resume and no command is lost', async () => {
    const f = await startDeliveryFixture({ natsUrl: nats.url });
    const s = await newScenario(f);
    try {
      const before = await Promise.all(Array.from({ length: 10 }, (_, i) => s.dispatch({ relTime: i })));
      await s.receiver.waitForRequests(10);

      await nats.stop();
      // Dispatch keeps working while NATS is away: the outbox holds the jobs.
      const during = await Promise.all(Array.from({ length: 10 }, (_, i) => s.dispatch({ relTime: 100 + i })));
      await new Promise((r) => setTimeout(r, 1500));
      await nats.start();
      const after = await Promise.all(Array.from({ length: 10 }, (_, i) => s.dispatch({ relTime: 200 + i })));

      const all = [...before, ...during, ...after];
      await eventually(
        async () => {
          const states = await f.t.service.ctx.db.selectFrom('delivery_jobs').select('state').where('command_id', 'in', all).execute();
          return states.length === all.length && states.every((r) => r.state === 'delivered') ? true : undefined;
        },
        45_000,
        'every job to be delivered',
      );
      const received = new Set(
        await Promise.all(s.receiver.requests.map(async (r) => (await verifiedBody(r, s.secret)).command.id)),
      );
      for (const id of all) expect(received.has(id)).toBe(true);
    } finally {
      await s.close();
      await f.stop();
    }
  }, 90_000);
});
