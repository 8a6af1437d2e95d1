import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../auth/organizations.ts';
import type { AppContext } from '../platform/context.ts';
import { registerStream } from '../datasets/register-stream.ts';
import { createWideTable, wideTableName } from '../datasets/wide-table.ts';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.ts';
import { requirePlainServer, type ServerOffer } from '../testing/timescale-server.ts';
import { detectTimescale, migrateToLatest, type DatabaseHandle } from './connect.ts';
import type { Database } from './schema.ts';

// The plain path on the real PostgreSQL (the server on 5432, which must not preload TimescaleDB; it may
// offer it, as it does once scripts/timescale-cluster.sh has built it into this machine's PostgreSQL):
// start-up creates no extension, a wide dataset is an ordinary table with its primary key and nothing
// else, and no TimescaleDB statement is sent. The TimescaleDB path runs against a real one in
// timescale-startup.test.ts and telemetry/timescale-compression.test.ts.

let testDb: TestDatabase;
let pool: pg.Pool;
let db: Kysely<Database>;
const sent: string[] = [];
let organizationId: string;
let experimentId: string;
let offer: ServerOffer;

beforeAll(async () => {
  offer = await requirePlainServer();
  testDb = await createTestDatabase();
  pool = new pg.Pool({ connectionString: testDb.url, max: 2 });
  // Every statement the code sends, transactions included, is recorded.
  db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), log: (event) => void sent.push(event.query.sql) });
  await migrateToLatest(db);
  ({ organizationId } = await createOrganization(db, 'plain'));
  experimentId = crypto.randomUUID();
  await db.insertInto('experiments').values({ id: experimentId, organization_id: organizationId, name: 'e', description: '' }).execute();
});
afterAll(async () => {
  await db?.destroy();
  await testDb?.drop();
});

function handle(timescale: boolean): DatabaseHandle {
  return { db, kind: 'postgres', pool, timescale, close: async () => {} };
}

function context(timescale: boolean): AppContext {
  return { db, database: handle(timescale), clock: { now: () => new Date() } } as unknown as AppContext;
}

const TIMESCALE_WORDS = /timescale|hypertable|compress|by_range|continuous|_timescaledb/i;

describe('plain PostgreSQL', () => {
  it('start-up detection takes the plain path (TimescaleDB absent, or offered but not preloaded) and creates no extension', async () => {
    sent.length = 0;
    expect(await detectTimescale(handle(false))).toEqual(offer.offered === undefined ? { path: 'absent' } : { path: 'not-preloaded', version: offer.offered });
    expect(sent.filter((s) => /create extension/i.test(s))).toEqual([]);
    const extensions = await sql<{ extname: string }>`select extname from pg_extension`.execute(db);
    expect(extensions.rows.map((r) => r.extname)).toEqual(['plpgsql']);
  });

  it('a wide dataset is an ordinary table: primary key on time, its columns, no chunks, triggers or other indexes', async () => {
    sent.length = 0;
    const registered = await registerStream(context(false), organizationId, {
      experimentId,
      datasetName: 'plain-wide',
      storageShape: 'wide',
      channels: [
        { name: 'airspeed', unit: 'm/s', dataType: 'double' },
        { name: 'counter', unit: '', dataType: 'int64' },
        { name: 'armed', unit: '', dataType: 'bool' },
        { name: 'mode', unit: '', dataType: 'string' },
      ],
    } as Parameters<typeof registerStream>[2]);
    const table = wideTableName(registered.datasetId);

    expect(sent.filter((s) => TIMESCALE_WORDS.test(s))).toEqual([]);
    expect(sent).toContain(`create table if not exists "${table}" (time timestamptz not null primary key)`);

    const relation = await sql<{ relkind: string; relispartition: boolean; relhastriggers: boolean; inherits: number }>`
      select c.relkind, c.relispartition, c.relhastriggers,
             (select count(*)::int from pg_inherits i where i.inhparent = c.oid or i.inhrelid = c.oid) as inherits
      from pg_class c where c.oid = ${table}::regclass
    `.execute(db);
    expect(relation.rows).toEqual([{ relkind: 'r', relispartition: false, relhastriggers: false, inherits: 0 }]);

    const indexes = await sql<{ indexdef: string }>`select indexdef from pg_indexes where tablename = ${table}`.execute(db);
    expect(indexes.rows.map((r) => r.indexdef)).toEqual([`CREATE UNIQUE INDEX ${table}_pkey ON public.${table} USING btree ("time")`]);

    const columns = await sql<{ attname: string; type: string; attnotnull: boolean }>`
      select attname, format_type(atttypid, atttypmod) as type, attnotnull
      from pg_attribute where attrelid = ${table}::regclass and attnum > 0 and not attisdropped order by attnum
    `.execute(db);
    expect(columns.rows).toEqual([
      { attname: 'time', type: 'timestamp with time zone', attnotnull: true },
      { attname: 'ch_0', type: 'double precision', attnotnull: false },
      { attname: 'ch_1', type: 'bigint', attnotnull: false },
      { attname: 'ch_2', type: 'boolean', attnotnull: false },
      { attname: 'ch_3', type: 'text', attnotnull: false },
    ]);
  });

  it('the flag is what keeps TimescaleDB out: with it set, the same step calls create_hypertable(by_range(...)), absent here, and nothing is left behind', async () => {
    const table = `wide_${crypto.randomUUID().replaceAll('-', '')}`;
    sent.length = 0;
    await expect(db.transaction().execute((tx) => createWideTable(tx, table, true))).rejects.toThrow(/function by_range\(column_name => unknown, partition_interval => interval\) does not exist/);
    expect(sent.some((s) => s.startsWith('select create_hypertable(relation => '))).toBe(true);
    const left = await sql<{ n: number }>`select count(*)::int as n from pg_class where relname = ${table}`.execute(db);
    expect(left.rows[0]!.n).toBe(0);
  });
});
