import { sql } from 'kysely';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { seedQueuedCommand } from '../testing/delivery-rows.ts';
import { migratedTestDatabase, type MigratedTestDatabase } from '../testing/test-database.ts';
import { LEASE_ROW_COLUMNS, leaseAndLoadMany, markPublished, recordAttempts, type AttemptRecord } from './jobs.ts';

let database: MigratedTestDatabase;
const jobs: string[] = [];
const endpoints: string[] = [];
let ids: { org: string; ds: string; cmd: string };

beforeAll(async () => {
  database = await migratedTestDatabase();
  const seeded = await seedQueuedCommand(database.db, 3);
  ids = { org: seeded.org, ds: seeded.ds, cmd: seeded.cmd };
  endpoints.push(...seeded.endpoints);
  jobs.push(...seeded.jobs);
});
afterAll(() => database?.drop());

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
  const [loaded] = await leaseAndLoadMany(database.db, { now: new Date(), leaseMs: 30_000, jobIds: [job] });
  expect(loaded?.job.id).toBe(job);
  const row = await database.db.selectFrom('delivery_jobs').select('published_at').where('id', '=', job).executeTakeFirstOrThrow();
  expect(row.published_at).not.toBeNull();
});

// The lease names its columns instead of `c.*` (so its row type is checked), and tsc holds the lists to
// db/schema.ts; this holds them to the tables the migrations make, so neither side can gain a column
// that the lease would silently leave out.
it('the lease reads every column of commands and webhook_endpoints', async () => {
  for (const [table, columns] of Object.entries(LEASE_ROW_COLUMNS)) {
    const { rows } = await sql<{ column_name: string }>`
      select column_name from information_schema.columns where table_schema = current_schema() and table_name = ${table}
      order by ordinal_position
    `.execute(database.db);
    expect([...columns], table).toEqual(rows.map((r) => r.column_name));
  }
});

it('a lease loads the command, endpoint and arming as Kysely reads them', async () => {
  const db = database.db;
  const expiresAt = new Date(Date.now() + 3_600_000);
  await db
    .insertInto('armings')
    .values({ dataset_id: ids.ds, organization_id: ids.org, armed_at: new Date(), expires_at: expiresAt, armed_by_key_id: null, armed_by_user_id: null, reason: '', disarmed_by_key_id: null })
    .execute();
  const [loaded] = await leaseAndLoadMany(db, { now: new Date(), leaseMs: 30_000, jobIds: [jobs[1]!] });
  expect(loaded).toEqual({
    job: { id: jobs[1], organization_id: ids.org, command_id: ids.cmd, endpoint_id: endpoints[1], attempts: 0, event_type: 'command.dispatched', payload: null, created_at: expect.any(Date) },
    command: await db.selectFrom('commands').selectAll().where('id', '=', ids.cmd).executeTakeFirstOrThrow(),
    endpoint: await db.selectFrom('webhook_endpoints').selectAll().where('id', '=', endpoints[1]!).executeTakeFirstOrThrow(),
    arming: { expires_at: expiresAt, disarmed_at: null },
  });
});

