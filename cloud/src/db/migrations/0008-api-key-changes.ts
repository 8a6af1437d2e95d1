import { sql, type Kysely } from 'kysely';

// Frozen: a migration never imports application code.

/**
 * Every change to an API key row (revoked, scopes or expiry changed, deleted, the table truncated) is
 * announced on the channel `sortie_api_keys` at the commit that makes it, as `<n>:<key hash>` (`<n>:*`
 * for a truncate), n from the sequence api_key_change_seq. Each cloud process LISTENs, drops that key
 * from its cache of HTTP key checks, and records in api_key_listeners that it has seen change n; a
 * revoke through Sortie waits until every listening process has, so the next request on any replica
 * is refused (auth/http-key-cache.ts). In a trigger, not in the code that revokes, so that no path —
 * the admin CLI, an operator's SQL, a cascade from a deleted organization — changes a key unannounced.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`create sequence api_key_change_seq`.execute(db);
  // Unlogged: it describes live connections only, nothing to keep across a crash.
  await sql`create unlogged table api_key_listeners (pid integer primary key, seen bigint not null, since timestamptz not null default now())`.execute(db);
  await sql`
    create function sortie_api_key_changed() returns trigger language plpgsql as $$
    begin
      if tg_level = 'STATEMENT' then
        perform pg_notify('sortie_api_keys', nextval('api_key_change_seq') || ':*');
      else
        perform pg_notify('sortie_api_keys', nextval('api_key_change_seq') || ':' || old.key_hash);
      end if;
      return null;
    end
    $$
  `.execute(db);
  await sql`
    create trigger api_keys_changed after update or delete on api_keys
    for each row execute function sortie_api_key_changed()
  `.execute(db);
  await sql`
    create trigger api_keys_truncated after truncate on api_keys
    for each statement execute function sortie_api_key_changed()
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop trigger if exists api_keys_truncated on api_keys`.execute(db);
  await sql`drop trigger if exists api_keys_changed on api_keys`.execute(db);
  await sql`drop function if exists sortie_api_key_changed()`.execute(db);
  await sql`drop table if exists api_key_listeners`.execute(db);
  await sql`drop sequence if exists api_key_change_seq`.execute(db);
}
