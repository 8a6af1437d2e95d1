import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, TEST_ADMIN_URL, type TestDatabase } from '../testing/test-database.ts';
import { openDatabase, type DatabaseHandle } from './connect.ts';
import { sql } from 'kysely';

let testDb: TestDatabase;
let database: DatabaseHandle;
const poolErrors: Error[] = [];

beforeAll(async () => {
  testDb = await createTestDatabase();
  database = await openDatabase({ url: testDb.url, dataDir: '.', onPoolError: (e) => poolErrors.push(e) });
});
afterAll(async () => {
  await database?.close();
  await testDb?.drop();
});

// Found when a crash test dropped a database under a running service: an idle pooled connection that
// Postgres terminates emitted an unhandled 'error' and took the whole process down.
it('survives Postgres terminating its idle connections and carries on with new ones', async () => {
  await Promise.all([1, 2, 3].map(() => sql`select pg_sleep(0.05)`.execute(database.db)));
  const admin = new pg.Client({ connectionString: TEST_ADMIN_URL });
  await admin.connect();
  try {
    const r = await admin.query('select count(pg_terminate_backend(pid)) as n from pg_stat_activity where datname = $1', [testDb.name]);
    expect(Number(r.rows[0].n)).toBeGreaterThan(0);
  } finally {
    await admin.end();
  }
  await new Promise((r) => setTimeout(r, 200));
  expect(poolErrors.length).toBeGreaterThan(0);
  const { rows } = await sql<{ one: number }>`select 1 as one`.execute(database.db);
  expect(rows[0]!.one).toBe(1);
});
