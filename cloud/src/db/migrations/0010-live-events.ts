import { sql, type Kysely } from 'kysely';

// Frozen: a migration never imports application code.

/**
 * Events learn when they last changed, so a live follower reads a dataset's events stored or updated
 * since its last read with one indexed range: a LIMIT crossing is stored when it starts and updated
 * when it ends (its end and worst value), and both reach followers. Existing rows take their
 * creation time.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table events add column if not exists updated_at timestamptz`.execute(db);
  await sql`update events set updated_at = created_at where updated_at is null`.execute(db);
  await sql`alter table events alter column updated_at set default now(), alter column updated_at set not null`.execute(db);
  await sql`create index if not exists events_dataset_updated on events (dataset_id, updated_at)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists events_dataset_updated`.execute(db);
  await sql`alter table events drop column if exists updated_at`.execute(db);
}
