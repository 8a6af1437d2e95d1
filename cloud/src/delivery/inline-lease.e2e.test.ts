import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setUpDispatchingOrg, startChildCloudFixture, type ChildCloudFixture } from '../testing/child-cloud-fixture.ts';
import { eventually } from '../testing/delivery-fixture.ts';
import { startHttpsReceiver, type TestReceiver } from '../testing/https-receiver.ts';
import { startServiceChild, type ServiceChild } from '../testing/service-child.ts';

/**
 * The first attempt is made by the dispatching process under a short lease taken in the dispatch
 * statement (commands/dispatch.ts). A receiver slower than that lease must still get one POST, not a
 * second one from the relay and a worker while the first is in flight: the engine extends the lease of
 * an attempt still running. On the real clock, in a child process, as deployed.
 */
describe('an attempt made at dispatch that outlasts its first lease', () => {
  let f: ChildCloudFixture;
  let receiver: TestReceiver;
  let cloud: ServiceChild;

  beforeAll(async () => {
    f = await startChildCloudFixture();
    receiver = await startHttpsReceiver(f.cert);
    cloud = await startServiceChild(f.env());
  });
  afterAll(async () => {
    cloud?.process.kill('SIGTERM');
    await cloud?.exited;
    await receiver?.close();
    await f?.close();
  });

  it('is sent once: its lease is extended while it runs', async () => {
    const org = await setUpDispatchingOrg(f, cloud.url, receiver.port, 'slow receiver');
    // 7 s: past the 5 s lease and the relay's 2 s grace, inside the 10 s time limit.
    receiver.answer(() => ({ status: 200, body: 'ok', delayMs: 7000 }));
    const created = await org.call(cloud.url, '/api/commands/create', { experimentId: org.experimentId, datasetId: org.datasetId, commandText: 'HOLD', relTime: 0 });
    const commandId = created.body.id as string;
    expect((await org.call(cloud.url, '/api/commands/dispatch', { commandId, ackTimeoutSeconds: 600 })).status).toBe(200);

    const db = f.database.db;
    const job = await eventually(
      async () => {
        const row = await db.selectFrom('delivery_jobs').selectAll().where('command_id', '=', commandId).executeTakeFirst();
        return row?.state === 'delivered' ? row : undefined;
      },
      20_000,
      'the job to be delivered',
    );
    expect(job.attempts).toBe(1);
    // Give a second copy, were one under way, the time to arrive.
    await new Promise((r) => setTimeout(r, 1500));
    expect(receiver.requests).toHaveLength(1);
  }, 40_000);
});
