import { sql, type Kysely } from 'kysely';

// Frozen: a migration never imports application code.

export async function up(db: Kysely<any>): Promise<void> {
  // What the template said when the command was logged travels with every delivery of it, whatever
  // happens to the template afterwards (the command log is an audit record).
  await db.schema.alterTable('commands').addColumn('destructive', 'boolean', (c) => c.notNull().defaultTo(false)).execute();

  // A short lease on a job while one worker attempts it: a redelivered message (ack wait passed, another
  // replica) finds the job leased and backs off instead of sending a second copy at the same moment.
  await db.schema.alterTable('delivery_jobs').addColumn('leased_until', 'timestamptz').execute();
  await db.schema.alterTable('delivery_jobs').addColumn('finish_reason', 'text').execute();
  await sql`create index delivery_jobs_pending_idx on delivery_jobs (next_attempt_at) where state = 'pending'`.execute(db);

  // The X-Sortie-Delivery value of the attempt, so a receiver's log and ours can be joined.
  await db.schema.alterTable('delivery_attempts').addColumn('delivery_id', 'text', (c) => c.notNull().defaultTo('')).execute();

  // Messages for people of an organization (today: an endpoint was auto-disabled). Owners read them
  // through GET /api/notifications; email goes out as well when SMTP is configured.
  await db.schema
    .createTable('notifications')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('user_id', 'uuid', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('data', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('emailed_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('notifications_user_idx').on('notifications').columns(['organization_id', 'user_id', 'created_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('notifications').ifExists().execute();
  await db.schema.alterTable('delivery_attempts').dropColumn('delivery_id').execute();
  await sql`drop index if exists delivery_jobs_pending_idx`.execute(db);
  await db.schema.alterTable('delivery_jobs').dropColumn('finish_reason').execute();
  await db.schema.alterTable('delivery_jobs').dropColumn('leased_until').execute();
  await db.schema.alterTable('commands').dropColumn('destructive').execute();
}
