import { createClient, type Client } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { TelemetryService } from '@sortie/contracts';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestOrg, type TestService } from '../../testing/test-service.ts';
import { decodeFrame } from './decode.ts';
import { fixtureFrames, framePoint, type PointInit } from './fixture-frames.ts';
import { replayFrames } from './long-flight.ts';
import { loadMessageTables, messageColumns, messageRelationSql, SHARED_FRAMES, sharedSlots, sharedTableName, type MessageTable } from './message-tables.ts';
import { narrowStorage } from './storage-size.ts';
import { readStoredSamples } from './stored-samples.ts';

// What a flight costs in PostgreSQL bytes, measured as bench:mavlink and bench:short-flight measure it
// (storage-size.ts), each dataset in a service of its own database so the bookkeeping tables hold it alone.

const frames = fixtureFrames('arduplane-sitl-vtol.tlog');

let t: TestService;
let org: TestOrg;
let client: Client<typeof TelemetryService>;
let experimentId: string;

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg();
  client = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
  experimentId = (await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'storage' } })).body.id;
});
afterAll(() => t?.stop());

async function register(name: string): Promise<string> {
  const response = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId, datasetName: name, storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' },
  });
  return response.body.datasetId;
}

async function stream(datasetId: string, points: readonly PointInit[]) {
  async function* messages() {
    yield { message: { case: 'header' as const, value: { experimentId, datasetId, format: 'mavlink-raw-v1' } } };
    for (let i = 0; i < points.length; i += 500) yield { message: { case: 'batch' as const, value: { points: points.slice(i, i + 500) } } };
  }
  const r = await client.streamSubmit(messages(), { headers: { 'x-api-key': org.key } });
  return { written: Number(r.written), duplicates: Number(r.duplicates) };
}

describe('a short MAVLink flight is stored small', () => {
  it('the 4-minute SITL flight, streamed once, costs at most 150 PostgreSQL bytes per frame', async () => {
    const datasetId = await register('sitl');
    const points = frames.map((f, i) => framePoint(f.frame.bytes, f.receivedUs, i + 1));
    expect(await stream(datasetId, points)).toEqual({ written: frames.length, duplicates: 0 });
    const stored = await narrowStorage(t.service.ctx.db, [datasetId]);
    expect(stored.frames).toBe(frames.length);
    // One table per message id (41 here) cost ~210: each pays a free space map, key pages and a last page.
    expect(stored.bytes / stored.frames).toBeLessThanOrEqual(150);
  });
});

describe('a flight that grows long moves its rows into its message tables', () => {
  it('keeps every frame once, before and after the move, with redelivery on both sides of it', async () => {
    const span = frames[frames.length - 1]!.receivedUs - frames[0]!.receivedUs + 1_000_000;
    const flight = [0, 1, 2].flatMap((r) => replayFrames(frames, r, span));
    expect(flight.length).toBeGreaterThan(SHARED_FRAMES);
    const points = flight.map((f, i) => framePoint(f.bytes, f.receivedUs, i + 1));
    const datasetId = await register('long');
    const db = t.service.ctx.db;
    const sharedRows = async () => (await sql<{ n: number }>`select count(*)::int as n from ${sql.table(sharedTableName(datasetId))}`.execute(db)).rows[0]!.n;

    expect(await stream(datasetId, points.slice(0, 20_000))).toEqual({ written: 20_000, duplicates: 0 });
    // All but a message with more columns of one type than the shared table has slots (AUTOPILOT_VERSION), kept in its own table.
    const fitting = frames.slice(0, 20_000).filter((f) => sharedSlots(f.frame.msgid, messageColumns(f.frame.msgid).columns)).length;
    expect(fitting).toBeGreaterThan(19_990);
    expect(await sharedRows()).toBe(fitting);
    // While the shared table is open, readers are told to read it with each message table.
    const before = [...(await loadMessageTables(db, datasetId)).values()];
    expect(before.filter((x) => x.sharedTable === sharedTableName(datasetId)).length).toBe(before.length);
    expect(await countRows(before)).toBe(20_000);
    // Redelivered into the shared table (no key there): dropped all the same, a repeat within the batch too.
    expect(await stream(datasetId, [...points.slice(2_000, 2_500), points[2_100]!])).toEqual({ written: 0, duplicates: 501 });
    expect(await stream(datasetId, points.slice(20_000))).toEqual({ written: points.length - 20_000, duplicates: 0 });
    expect(await sharedRows()).toBe(0);
    // Redelivered after the move, into the message tables, now keyed.
    expect(await stream(datasetId, points.slice(1_000, 1_500))).toEqual({ written: 0, duplicates: 500 });

    const tables = [...(await loadMessageTables(db, datasetId)).values()];
    const keyed = await sql<{ n: number }>`select count(*)::int as n from pg_index where indisprimary and indrelid = any(${tables.map((x) => x.table)}::regclass[])`.execute(db);
    expect(keyed.rows[0]!.n).toBe(tables.length);
    // After the move, readers read the message tables alone; one still holding the tables it loaded
    // before the move reads the emptied shared table as well and counts the same.
    expect(tables.filter((x) => x.sharedTable !== undefined)).toEqual([]);
    expect(await countRows(tables)).toBe(points.length);
    const msgidsBefore = new Set(before.map((x) => x.msgid));
    expect(await countRows(before)).toBe(await countRows(tables.filter((x) => msgidsBefore.has(x.msgid))));
    const expected = flight.reduce((n, f, i) => n + decodeFrame(fixtureFramesByIndex(i)).length, 0);
    expect((await readStoredSamples(db, datasetId)).length).toBe(expected);
  }, 120_000);
});

/** Rows of the given message tables, each read as readers read it (messageRelationSql). */
async function countRows(tables: readonly MessageTable[]): Promise<number> {
  let rows = 0;
  for (const table of tables) rows += (await sql<{ n: number }>`select count(*)::int as n from ${messageRelationSql(table)} m`.execute(t.service.ctx.db)).rows[0]!.n;
  return rows;
}

/** The capture frame a flight position replays (each replay decodes to as many samples as the frame it moves). */
function fixtureFramesByIndex(i: number) {
  return frames[i % frames.length]!.frame;
}
