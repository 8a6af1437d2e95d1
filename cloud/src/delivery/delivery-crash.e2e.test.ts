import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SCOPES } from '@sortie/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueApiKey } from '../auth/api-keys.ts';
import { createOrganization } from '../auth/organizations.ts';
import { openDatabase, type DatabaseHandle } from '../db/connect.ts';
import { writeCommandWebhooksEnabled } from '../settings.ts';
import { eventually, newScenario, RECEIVER_HOST, startDeliveryFixture, verifiedBody } from '../testing/delivery-fixture.ts';
import { startHttpsReceiver, type TestReceiver } from '../testing/https-receiver.ts';
import { startServiceChild } from '../testing/service-child.ts';
import { dropDeliveryStream, startNatsServer, TEST_NATS_URL, uniqueNatsNamespace, type TestNatsServer } from '../testing/nats-server.ts';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.ts';
import { makeSelfSignedCertificate, type TestCertificate } from '../testing/tls.ts';

describe('the cloud killed with SIGKILL after a dispatch commits and before it publishes', () => {
  let testDb: TestDatabase;
  let database: DatabaseHandle;
  let cert: TestCertificate;
  let receiver: TestReceiver;
  let dataDir: string;
  const namespace = uniqueNatsNamespace();

  beforeAll(async () => {
    testDb = await createTestDatabase();
    cert = await makeSelfSignedCertificate([RECEIVER_HOST]);
    receiver = await startHttpsReceiver(cert);
    dataDir = await mkdtemp(path.join(tmpdir(), 'sortie-crash-'));
  });
  afterAll(async () => {
    await database?.close();
    await receiver?.close();
    await cert?.remove();
    await dropDeliveryStream(TEST_NATS_URL, namespace).catch(() => {});
    await testDb?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('the relay of the restarted process delivers the command', async () => {
    const env = {
      SORTIE_DATABASE_URL: testDb.url,
      SORTIE_DATA_DIR: dataDir,
      SORTIE_SECRET_KEY: Buffer.alloc(32, 9).toString('base64'),
      SORTIE_HTTP_PORT: '0',
      SORTIE_GRPC_PORT: '0',
      SORTIE_LOG_LEVEL: 'silent',
      SORTIE_NATS_URL: TEST_NATS_URL,
      SORTIE_NATS_NAMESPACE: namespace,
      SORTIE_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
      SORTIE_WEBHOOK_CA_FILE: cert.certFile,
      SORTIE_TEST_HOSTS: JSON.stringify({ [RECEIVER_HOST]: ['127.0.0.1'] }),
    };
    const first = await startServiceChild({ ...env, SORTIE_TEST_CRASH_AFTER_DISPATCH: '1' });
    database = await openDatabase({ url: testDb.url, dataDir });
    const db = database.db;
    const { organizationId, ownerUserId } = await createOrganization(db, 'crash test');
    const { apiKey } = await issueApiKey(db, { organizationId, userId: ownerUserId, scopes: [...SCOPES] });
    await writeCommandWebhooksEnabled(db, true, new Date());
    const call = async (base: string, p: string, body: unknown) => {
      const r = await fetch(base + p, { method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: r.status, body: (await r.json()) as any };
    };
    const endpoint = await call(first.url, '/api/webhooks/create', { label: 'r', url: `https://${RECEIVER_HOST}:${receiver.port}/hook` });
    expect(endpoint.status).toBe(201);
    const exp = await call(first.url, '/api/experiments/create', { name: 'crash' });
    const reg = await call(first.url, '/api/streams/register', { experimentId: exp.body.id, datasetName: 'vehicle', channels: [{ name: 'alt' }] });
    expect(reg, JSON.stringify(reg.body)).toMatchObject({ status: 201 });
    const armed = await call(first.url, '/api/datasets/arm', { datasetId: reg.body.datasetId, ttlSeconds: 3600 });
    expect(armed, JSON.stringify(armed.body)).toMatchObject({ status: 200 });
    const created = await call(first.url, '/api/commands/create', { experimentId: exp.body.id, datasetId: reg.body.datasetId, commandText: 'HOLD', relTime: 0 });
    expect(created.status).toBe(201);
    const commandId = created.body.id as string;

    // The dispatch commits, then the process dies before answering or publishing.
    await expect(call(first.url, '/api/commands/dispatch', { commandId })).rejects.toThrow();
    expect(await first.exited).toBe('SIGKILL');
    const job = await db.selectFrom('delivery_jobs').selectAll().where('command_id', '=', commandId).executeTakeFirstOrThrow();
    expect(job.published_at).toBeNull();
    expect(job.state).toBe('pending');
    const command = await db.selectFrom('commands').select('status').where('id', '=', commandId).executeTakeFirstOrThrow();
    expect(command.status).toBe('queued');
    expect(receiver.requests).toHaveLength(0);

    const second = await startServiceChild(env);
    try {
      const [req] = await receiver.waitForRequests(1, 20_000);
      const secret = endpoint.body.secret as string;
      expect((await verifiedBody(req!, secret)).command.id).toBe(commandId);
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
