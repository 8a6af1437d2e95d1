import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport } from '@connectrpc/connect-node';
import { SCOPES, TelemetryService, type StreamSubmitRequestSchema, type TelemetryPointSchema } from '@sortie/contracts';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueApiKey } from '../auth/api-keys.ts';
import { createOrganization } from '../auth/organizations.ts';
import { wideTableName } from '../datasets/wide-table.ts';
import { openDatabase } from '../db/connect.ts';
import { createHttpApp } from '../service/app.ts';
import { eventually } from '../testing/delivery-fixture.ts';
import { startServiceChild, type ServiceChild } from '../testing/service-child.ts';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.ts';
import { startTestService, type TestService } from '../testing/test-service.ts';
import { GRPC_LIMITS } from './rpc/limits.ts';

/**
 * The gRPC port under SortieService.destroy (and SIGTERM): unary calls in flight finish OK, open
 * StreamSubmit calls write what they hold and end UNAVAILABLE, new calls are refused.
 */

type Message = MessageInitShape<typeof StreamSubmitRequestSchema>;
type Point = MessageInitShape<typeof TelemetryPointSchema>;

const T0_US = 1_800_000_000_000_000;
/** Point `i` of a test: channel 0, its own microsecond, the value i. */
function point(i: number): Point {
  const us = T0_US + i * 1000;
  return { channelId: '0', timestamp: { seconds: BigInt(Math.floor(us / 1e6)), nanos: (us % 1e6) * 1000 }, type: { case: 'double', value: i } };
}

async function rowsOf(client: pg.Client, datasetId: string): Promise<number[]> {
  const r = await client.query<{ v: number }>(`select ch_0 as v from ${wideTableName(datasetId)} order by time`);
  return r.rows.map((row) => row.v);
}

async function registerDataset(base: string, key: string, experimentId: string, name: string): Promise<string> {
  const r = await fetch(`${base}/api/streams/register`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ experimentId, datasetName: name, channels: [{ name: 'value', unit: '' }] }),
  });
  expect(r.status).toBe(201);
  return ((await r.json()) as { datasetId: string }).datasetId;
}

async function createExperiment(base: string, key: string): Promise<string> {
  const r = await fetch(`${base}/api/experiments/create`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'shutdown' }),
  });
  expect(r.status).toBe(201);
  return ((await r.json()) as { id: string }).id;
}

function asConnectError(error: unknown): ConnectError {
  expect(error).toBeInstanceOf(ConnectError);
  return error as ConnectError;
}

