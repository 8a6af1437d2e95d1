import { verifyWebhook, type CommandDispatchedBody } from '@sortie/contracts';
import { writeCommandWebhooksEnabled } from '../commands/settings.ts';
import { tableResolver } from './table-resolver.ts';
import { startHttpsReceiver, type ReceivedRequest, type TestReceiver } from './https-receiver.ts';
import { freePort, TEST_NATS_URL, uniqueNatsNamespace } from './nats-server.ts';
import { startTestService, type TestOrg, type TestService } from './test-service.ts';
import { makeSelfSignedCertificate, type TestCertificate } from './tls.ts';

/** The receiver's name; the test resolver answers it (loopback unless a test changes `hosts`). */
export const RECEIVER_HOST = 'receiver.test';

/**
 * Everything an end-to-end delivery test needs: the real service (Postgres + JetStream unless
 * `queue: 'memory'`; `embedded` runs on PGlite as `npm start` does), a real HTTPS receiver with a certificate made for this run, and a DNS table.
 */
export interface DeliveryFixture {
  t: TestService;
  cert: TestCertificate;
  /** name → addresses; tests may change it between registration and delivery. */
  hosts: Record<string, string[]>;
  natsNamespace: string;
  stop(): Promise<void>;
}

export async function startDeliveryFixture(
  options: { queue?: 'jetstream' | 'memory'; embedded?: boolean; natsUrl?: string; env?: Record<string, string> } = {},
): Promise<DeliveryFixture> {
  const cert = await makeSelfSignedCertificate([RECEIVER_HOST]);
  const hosts: Record<string, string[]> = { [RECEIVER_HOST]: ['127.0.0.1'] };
  const resolver = tableResolver(hosts);
  const natsNamespace = uniqueNatsNamespace();
  // A port known before start, so ack.url in deliveries points at this very service.
  const httpPort = await freePort();
  const t = await startTestService({
    resolver,
    embedded: options.embedded ?? false,
    env: {
      ...((options.queue ?? 'jetstream') === 'jetstream' && { SORTIE_NATS_URL: options.natsUrl ?? TEST_NATS_URL }),
      SORTIE_NATS_NAMESPACE: natsNamespace,
      SORTIE_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32',
      SORTIE_WEBHOOK_CA_FILE: cert.certFile,
      SORTIE_WEBHOOK_RETRY_SCHEDULE: '50ms',
      SORTIE_WEBHOOK_TIMEOUT_MS: '3000',
      SORTIE_HTTP_PORT: String(httpPort),
      SORTIE_PUBLIC_URL: `http://127.0.0.1:${httpPort}`,
      ...options.env,
    },
  });
  await writeCommandWebhooksEnabled(t.service.ctx.db, true, new Date());
  return {
    t,
    cert,
    hosts,
    natsNamespace,
    stop: async () => {
      await t.stop();
      await cert.remove();
    },
  };
}

export interface Scenario {
  org: TestOrg;
  receiver: TestReceiver;
  endpointId: string;
  secret: string;
  experimentId: string;
  datasetId: string;
  /** Log a command and dispatch it; returns the command id. */
  dispatch(body?: Record<string, unknown>): Promise<string>;
  close(): Promise<void>;
}

/** A fresh organization with one HTTPS endpoint on its own receiver, an armed dataset and helpers. */
export async function newScenario(f: DeliveryFixture, options: { ackTimeoutSeconds?: number } = {}): Promise<Scenario> {
  const { t } = f;
  const org = await t.createOrg();
  const receiver = await startHttpsReceiver(f.cert);
  const endpoint = await t.call('POST', '/api/webhooks/create', {
    key: org.key,
    body: { label: 'test receiver', url: `https://${RECEIVER_HOST}:${receiver.port}/hook` },
  });
  if (endpoint.status !== 201) throw new Error(`endpoint create: ${endpoint.status} ${JSON.stringify(endpoint.body)}`);
  const exp = await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'delivery' } });
  const reg = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId: exp.body.id, datasetName: 'vehicle', channels: [{ name: 'alt' }] },
  });
  const datasetId = reg.body.datasetId as string;
  const armed = await t.call('POST', '/api/datasets/arm', { key: org.key, body: { datasetId, ttlSeconds: 3600 } });
  if (armed.status !== 200) throw new Error(`arm: ${armed.status} ${JSON.stringify(armed.body)}`);
  const dispatch = async (body: Record<string, unknown> = {}) => {
    const created = await t.call('POST', '/api/commands/create', {
      key: org.key,
      body: { experimentId: exp.body.id, datasetId, commandText: 'RTL', args: { altitude: 30 }, relTime: 1, ...body },
    });
    if (created.status !== 201) throw new Error(`create: ${created.status} ${JSON.stringify(created.body)}`);
    const dispatched = await t.call('POST', '/api/commands/dispatch', {
      key: org.key,
      body: { commandId: created.body.id, ackTimeoutSeconds: options.ackTimeoutSeconds ?? 600 },
    });
    if (dispatched.status !== 200) throw new Error(`dispatch: ${dispatched.status} ${JSON.stringify(dispatched.body)}`);
    return created.body.id as string;
  };
  return {
    org,
    receiver,
    endpointId: endpoint.body.id,
    secret: endpoint.body.secret,
    experimentId: exp.body.id,
    datasetId,
    dispatch,
    close: () => receiver.close(),
  };
}

/** What a receiver does first: verify over the raw bytes, then parse. */
export async function verifiedBody(req: ReceivedRequest, secrets: string | string[]): Promise<CommandDispatchedBody> {
  const verified = await verifyWebhook(new Uint8Array(req.rawBody), req.headers, secrets);
  return verified.body as CommandDispatchedBody;
}

/** Poll until `check` returns a value that is not undefined. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 15_000, what = 'condition'): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
