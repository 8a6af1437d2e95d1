// The real cloud for the uplink's end-to-end tests: SortieService on a fresh database of the real
// PostgreSQL, on free ports, with an organization, an all-scopes API key and an experiment. Unlike
// the cloud's own test service (cloud/src/testing/test-service.ts) it can be stopped and started again
// on the same ports and the same database, which is what an outage looks like from the agent.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { SortieService, createLogger, createOrganization, issueApiKey, loadConfig } from '@sortie/cloud';
import { createTestDatabase, readStoredSamples } from '@sortie/cloud/testing';
import type { TestDatabase } from '@sortie/cloud/testing';
import { SCOPES, TelemetryService } from '@sortie/contracts';

export interface CloudUnderTest {
  readonly httpUrl: string;
  readonly grpcUrl: string;
  readonly key: string;
  readonly experimentId: string;
  /** The running service (a new one after restart()). */
  readonly service: SortieService;
  /** HTTP call with the key. */
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  /** Stops listening and closes the database pool; the data stays. */
  stop(): Promise<void>;
  /** Starts again on the same ports and database. */
  start(): Promise<void>;
  /** Stops and drops the database. */
  destroy(): Promise<void>;
}

export async function startCloud(): Promise<CloudUnderTest> {
  const database: TestDatabase = await createTestDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), 'sortie-cloud-'));
  const env = (httpPort: number, grpcPort: number) => ({
    SORTIE_DATA_DIR: dataDir,
    SORTIE_HTTP_PORT: String(httpPort),
    SORTIE_GRPC_PORT: String(grpcPort),
    SORTIE_LOG_LEVEL: 'silent',
    SORTIE_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
    SORTIE_DATABASE_URL: database.url,
  });
  const boot = async (httpPort: number, grpcPort: number): Promise<SortieService> => {
    const s = await SortieService.create(loadConfig(env(httpPort, grpcPort)), { logger: createLogger('silent') });
    await s.start();
    return s;
  };
  let service: SortieService | null = await boot(0, 0);
  const httpPort = service.httpPort;
  const grpcPort = service.grpcPort;
  const httpUrl = `http://127.0.0.1:${httpPort}`;

  const db = service.ctx.db;
  const { organizationId, ownerUserId } = await createOrganization(db, 'Uplink Org');
  const { apiKey: key } = await issueApiKey(db, { organizationId, scopes: [...SCOPES], userId: ownerUserId });
  const call: CloudUnderTest['call'] = async (method, path, body) => {
    const response = await fetch(httpUrl + path, {
      method,
      headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };
  const experiment = await call('POST', '/api/experiments/create', { name: 'uplink e2e' });
  if (experiment.status !== 201 && experiment.status !== 200) throw new Error(`experiment: ${experiment.status} ${JSON.stringify(experiment.body)}`);

  const stop = async (): Promise<void> => {
    const s = service;
    service = null;
    await s?.destroy();
  };
  return {
    httpUrl,
    grpcUrl: `http://127.0.0.1:${grpcPort}`,
    key,
    experimentId: experiment.body.id as string,
    get service() {
      if (!service) throw new Error('the cloud is stopped');
      return service;
    },
    call,
    stop,
    async start() {
      if (service) return;
      service = await boot(httpPort, grpcPort);
    },
    async destroy() {
      await stop();
      await database.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Whether this cloud stores mavlink-raw-v1 streams yet: a header-only StreamSubmit to a narrow
 * dataset answers counts when it does, UNIMPLEMENTED (or FAILED_PRECONDITION) while the narrow sink
 * is missing. null when it does; else the reason, for a test's skip message.
 */
export async function narrowIngestMissing(cloud: CloudUnderTest): Promise<string | null> {
  const registered = await cloud.call('POST', '/api/streams/register', {
    experimentId: cloud.experimentId,
    datasetName: 'capability-probe',
    storageShape: 'narrow',
    codec: 'mavlink',
    dialect: 'ardupilotmega',
    format: 'mavlink-raw-v1',
  });
  if (registered.status >= 300) return `POST /api/streams/register of a narrow dataset answered ${registered.status} ${JSON.stringify(registered.body)}`;
  const client = createClient(TelemetryService, createGrpcTransport({ baseUrl: cloud.grpcUrl }));
  async function* header() {
    yield { message: { case: 'header' as const, value: { experimentId: cloud.experimentId, datasetId: registered.body.datasetId as string, format: 'mavlink-raw-v1' } } };
  }
  try {
    await client.streamSubmit(header(), { headers: { 'x-api-key': cloud.key }, timeoutMs: 10_000 });
    return null;
  } catch (error) {
    const e = ConnectError.from(error);
    if (e.code === Code.Unimplemented || e.code === Code.FailedPrecondition) {
      return `the cloud does not store mavlink-raw-v1 streams yet (StreamSubmit answered ${Code[e.code]}: ${e.rawMessage})`;
    }
    throw error;
  }
}

export interface NarrowCounts {
  /** Samples (one per decoded field of a frame). */
  readonly rows: number;
  /** Distinct frames stored (distinct frame_seq). */
  readonly frames: number;
  readonly minSeq: number | null;
  readonly maxSeq: number | null;
}

/**
 * Samples and distinct frames of a narrow dataset, from every stored sample (readStoredSamples reads
 * the dataset's message tables, one row per frame keyed by frame_seq). Exactly once = every frame_seq
 * present, and as many samples as one clean delivery wrote: a redelivery under the same frame_seq can
 * only collapse, a frame stored under another seq would add samples.
 */
export async function narrowCounts(cloud: CloudUnderTest, datasetId: string): Promise<NarrowCounts> {
  const samples = await readStoredSamples(cloud.service.ctx.db, datasetId);
  const seqs = new Set(samples.map((s) => s.frameSeq));
  const sorted = [...seqs].sort((a, b) => a - b);
  return { rows: samples.length, frames: seqs.size, minSeq: sorted[0] ?? null, maxSeq: sorted[sorted.length - 1] ?? null };
}
