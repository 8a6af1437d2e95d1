import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { TelemetryService, type StreamSubmitRequestSchema, type TelemetryPointSchema } from '@sortie/contracts';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wideTableName } from '../datasets/wide-table.ts';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';

let t: TestService;
let org: TestOrg;
let datasetId: string;
let experimentId: string;

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg();
  const experiment = await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'flow' } });
  experimentId = experiment.body.id;
  const registered = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId, datasetName: 'd', channels: Array.from({ length: 8 }, (_, i) => ({ name: `channel ${i}`, unit: '' })) },
  });
  datasetId = registered.body.datasetId;
});
afterAll(() => t?.stop());

type Message = MessageInitShape<typeof StreamSubmitRequestSchema>;

function batch(b: number): Message {
  const points: Array<MessageInitShape<typeof TelemetryPointSchema>> = [];
  for (let r = 0; r < 1000; r++) {
    const us = 1_780_000_000_000_000 + (b * 1000 + r) * 50;
    for (let c = 0; c < 8; c++) {
      points.push({ channelId: String(c), timestamp: { seconds: BigInt(Math.floor(us / 1e6)), nanos: (us % 1e6) * 1000 }, type: { case: 'double', value: r + c } });
    }
  }
  return { message: { case: 'batch', value: { points } } };
}

describe('StreamSubmit backpressure', () => {
  it('a stalled database stops the client through flow control instead of buffering its messages', async () => {
    const client = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
    const total = 200; // ~44 MB of batches
    let yielded = 0;
    async function* stream(): AsyncGenerator<Message> {
      yield { message: { case: 'header', value: { experimentId, datasetId } } };
      for (let b = 0; b < total; b++) {
        yield batch(b);
        yielded++;
      }
    }
    // Hold the dataset's table: the server's first write waits on it.
    const blocker = await holdTable();
    const call = client.streamSubmit(stream(), { headers: { 'x-api-key': org.key } });
    // Long enough for an unthrottled client to encode and send most of the 200 batches.
    await new Promise((r) => setTimeout(r, 3000));
    const whileStalled = yielded;
    await blocker.query('commit');
    await blocker.end();
    const response = await call;

    expect(whileStalled).toBeLessThan(40);
    expect(response.written).toBe(BigInt(total * 8000));
    expect(await rowCount()).toBe(total * 1000);
  }, 120_000);

  it('a bad batch read while the one before it is being written fails the stream only once that write has committed', async () => {
    const client = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
    const before = await rowCount();
    const blocker = await holdTable();
    const bad = batch(300);
    const points = (bad.message as { value: { points: Array<MessageInitShape<typeof TelemetryPointSchema>> } }).value.points;
    points[4321] = { ...points[4321]!, type: { case: 'string', value: 'not a number' } };
    async function* stream(): AsyncGenerator<Message> {
      yield { message: { case: 'header', value: { experimentId, datasetId } } };
      yield batch(301);
      yield bad;
    }
    const failed = client.streamSubmit(stream(), { headers: { 'x-api-key': org.key } }).then(
      () => null,
      (error: unknown) => ConnectError.from(error),
    );
    // The bad batch is decoded (and refused) while the good one waits for the lock: the answer
    // must still wait for that write instead of ending the stream with it half done.
    const early = await Promise.race([failed, new Promise((r) => setTimeout(r, 1500, 'pending'))]);
    await blocker.query('commit');
    await blocker.end();
    const error = await failed;

    expect(early).toBe('pending');
    expect(error?.code).toBe(Code.InvalidArgument);
    expect(error?.rawMessage).toContain('message 2, batch.points[4321]');
    expect((await rowCount()) - before).toBe(1000);
  });

  it('a write that fails ends the stream with its error, and the batch decoded behind it is not written', async () => {
    const client = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
    const before = await rowCount();
    const blocker = await holdTable();
    let yielded = 0;
    async function* stream(): AsyncGenerator<Message> {
      yield { message: { case: 'header', value: { experimentId, datasetId } } };
      for (const b of [400, 401]) {
        yield batch(b);
        yielded++;
      }
      await new Promise(() => {}); // the client never finishes: only the failed write can end the stream
    }
    const failed = client.streamSubmit(stream(), { headers: { 'x-api-key': org.key } }).then(
      () => null,
      (error: unknown) => ConnectError.from(error),
    );
    // The server's insert is waiting for the lock; the second batch has been read behind it. Cut that insert's connection.
    let waiting: Array<{ pid: number }> = [];
    try {
      // Polled for up to 20 s: on a machine busy with the rest of the suite the first write can take seconds to arrive.
      for (let i = 0; i < 400 && (waiting.length === 0 || yielded < 2); i++) {
        await new Promise((r) => setTimeout(r, 50));
        // Blocked by this connection's lock, whatever the backend's query text says: a prepared insert
        // waits while it is bound (its plan locks the table), when pg_stat_activity still shows the
        // statement before it.
        waiting = (await blocker.query<{ pid: number }>(`select pid from pg_stat_activity where pg_backend_pid() = any(pg_blocking_pids(pid))`)).rows;
      }
      expect(waiting).toHaveLength(1);
      await blocker.query('select pg_terminate_backend($1)', [waiting[0]!.pid]);
    } finally {
      // Whatever happened, the lock goes: the tests after this one write to the same table.
      await blocker.query('commit');
      await blocker.end();
    }
    const error = await failed;

    expect(error).not.toBeNull();
    expect(error!.code).toBe(Code.Unavailable);
    expect((await rowCount()) - before).toBe(0);
  });

  it('single-point messages are written within the flush interval while the stream stays open', async () => {
    const client = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const us = 1_790_000_000_000_000;
    async function* stream(): AsyncGenerator<Message> {
      yield { message: { case: 'header', value: { datasetId } } };
      yield { message: { case: 'point', value: { channelId: '3', timestamp: { seconds: BigInt(us / 1e6), nanos: 0 }, type: { case: 'double', value: 4242.5 } } } };
      await gate;
    }
    const call = client.streamSubmit(stream(), { headers: { 'x-api-key': org.key } });
    let found = 0;
    for (let i = 0; i < 50 && found === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      found = await rowCount('ch_3 = 4242.5');
    }
    expect(found).toBe(1);
    release();
    expect((await call).written).toBe(1n);
  });
});

/**
 * Rows in the dataset's table, read on a connection of its own: after a test cuts the server's insert
 * connection, the service's pool may still hand that dead connection to the next query for a moment.
 */
async function rowCount(where = 'true'): Promise<number> {
  const client = new pg.Client({ connectionString: t.service.ctx.config.databaseUrl });
  await client.connect();
  try {
    const rows = await client.query<{ n: number }>(`select count(*)::int as n from ${wideTableName(datasetId)} where ${where}`);
    return rows.rows[0]!.n;
  } finally {
    await client.end();
  }
}

/** A connection holding the dataset's table (access exclusive, transaction open): the server's writes wait until it commits. */
async function holdTable(): Promise<pg.Client> {
  const blocker = new pg.Client({ connectionString: t.service.ctx.config.databaseUrl });
  await blocker.connect();
  await blocker.query('begin');
  await blocker.query(`lock table ${wideTableName(datasetId)} in access exclusive mode`);
  return blocker;
}