describe('destroy with calls in flight', () => {
  let t: TestService;
  let key: string;
  let experimentId: string;
  let db: pg.Client;

  beforeAll(async () => {
    t = await startTestService();
    key = (await t.createOrg()).key;
    experimentId = await createExperiment(t.url, key);
    db = new pg.Client({ connectionString: t.service.ctx.config.databaseUrl });
    await db.connect();
  });
  afterAll(async () => {
    await db?.end();
    await t?.stop();
  });

  it('writes what an open stream received, ends it UNAVAILABLE, finishes unary calls in flight, refuses new ones', async () => {
    const streamed = await registerDataset(t.url, key, experimentId, 'streamed');
    const submitted = await registerDataset(t.url, key, experimentId, 'submitted');
    const limits = GRPC_LIMITS as { streamFlushMs: number };
    const flushMs = limits.streamFlushMs;
    // Single points stay staged until shutdown: only the 1,000-point flush writes before it.
    limits.streamFlushMs = 60_000;
    let releaseStream!: () => void;
    const streamOpen = new Promise<void>((resolve) => (releaseStream = resolve));
    const blocker = new pg.Client({ connectionString: t.service.ctx.config.databaseUrl });
    try {
      const grpc = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
      async function* stream(): AsyncGenerator<Message> {
        yield { message: { case: 'header', value: { experimentId, datasetId: streamed } } };
        for (let i = 0; i < 1500; i++) yield { message: { case: 'point', value: point(i) } };
        await streamOpen; // open, not half-closed: only the server can end it
      }
      const streaming = grpc.streamSubmit(stream(), { headers: { 'x-api-key': key } }).then(
        () => {
          throw new Error('the stream was answered OK');
        },
        (error: unknown) => asConnectError(error),
      );
      await eventually(async () => ((await rowsOf(db, streamed)).length === 1000 ? true : undefined), 10_000, 'the first 1,000 points');
      // The other 500 were sent in the same burst; give the server a moment to stage them all.
      await new Promise((r) => setTimeout(r, 300));
      expect(await rowsOf(db, streamed)).toHaveLength(1000);

      // Unary calls over gRPC (HTTP/2) and Connect (HTTP/1.1), held in flight by a lock on their table.
      await blocker.connect();
      await blocker.query('begin');
      await blocker.query(`lock table ${wideTableName(submitted)} in access exclusive mode`);
      const connect = createClient(TelemetryService, createConnectTransport({ baseUrl: t.service.grpcUrl, httpVersion: '1.1' }));
      const h2Unary = grpc.submit({ datasetId: submitted, points: [point(0), point(1)] }, { headers: { 'x-api-key': key } });
      const h1Unary = connect.submit({ datasetId: submitted, points: [point(2)] }, { headers: { 'x-api-key': key } });
      await eventually(
        async () => {
          const r = await blocker.query<{ n: number }>(`select count(*)::int as n from pg_locks where not granted and relation = '${wideTableName(submitted)}'::regclass`);
          return r.rows[0]!.n === 2 ? true : undefined;
        },
        10_000,
        'both Submits waiting on the lock',
      );

      const destroyed = t.service.destroy();
      // From the first moment of shutdown, load balancers are told to go elsewhere; liveness holds.
      const app = createHttpApp(t.service.ctx);
      const ready = await app.request('/readyz');
      expect(ready.status).toBe(503);
      expect(await ready.json()).toEqual({ status: 'not_ready', reason: 'shutting_down' });
      expect((await app.request('/healthz')).status).toBe(200);
      const ended = await streaming;
      expect(ended.code).toBe(Code.Unavailable);
      expect(ended.rawMessage).toBe('server shutting down');
      // Nothing the server had received is lost: the staged 500 were written before the answer.
      expect(await rowsOf(db, streamed)).toEqual(Array.from({ length: 1500 }, (_, i) => i));

      // Closing now: a new call on the open HTTP/2 connection, and on a new connection, is refused.
      const refusedOnSession = await grpc.query({ datasetId: streamed }, { headers: { 'x-api-key': key } }).then(
        () => undefined,
        (error: unknown) => asConnectError(error),
      );
      expect(refusedOnSession?.code).toBe(Code.Unavailable);
      const fresh = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
      const refusedNew = await fresh.submit({ datasetId: submitted, points: [point(9)] }, { headers: { 'x-api-key': key } }).then(
        () => undefined,
        (error: unknown) => asConnectError(error),
      );
      expect(refusedNew?.code).toBe(Code.Unavailable);

      // The calls in flight are still being served: let them write.
      await blocker.query('commit');
      expect((await h2Unary).written).toBe(2n);
      expect((await h1Unary).written).toBe(1n);
      await destroyed;
      expect(await rowsOf(db, submitted)).toEqual([0, 1, 2]);
    } finally {
      limits.streamFlushMs = flushMs;
      releaseStream();
      await blocker.end().catch(() => {});
    }
  }, 60_000);
});

