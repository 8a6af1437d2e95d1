import { sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Executor } from '../db/executor.ts';
import { migrationProvider } from '../db/migrations/index.ts';
import { seedQueuedCommand } from '../testing/delivery-rows.ts';
import { migratedTestDatabase, type MigratedTestDatabase } from '../testing/test-database.ts';

// The delivery rows keep one chain of foreign keys (organization → command → job → attempt, command →
// ack token, job → endpoint) and not the shortcuts beside it, which cost a parent lookup and lock per
// row (migration 0009). These tests hold that the chain still guards and still cascades.

let database: MigratedTestDatabase;

beforeAll(async () => {
  database = await migratedTestDatabase();
});
afterAll(() => database?.drop());

/** An organization with one command dispatched to one endpoint: its job, an attempt and an ack token. */
async function seed() {
  const { org, cmd, endpoints, jobs } = await seedQueuedCommand(database.db, 1);
  const [endpoint, job] = [endpoints[0]!, jobs[0]!];
  await attempt(org, job, cmd, endpoint);
  await database.db.insertInto('ack_tokens').values({ token_hash: crypto.randomUUID(), command_id: cmd, expires_at: new Date(Date.now() + 3600_000) }).execute();
  return { org, cmd, endpoint, job };
}

/** One attempt row, written through `db` (a transaction's, when given). */
function attempt(org: string, job: string, cmd: string, endpoint: string, db: Executor = database.db) {
  return db
    .insertInto('delivery_attempts')
    .values({ id: crypto.randomUUID(), organization_id: org, job_id: job, command_id: cmd, endpoint_id: endpoint, endpoint_url: 'https://x.invalid/', event_type: 'command.dispatched', attempt: 1, status_code: 200, response: '', error: null, duration_ms: 1, attempted_at: new Date() })
    .execute();
}

async function remaining(s: { cmd: string; job: string }) {
  const db = database.db;
  const count = async (q: Promise<{ n: string | number | bigint }>) => Number((await q).n);
  return {
    commands: await count(db.selectFrom('commands').select((e) => e.fn.countAll().as('n')).where('id', '=', s.cmd).executeTakeFirstOrThrow()),
    jobs: await count(db.selectFrom('delivery_jobs').select((e) => e.fn.countAll().as('n')).where('id', '=', s.job).executeTakeFirstOrThrow()),
    attempts: await count(db.selectFrom('delivery_attempts').select((e) => e.fn.countAll().as('n')).where('job_id', '=', s.job).executeTakeFirstOrThrow()),
    tokens: await count(db.selectFrom('ack_tokens').select((e) => e.fn.countAll().as('n')).where('command_id', '=', s.cmd).executeTakeFirstOrThrow()),
  };
}

describe('delivery rows', () => {
  it('deleting an organization still removes its commands, jobs, attempts and ack tokens', async () => {
    const s = await seed();
    expect(await remaining(s)).toEqual({ commands: 1, jobs: 1, attempts: 1, tokens: 1 });
    await database.db.deleteFrom('organizations').where('id', '=', s.org).execute();
    expect(await remaining(s)).toEqual({ commands: 0, jobs: 0, attempts: 0, tokens: 0 });
  });

  it('deleting a command still removes its jobs, their attempts and its ack tokens', async () => {
    const s = await seed();
    await database.db.deleteFrom('commands').where('id', '=', s.cmd).execute();
    expect(await remaining(s)).toEqual({ commands: 0, jobs: 0, attempts: 0, tokens: 0 });
  });

  it('an attempt must belong to an existing job, and a job to an existing command and endpoint', async () => {
    const s = await seed();
    await expect(attempt(s.org, crypto.randomUUID(), s.cmd, s.endpoint)).rejects.toThrow(/delivery_attempts_job_id_fkey/);
    const job = (command: string, endpoint: string) =>
      database.db.insertInto('delivery_jobs').values({ id: crypto.randomUUID(), organization_id: s.org, command_id: command, endpoint_id: endpoint }).execute();
    await expect(job(crypto.randomUUID(), s.endpoint)).rejects.toThrow(/delivery_jobs_command_id_fkey/);
    await expect(job(s.cmd, crypto.randomUUID())).rejects.toThrow(/delivery_jobs_endpoint_id_fkey/);
  });

  it('inserting a job or an attempt does not wait for the organization row', async () => {
    const s = await seed();
    const db = database.db;
    const endpoint = crypto.randomUUID();
    await db.insertInto('webhook_endpoints').values({ id: endpoint, organization_id: s.org, label: '', url: 'https://y.invalid/', secret_ciphertext: 'x', updated_at: new Date() }).execute();
    // Another transaction holds the organization row as an update of it would. With foreign keys to
    // organizations, each insert below locked that row too and waited (here: failed on lock_timeout).
    await db.transaction().execute(async (holder) => {
      await sql`select id from organizations where id = ${s.org} for update`.execute(holder);
      await db.transaction().execute(async (tx) => {
        await sql`set local lock_timeout = '500ms'`.execute(tx);
        const job = crypto.randomUUID();
        await tx.insertInto('delivery_jobs').values({ id: job, organization_id: s.org, command_id: s.cmd, endpoint_id: endpoint }).execute();
        await attempt(s.org, job, s.cmd, endpoint, tx);
      });
    });
    expect(await db.selectFrom('delivery_jobs').select('id').where('endpoint_id', '=', endpoint).execute()).toHaveLength(1);
  });

  it('commands leave room on their pages for rewrites in place', async () => {
    const { rows } = await sql<{ reloptions: string[] | null }>`select reloptions from pg_class where relname = 'commands'`.execute(database.db);
    expect(rows[0]!.reloptions).toContain('fillfactor=80');
  });

  it('the migration goes down and up again', async () => {
    const { rows: before } = await sql<{ conname: string }>`select conname from pg_constraint where conname like '%organization_id_fkey' and conrelid::regclass::text in ('delivery_jobs', 'delivery_attempts')`.execute(database.db);
    expect(before).toEqual([]);
    const migrator = new Migrator({ db: database.db, provider: migrationProvider });
    // Down to the migration before 0009: the later ones go down first (each must be able to).
    const down = await migrator.migrateTo('0008-api-key-changes');
    expect(down.error).toBeUndefined();
    expect(down.results?.at(-1)?.migrationName).toBe('0009-delivery-row-costs');
    const { rows: restored } = await sql<{ conname: string }>`select conname from pg_constraint where conrelid::regclass::text in ('delivery_jobs', 'delivery_attempts') and contype = 'f' order by conname`.execute(database.db);
    expect(restored.map((r) => r.conname)).toEqual([
      'delivery_attempts_command_id_fkey',
      'delivery_attempts_job_id_fkey',
      'delivery_attempts_organization_id_fkey',
      'delivery_jobs_command_id_fkey',
      'delivery_jobs_endpoint_id_fkey',
      'delivery_jobs_organization_id_fkey',
    ]);
    expect((await migrator.migrateToLatest()).error).toBeUndefined();
  });
});