// The statement sends each command and endpoint once per batch, on the first of its jobs' rows; every
// job must still come back with its own command, endpoint and arming.
it('a batch of jobs sharing commands and endpoints loads each job with its own command, endpoint and arming', async () => {
  const db = database.db;
  const commands = [crypto.randomUUID(), crypto.randomUUID()];
  for (const [i, id] of commands.entries()) {
    await sql`insert into commands (id, organization_id, experiment_id, dataset_id, command_text, rel_time, issued_at, status, ack_deadline_at)
              select ${id}, organization_id, experiment_id, dataset_id, ${`C${i}`}, ${i}, now(), 'queued', now() + interval '1 hour'
              from commands where id = ${ids.cmd}`.execute(db);
  }
  const batch: Array<{ jobId: string; command: string; endpoint: string }> = [];
  for (const command of commands) {
    for (const endpoint of endpoints.slice(0, 2)) {
      const jobId = crypto.randomUUID();
      await db.insertInto('delivery_jobs').values({ id: jobId, organization_id: ids.org, command_id: command, endpoint_id: endpoint }).execute();
      batch.push({ jobId, command, endpoint });
    }
  }
  const loaded = await leaseAndLoadMany(db, {
    now: new Date(),
    leaseMs: 30_000,
    jobIds: batch.map((b) => b.jobId),
  });
  const arming = await db.selectFrom('armings').select(['expires_at', 'disarmed_at']).where('dataset_id', '=', ids.ds).executeTakeFirstOrThrow();
  for (const [i, b] of batch.entries()) {
    expect(loaded[i]).toEqual({
      job: { id: b.jobId, organization_id: ids.org, command_id: b.command, endpoint_id: b.endpoint, attempts: 0, event_type: 'command.dispatched', payload: null, created_at: expect.any(Date) },
      command: await db.selectFrom('commands').selectAll().where('id', '=', b.command).executeTakeFirstOrThrow(),
      endpoint: await db.selectFrom('webhook_endpoints').selectAll().where('id', '=', b.endpoint).executeTakeFirstOrThrow(),
      arming,
    });
  }
});

// One statement writes a batch's attempts, jobs, command counters and endpoint streaks (the engine's
// tests see it through deliveries; this one reads each value it wrote).
it('records a batch: attempt rows, each job its next state, the command its counters, the endpoints their streaks', async () => {
  const [delivered, failed] = [jobs[0]!, jobs[1]!];
  const job = (id: string, endpoint: string) => ({ id, organization_id: ids.org, command_id: ids.cmd, endpoint_id: endpoint, attempts: 0 });
  const at = new Date('2026-11-27T06:00:00Z');
  const retryAt = new Date(at.getTime() + 1000);
  const base = { endpointUrl: 'https://x.invalid/', attempt: 1, eventType: 'command.dispatched', response: '', durationMs: 3, attemptedAt: at };
  const records: AttemptRecord[] = [
    { ...base, job: job(delivered, endpoints[0]!), deliveryId: `${delivered}.1`, statusCode: 200, error: null, success: true, next: { state: 'delivered', reason: 'ok', at } },
    { ...base, job: job(failed, endpoints[1]!), deliveryId: `${failed}.1`, statusCode: 503, error: 'no', success: false, next: { state: 'pending', nextAttemptAt: retryAt } },
  ];
  const db = database.db;
  const before = await db.selectFrom('commands').select('delivery_attempts').where('id', '=', ids.cmd).executeTakeFirstOrThrow();
  const streaks = await recordAttempts({ db, pool: database.pool }, records);
  expect(streaks).toEqual([{ consecutiveFailures: 0, disabled: false }, { consecutiveFailures: 1, disabled: false }]);
  const rows = await db.selectFrom('delivery_jobs').select(['id', 'state', 'attempts', 'next_attempt_at', 'finished_at']).where('id', 'in', [delivered, failed]).execute();
  const byId = new Map(rows.map((r) => [r.id, r]));
  expect(byId.get(delivered)).toMatchObject({ state: 'delivered', attempts: 1, finished_at: at, next_attempt_at: null });
  expect(byId.get(failed)).toMatchObject({ state: 'pending', attempts: 1, finished_at: null, next_attempt_at: retryAt });
  const after = await db.selectFrom('commands').select(['delivery_attempts', 'delivered_at']).where('id', '=', ids.cmd).executeTakeFirstOrThrow();
  expect(after.delivery_attempts).toBe(before.delivery_attempts + 2);
  expect(after.delivered_at).toEqual(at);
  const attempts = await db.selectFrom('delivery_attempts').select(['job_id', 'status_code', 'delivery_id']).where('job_id', 'in', [delivered, failed]).orderBy('status_code').execute();
  expect(attempts).toEqual([
    { job_id: delivered, status_code: 200, delivery_id: `${delivered}.1` },
    { job_id: failed, status_code: 503, delivery_id: `${failed}.1` },
  ]);
});
