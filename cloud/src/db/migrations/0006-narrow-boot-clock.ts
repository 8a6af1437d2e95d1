import { sql, type Kysely } from 'kysely';

// Frozen: a migration never imports application code. Design and reasons: docs/decisions/0006-narrow-mavlink.md.

export async function up(db: Kysely<any>): Promise<void> {
  // A reboot is declared only when the component's boot clock jumps back and stays back for several
  // observations, so the decision can straddle two batches: the component's newest session carries the
  // state the rule needs (its last accepted boot times, and a candidate jump with the offsets of its
  // frames kept apart) from one batch to the next. Null on every other session, and on sessions
  // written before this rule (their last_boot_us is all the state they need).
  await sql`alter table narrow_boot_sessions add column if not exists clock_state jsonb`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table narrow_boot_sessions drop column if exists clock_state`.execute(db);
}
