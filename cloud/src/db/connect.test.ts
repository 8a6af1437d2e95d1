import pg from 'pg';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { createTestDatabase, TEST_ADMIN_URL, type TestDatabase } from '../testing/test-database.ts';
import { openDatabase, preloadsTimescale, type DatabaseHandle } from './connect.ts';
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

// A stall met a pool that had let its idle connections go, and every queued request opened a new one
// (a backend forked, the hot statements prepared again): the dispatch tail grew tenfold. The pool keeps
// what it opened until the connection's lifetime ends; the default pool would have closed them 10 s idle.
it('keeps connections it opened under load after they fall idle, until their lifetime ends', async () => {
  const idle = await openDatabase({ url: testDb.url, dataDir: '.' });
  const defaults = new pg.Pool({ connectionString: testDb.url, max: 20 });
  try {
    const busy = (run: () => Promise<unknown>) => Promise.all([1, 2, 3, 4].map(run));
    // Only the pools' timers run on a fake clock, from before the connections open: the sockets and
    // queries stay real, and a minute passes for the idle timers at once.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      await busy(() => sql`select pg_sleep(0.05)`.execute(idle.db));
      await busy(() => defaults.query('select pg_sleep(0.05)'));
      expect(idle.pool!.totalCount).toBe(4);
      expect(defaults.totalCount).toBe(4);
      vi.advanceTimersByTime(60_000);
    } finally {
      vi.useRealTimers();
    }
    await new Promise((r) => setTimeout(r, 100));
    expect(defaults.totalCount, 'the default pool closes idle connections (the test can tell the difference)').toBe(0);
    expect(idle.pool!.totalCount).toBe(4);
    const { rows } = await sql<{ one: number }>`select 1 as one`.execute(idle.db);
    expect(rows[0]!.one).toBe(1);
  } finally {
    await defaults.end();
    await idle.close();
  }
});

it('reads shared_preload_libraries as PostgreSQL writes it: a list, names maybe quoted', () => {
  for (const setting of ['timescaledb', 'pg_stat_statements, timescaledb', '"timescaledb",auto_explain']) expect(preloadsTimescale(setting)).toBe(true);
  for (const setting of ['', 'pg_stat_statements', 'timescaledb_toolkit', 'my_timescaledb']) expect(preloadsTimescale(setting)).toBe(false);
});
