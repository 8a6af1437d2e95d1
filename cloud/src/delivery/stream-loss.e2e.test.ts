import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SCOPES } from '@sortie/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueApiKey } from '../auth/api-keys.ts';
import { createOrganization } from '../auth/organizations.ts';
import { openDatabase, type DatabaseHandle } from '../db/connect.ts';
import { writeCommandWebhooksEnabled } from '../settings.ts';
import { eventually, RECEIVER_HOST, verifiedBody } from '../testing/delivery-fixture.ts';
import { startHttpsReceiver, type TestReceiver } from '../testing/https-receiver.ts';
import { dropDeliveryStream, TEST_NATS_URL, uniqueNatsNamespace } from '../testing/nats-server.ts';
import { startServiceChild } from '../testing/service-child.ts';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.ts';
import { makeSelfSignedCertificate, type TestCertificate } from '../testing/tls.ts';

// NATS restarted without its storage (a lost volume): the messages of jobs already published are gone,
// and only Postgres knows those jobs. The next start finds the stream missing and hands them to the relay.
describe('the delivery stream lost with NATS storage', () => {
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
    dataDir = await mkdtemp(path.join(tmpdir(), 'sortie-stream-loss-'));
  });
  afterAll(async () => {
    await database?.close();
    await receiver?.close();
    await cert?.remove();
    await dropDeliveryStream(TEST_NATS_URL, namespace).catch(() => {});
    await testDb?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('a job published before the loss is published again and delivered after the restart', async () => {
    const env = {
      SORTIE_DATABASE_URL: testDb.url,
      SORTIE_DATA_DIR: dataDir,
      SORTIE_SECRET_KEY: Buffer.alloc(32, 4).toString('base64'),
      SORTIE_HTTP_PORT: '0',
      SORTIE_GRPC_PORT: '0',
      SORTIE_LOG_LEVEL: 'silent',
      SORTIE_NATS_URL: TEST_NATS_URL,
      SORTIE_NATS_NAMESPACE: namespace,
      SORTIE_WEBHOOK_ALLOW_CIDRS: '127.0.0.0/8',
      SORTIE_WEBHOOK_CA_FILE: cert.certFile,
      // After the first failure the job's message waits in JetStream far longer than this test runs.
      SORTIE_WEBHOOK_RETRY_SCHEDULE: '10m',
      SORTIE_TEST_HOSTS: JSON.stringify({ [RECEIVER_HOST]: ['127.0.0.1'] }),
    };
    receiver.answer(() => ({ status: 503, body: 'down for maintenance' }));
    const first = await startServiceChild(env);
    database = await openDatabase({ url: testDb.url, dataDir });
    const db = database.db;
    const { organizationId, ownerUserId } = await createOrganization(db, 'stream loss');
    const { apiKey } = await issueApiKey(db, { organizationId, userId: ownerUserId, scopes: [...SCOPES] });
    await writeCommandWebhooksEnabled(db, true, new Date());
    const call = async (base: string, p: string, body: unknown) => {
      const r = await fetch(base + p, { method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: r.status, body: (await r.json()) as any };
    };
    const endpoint = await call(first.url, '/api/webhooks/create', { label: 'r', url: `https://${RECEIVER_HOST}:${receiver.port}/hook` });
    const exp = await call(first.url, '/api/experiments/create', { name: 'stream loss' });
    const reg = await call(first.url, '/api/streams/register', { experimentId: exp.body.id, datasetName: 'vehicle', channels: [{ name: 'alt' }] });
    await call(first.url, '/api/datasets/arm', { datasetId: reg.body.datasetId, ttlSeconds: 3600 });
    const created = await call(first.url, '/api/commands/create', { experimentId: exp.body.id, datasetId: reg.body.datasetId, commandText: 'HOLD', relTime: 0 });
    const commandId = created.body.id as string;
    const dispatched = await call(first.url, '/api/commands/dispatch', { commandId, ackTimeoutSeconds: 3600 });
    expect(dispatched.status, JSON.stringify(dispatched.body)).toBe(200);

    // One failed attempt; the job is published, pending, and its message waits for the retry.
    await receiver.waitForRequests(1);
    const job = await eventually(async () => {
      const row = await db.selectFrom('delivery_jobs').selectAll().where('command_id', '=', commandId).executeTakeFirstOrThrow();
      return row.attempts === 1 && row.leased_until === null ? row : undefined;
    });
    expect(job.state).toBe('pending');
    expect(job.published_at).not.toBeNull();

    first.process.kill('SIGTERM');
    await first.exited;
    await dropDeliveryStream(TEST_NATS_URL, namespace);
    receiver.answer(() => ({ status: 200, body: 'ok' }));

    const second = await startServiceChild(env);
    try {
      const [, retried] = await receiver.waitForRequests(2, 20_000);
      expect((await verifiedBody(retried!, endpoint.body.secret as string)).command.id).toBe(commandId);
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
