import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { migrateToLatest, openDatabase, type DatabaseHandle } from '../db/connect.ts';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.ts';
import { leaseAndLoadMany, markPublished } from './jobs.ts';

let testDb: TestDatabase;
let database: DatabaseHandle;
const jobs: string[] = [];

beforeAll(async () => {
  testDb = await createTestDatabase();
  database = await openDatabase({ url: testDb.url, dataDir: '.' });
  await migrateToLatest(database.db);
  const db = database.db;
  const org = crypto.randomUUID();
  const exp = crypto.randomUUID();
  const ds = crypto.randomUUID();
  const cmd = crypto.randomUUID();
  await db.insertInto('organizations').values({ id: org, name: 'o' }).execute();
  await db.insertInto('experiments').values({ id: exp, organization_id: org, name: 'e', description: '' }).execute();
  await db.insertInto('datasets').values({ id: ds, organization_id: org, experiment_id: exp, name: 'd', storage_shape: 'wide' }).execute();
  await sql`insert into commands (id, organization_id, experiment_id, dataset_id, command_text, rel_time, issued_at, status, ack_deadline_at)
            values (${cmd}, ${org}, ${exp}, ${ds}, 'X', 0, now(), 'queued', now() + interval '1 hour')`.execute(db);
  for (let i = 0; i < 3; i++) {
    const endpoint = crypto.randomUUID();
    await db.insertInto('webhook_endpoints').values({ id: endpoint, organization_id: org, label: '', url: 'https://x.invalid/', secret_ciphertext: 'x', updated_at: new Date() }).execute();
    const id = crypto.randomUUID();
    await db.insertInto('delivery_jobs').values({ id, organization_id: org, command_id: cmd, endpoint_id: endpoint }).execute();
    jobs.push(id);
  }
});
afterAll(async () => {
  await database?.close();
  await testDb?.drop();
});

// Found by bench:dispatch: marking published waited on rows a lease batch held, in the opposite lock
// order, and Postgres broke the deadlock after 1 s — a 1 s stall in delivery.
it('markPublished skips rows another transaction holds instead of waiting for them', async () => {
  const [locked, free] = jobs as [string, string, string];
  const db = database.db;
  await db.transaction().execute(async (tx) => {
    await sql`select id from delivery_jobs where id = ${locked} for update`.execute(tx);
    const started = Date.now();
    await markPublished(db, [locked, free], new Date());
    expect(Date.now() - started).toBeLessThan(500);
  });
  const rows = await db.selectFrom('delivery_jobs').select(['id', 'published_at']).where('id', 'in', [locked, free]).execute();
  const byId = new Map(rows.map((r) => [r.id, r.published_at]));
  expect(byId.get(free)).not.toBeNull();
  expect(byId.get(locked)).toBeNull();
});

it('a lease records the job as published, since its message evidently arrived', async () => {
  const job = jobs[2]!;
  const [loaded] = await leaseAndLoadMany(database.db, { now: new Date(), leaseMs: 30_000, items: [{ jobId: job, tokenHash: 'h'.repeat(64) }] });
  expect(loaded?.job.id).toBe(job);
  const row = await database.db.selectFrom('delivery_jobs').select('published_at').where('id', '=', job).executeTakeFirstOrThrow();
  expect(row.published_at).not.toBeNull();
});
