import { sql, type Kysely } from 'kysely';

// Frozen: a migration never imports application code.

/**
 * An endpoint's latest delivery attempt, for the webhooks list (what the receiver answered last, and when):
 * an index on (endpoint_id, attempted_at) makes it one probe per endpoint instead of a scan of every
 * attempt ever made. It costs each recorded attempt one more index entry, and nothing else: the endpoint
 * row is still written only when its failure streak changes (delivery/jobs.ts).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create index if not exists delivery_attempts_endpoint_idx on delivery_attempts (endpoint_id, attempted_at)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists delivery_attempts_endpoint_idx`.execute(db);
}
