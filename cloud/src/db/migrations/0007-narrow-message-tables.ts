import { sql, type Kysely } from 'kysely';

// Frozen: a migration never imports application code. Design and reasons: docs/decisions/0006-narrow-mavlink.md.

export async function up(db: Kysely<any>): Promise<void> {
  // Narrow datasets store one row per MAVLink message: one typed table per (dataset, message id), made
  // by the writer the first time a dataset stores that id (telemetry/narrow/message-tables.ts). This
  // lists them, with the signals each has stored a value of: the channel list and Query's NOT_FOUND
  // read it instead of the data. Rows of the former one-row-per-field narrow_samples are moved into
  // the message tables at start-up by application code (narrow/legacy-samples.ts), which knows the
  // dialect's field types; that step drops narrow_samples when it is done.
  await sql`
    create table narrow_message_tables (
      dataset_id uuid not null references datasets(id) on delete cascade,
      msgid integer not null,
      table_name text not null unique,
      signals text[] not null,
      primary key (dataset_id, msgid)
    )
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists narrow_message_tables`.execute(db);
}
