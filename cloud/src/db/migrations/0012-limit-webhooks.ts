import { sql, type Kysely } from 'kysely';

// Frozen: a migration never imports application code.

/**
 * Limit events as webhooks, opted into per endpoint (docs/decisions/0011-limits.md).
 *
 * - `webhook_endpoints.limit_events`: the endpoint also receives `limit.crossing` deliveries. Off for every
 *   endpoint that exists, so receivers written for commands keep receiving only commands.
 * - `delivery_jobs` carries either a command (as before) or a LIMIT event's notification: `event_id`, its
 *   phase (`started` or `ended`: one job each per endpoint, the unique index makes a second impossible),
 *   `event_type`, and `payload`, the event as it was at that phase, so a retried start never reads like
 *   the end. No foreign key to events: the payload stands on its own, and migration 0009's reasons for
 *   keeping parent lookups off the outbox's rows hold here too.
 * - `delivery_attempts.command_id` is null for a limit notification's attempts (the job names the event).
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`alter table webhook_endpoints add column if not exists limit_events boolean not null default false`.execute(db);
  await sql`alter table delivery_jobs alter column command_id drop not null`.execute(db);
  await sql`alter table delivery_jobs add column if not exists event_type text not null default 'command.dispatched'`.execute(db);
  await sql`alter table delivery_jobs add column if not exists event_id uuid`.execute(db);
  await sql`alter table delivery_jobs add column if not exists event_phase text`.execute(db);
  await sql`alter table delivery_jobs add column if not exists payload jsonb`.execute(db);
  await sql`
    alter table delivery_jobs add constraint delivery_jobs_subject check (
      (command_id is not null and event_id is null and event_type = 'command.dispatched')
      or (command_id is null and event_id is not null and event_type = 'limit.crossing' and event_phase in ('started', 'ended') and payload is not null)
    )`.execute(db);
  await sql`create unique index delivery_jobs_event_key on delivery_jobs (event_id, event_phase, endpoint_id) where event_id is not null`.execute(db);
  await sql`alter table delivery_attempts alter column command_id drop not null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`delete from delivery_attempts where command_id is null`.execute(db);
  await sql`alter table delivery_attempts alter column command_id set not null`.execute(db);
  await sql`drop index if exists delivery_jobs_event_key`.execute(db);
  await sql`alter table delivery_jobs drop constraint if exists delivery_jobs_subject`.execute(db);
  await sql`delete from delivery_jobs where command_id is null`.execute(db);
  await sql`alter table delivery_jobs drop column if exists payload, drop column if exists event_phase, drop column if exists event_id, drop column if exists event_type`.execute(db);
  await sql`alter table delivery_jobs alter column command_id set not null`.execute(db);
  await sql`alter table webhook_endpoints drop column if exists limit_events`.execute(db);
}
