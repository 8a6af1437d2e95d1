import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setUpDispatchingOrg, startChildCloudFixture, type ChildCloudFixture } from '../testing/child-cloud-fixture.ts';
import { eventually, verifiedBody } from '../testing/delivery-fixture.ts';
import { startHttpsReceiver, type TestReceiver } from '../testing/https-receiver.ts';
import { dropDeliveryStream, TEST_NATS_URL } from '../testing/nats-server.ts';
import { startServiceChild } from '../testing/service-child.ts';

// NATS restarted without its storage (a lost volume): the messages of jobs already published are gone,
// and only Postgres knows those jobs. The next start finds the stream missing and hands them to the relay.
describe('the delivery stream lost with NATS storage', () => {
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

  it('a job published before the loss is published again and delivered after the restart', async () => {
    // After the first failure the job's message waits in JetStream far longer than this test runs.
    const env = f.env({ SORTIE_WEBHOOK_RETRY_SCHEDULE: '10m' });
    receiver.answer(() => ({ status: 503, body: 'down for maintenance' }));
    const first = await startServiceChild(env);
    const db = f.database.db;
    const org = await setUpDispatchingOrg(f, first.url, receiver.port, 'stream loss');
    const created = await org.call(first.url, '/api/commands/create', { experimentId: org.experimentId, datasetId: org.datasetId, commandText: 'HOLD', relTime: 0 });
    const commandId = created.body.id as string;
    const dispatched = await org.call(first.url, '/api/commands/dispatch', { commandId, ackTimeoutSeconds: 3600 });
    expect(dispatched.status, JSON.stringify(dispatched.body)).toBe(200);

    // One failed attempt; the job is published, pending, and its message waits for the retry.
    await receiver.waitForRequests(1);
    const job = await eventually(async () => {
      const row = await db.selectFrom('delivery_jobs').selectAll().where('command_id', '=', commandId).executeTakeFirstOrThrow();
      // The first attempt is made at dispatch; its retry is published right after it is recorded.
      return row.attempts === 1 && row.leased_until === null && row.published_at !== null ? row : undefined;
    });
    expect(job.state).toBe('pending');
    expect(job.published_at).not.toBeNull();

    first.process.kill('SIGTERM');
    await first.exited;
    await dropDeliveryStream(TEST_NATS_URL, f.namespace);
    receiver.answer(() => ({ status: 200, body: 'ok' }));

    const second = await startServiceChild(env);
    try {
      const [, retried] = await receiver.waitForRequests(2, 20_000);
      expect((await verifiedBody(retried!, org.secret)).command.id).toBe(commandId);
      const done = await eventually(async () => {
        const row = await db.selectFrom('delivery_jobs').selectAll().where('id', '=', job.id).executeTakeFirstOrThrow();
        return row.state === 'delivered' ? row : undefined;
      });
      expect(done.attempts).toBe(2);
      expect(receiver.requests).toHaveLength(2);
    } finally {
      second.process.kill('SIGTERM');
      await second.exited;
    }
  }, 60_000);
});
