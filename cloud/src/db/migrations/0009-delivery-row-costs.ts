import { sql, type Kysely } from 'kysely';

// Frozen: a migration never imports application code.

/**
 * What every delivery's rows cost PostgreSQL, cut without changing what the rows guarantee.
 *
 * Three foreign keys are dropped because another key already says what they said: a delivery job's
 * organization (its command's, by `delivery_jobs.command_id`), an attempt's organization and command
 * (its job's, by `delivery_attempts.job_id`). Every delete still cascades the same way (organization →
 * commands → delivery jobs → attempts), and no statement writes these rows except from the job or
 * command they belong to. Each key cost a lookup and a row lock on the parent per inserted row — for
 * a dispatch to ten endpoints, thirty of them, every one of them on the organization's single row,
 * which every concurrent dispatch and attempt record of the organization locked at once.
 *
 * Commands leave a fifth of each page free (fillfactor 80): a command row is rewritten after it is
 * written (dispatched, its attempts counted, acknowledged), and with room on its page the rewrites
 * that change no indexed column stay on the page without new index entries (HOT updates). Pages
 * written before this keep their fill until rewritten.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table delivery_jobs drop constraint if exists delivery_jobs_organization_id_fkey`.execute(db);
  await sql`alter table delivery_attempts drop constraint if exists delivery_attempts_organization_id_fkey`.execute(db);
  await sql`alter table delivery_attempts drop constraint if exists delivery_attempts_command_id_fkey`.execute(db);
  await sql`alter table commands set (fillfactor = 80)`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`alter table commands reset (fillfactor)`.execute(db);
  await sql`alter table delivery_attempts add constraint delivery_attempts_command_id_fkey foreign key (command_id) references commands (id) on delete cascade`.execute(db);
  await sql`alter table delivery_attempts add constraint delivery_attempts_organization_id_fkey foreign key (organization_id) references organizations (id) on delete cascade`.execute(db);
  await sql`alter table delivery_jobs add constraint delivery_jobs_organization_id_fkey foreign key (organization_id) references organizations (id) on delete cascade`.execute(db);
}