describe('SIGTERM to a cloud process during a StreamSubmit', () => {
  let testDb: TestDatabase;
  let dataDir: string;
  let env: Record<string, string>;
  const children: ServiceChild[] = [];

  beforeAll(async () => {
    testDb = await createTestDatabase();
    dataDir = await mkdtemp(path.join(tmpdir(), 'sortie-grpc-shutdown-'));
    env = {
      SORTIE_DATABASE_URL: testDb.url,
      SORTIE_DATA_DIR: dataDir,
      SORTIE_SECRET_KEY: Buffer.alloc(32, 3).toString('base64'),
      SORTIE_HTTP_PORT: '0',
      SORTIE_GRPC_PORT: '0',
      SORTIE_LOG_LEVEL: 'info',
      SORTIE_SHUTDOWN_GRACE_SECONDS: '20',
    };
  });
  afterAll(async () => {
    for (const child of children) if (child.process.exitCode === null) child.process.kill('SIGKILL');
    await testDb?.drop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('exits 0; the stream ends UNAVAILABLE with every point it received written, and a resend completes the data', async () => {
    const first = await startServiceChild(env);
    children.push(first);
    const database = await openDatabase({ url: testDb.url, dataDir });
    let key: string;
    try {
      const { organizationId, ownerUserId } = await createOrganization(database.db, 'sigterm');
      key = (await issueApiKey(database.db, { organizationId, userId: ownerUserId, scopes: [...SCOPES] })).apiKey;
    } finally {
      await database.close();
    }
    const experimentId = await createExperiment(first.url, key);
    const datasetId = await registerDataset(first.url, key, experimentId, 'd');
    const db = new pg.Client({ connectionString: testDb.url });
    await db.connect();
    try {
      // Single points as a rig sends them, paced so that some are always staged on the server.
      let sent = 0;
      let stop = false;
      async function* stream(): AsyncGenerator<Message> {
        yield { message: { case: 'header', value: { experimentId, datasetId } } };
        while (!stop) {
          yield { message: { case: 'point', value: point(sent) } };
          sent++;
          if (sent % 20 === 0) await new Promise((r) => setTimeout(r, 1));
        }
      }
      const grpc = createClient(TelemetryService, createGrpcTransport({ baseUrl: first.grpcUrl }));
      const streaming = grpc.streamSubmit(stream(), { headers: { 'x-api-key': key } }).then(
        () => {
          throw new Error('the stream was answered OK');
        },
        (error: unknown) => asConnectError(error),
      );
      await eventually(async () => ((await rowsOf(db, datasetId)).length >= 2000 ? true : undefined), 20_000, '2,000 points written');
      first.process.kill('SIGTERM');
      const ended = await streaming;
      stop = true;
      expect(await first.exited).toBe(0);
      expect(ended.code).toBe(Code.Unavailable);
      expect(ended.rawMessage).toBe('server shutting down');
      const written = await rowsOf(db, datasetId);
      // In order and without a gap: what the server took off the stream was written.
      expect(written).toEqual(Array.from({ length: written.length }, (_, i) => i));
      expect(written.length).toBeGreaterThanOrEqual(2000);
      expect(first.logs('gRPC: calls in flight finished; listener closed')).toHaveLength(1);
      expect(first.logs('shutdown: complete')).toHaveLength(1);

      // The client had no answer, so it sends the session again; what was written collapses onto its rows.
      const second = await startServiceChild(env);
      children.push(second);
      try {
        const total = sent;
        async function* again(): AsyncGenerator<Message> {
          yield { message: { case: 'header', value: { experimentId, datasetId } } };
          for (let i = 0; i < total; i++) yield { message: { case: 'point', value: point(i) } };
        }
        const resent = await createClient(TelemetryService, createGrpcTransport({ baseUrl: second.grpcUrl })).streamSubmit(again(), {
          headers: { 'x-api-key': key },
        });
        expect(resent.duplicates).toBe(BigInt(written.length));
        expect(await rowsOf(db, datasetId)).toEqual(Array.from({ length: total }, (_, i) => i));
      } finally {
        second.process.kill('SIGTERM');
        expect(await second.exited).toBe(0);
      }
    } finally {
      await db.end();
    }
  }, 90_000);
});
