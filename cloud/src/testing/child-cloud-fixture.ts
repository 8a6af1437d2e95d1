import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SCOPES } from '@sortie/contracts';
import { issueApiKey } from '../auth/api-keys.ts';
import { createOrganization } from '../auth/organizations.ts';
import { openDatabase, type DatabaseHandle } from '../db/connect.ts';
import { writeCommandWebhooksEnabled } from '../commands/settings.ts';
import { RECEIVER_HOST } from './delivery-fixture.ts';
import { dropDeliveryStream, TEST_NATS_URL, uniqueNatsNamespace } from './nats-server.ts';
import { createTestDatabase, type TestDatabase } from './test-database.ts';
import { makeSelfSignedCertificate, type TestCertificate } from './tls.ts';

/**
 * What tests of cloud child processes share (crash, restart, stream loss, replicas): a fresh database,
 * a NATS namespace of their own, a certificate for the receiver's name, a data dir, and the SORTIE_*
 * environment that points a child cloud (service-child.ts) at all of them.
 */
export interface ChildCloudFixture {
  testDb: TestDatabase;
  /** The test's own connection to that database; the children migrate it. */
  database: DatabaseHandle;
  cert: TestCertificate;
  namespace: string;
  /** The environment of a child cloud; `extra` adds settings or overrides these. */
  env(extra?: Record<string, string>): Record<string, string>;
  close(): Promise<void>;
}

/** `adminUrl`: another PostgreSQL server than the shared one (a test that restarts its own). */
export async function startChildCloudFixture(options: { adminUrl?: string } = {}): Promise<ChildCloudFixture> {
  const testDb = await createTestDatabase(options.adminUrl);
  const cert = await makeSelfSignedCertificate([RECEIVER_HOST]);
  const dataDir = await mkdtemp(path.join(tmpdir(), 'sortie-child-'));
  const namespace = uniqueNatsNamespace();
  const database = await openDatabase({ url: testDb.url, dataDir });
  const base = {
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
  return {
    testDb,
    database,
    cert,
    namespace,
    env: (extra = {}) => ({ ...base, ...extra }),
    close: async () => {
      await database.close();
      await cert.remove();
      await dropDeliveryStream(TEST_NATS_URL, namespace).catch(() => {});
      await testDb.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export interface DispatchingOrg {
  apiKey: string;
  /** The endpoint's signing secret. */
  secret: string;
  experimentId: string;
  datasetId: string;
  /** POST with the organization's key; the answer's status and JSON body. */
  call(base: string, p: string, body: unknown): Promise<{ status: number; body: any }>;
}

/**
 * An organization ready to dispatch through the cloud at `base`: command webhooks on, one endpoint on
 * the receiver at `receiverPort`, an armed dataset. Throws on any unexpected answer.
 */
export async function setUpDispatchingOrg(f: ChildCloudFixture, base: string, receiverPort: number, name: string): Promise<DispatchingOrg> {
  const db = f.database.db;
  const { organizationId, ownerUserId } = await createOrganization(db, name);
  const { apiKey } = await issueApiKey(db, { organizationId, userId: ownerUserId, scopes: [...SCOPES] });
  await writeCommandWebhooksEnabled(db, true, new Date());
  const call: DispatchingOrg['call'] = async (b, p, body) => {
    const r = await fetch(b + p, { method: 'POST', headers: { 'x-api-key': apiKey, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return { status: r.status, body: (await r.json()) as any };
  };
  const expect = async (p: string, body: unknown, status: number) => {
    const answer = await call(base, p, body);
    if (answer.status !== status) throw new Error(`${p}: expected ${status}, got ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body;
  };
  const endpoint = await expect('/api/webhooks/create', { label: name, url: `https://${RECEIVER_HOST}:${receiverPort}/hook` }, 201);
  const exp = await expect('/api/experiments/create', { name }, 201);
  const reg = await expect('/api/streams/register', { experimentId: exp.id, datasetName: 'vehicle', channels: [{ name: 'alt' }] }, 201);
  await expect('/api/datasets/arm', { datasetId: reg.datasetId, ttlSeconds: 3600 }, 200);
  return { apiKey, secret: endpoint.secret, experimentId: exp.id, datasetId: reg.datasetId, call };
}
