import { sql, type Kysely } from 'kysely';

// Frozen: a migration never imports application code. Design and reasons: docs/decisions/0015-short-flights-stored-small.md.

export async function up(db: Kysely<any>): Promise<void> {
  // A new MAVLink dataset keeps its first frames in one table of its own (narrow_s_<dataset>) instead of
  // one table per message id, whose fixed cost (free space map, key index, last page) outweighs a short
  // flight's rows; the writer moves them into the message tables once the flight is long. True while
  // that table still takes frames. Existing datasets keep false: their message tables hold everything.
  await sql`alter table narrow_datasets add column shared_open boolean not null default false`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table narrow_datasets drop column if exists shared_open`.execute(db);
}
