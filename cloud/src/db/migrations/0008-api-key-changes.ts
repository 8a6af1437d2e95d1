import { sql, type Kysely } from 'kysely';

// Frozen: a migration never imports application code.

/**
 * Every change to an API key row (revoked, scopes or expiry changed, deleted, the table truncated) is
 * announced on the channel `sortie_api_keys` with the key's hash, at the commit that makes it. Each cloud
 * process LISTENs and drops that key from its cache of HTTP key checks, so a key can be checked without a
 * round trip per request and still be refused on the very next request after a revoke, on every replica
 * (auth/http-key-cache.ts). In a trigger, not in the code that revokes, so that no path — the admin CLI,
 * an operator's SQL, a cascade from a deleted organization — can change a key without telling the caches.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await sql`
    create function sortie_api_key_changed() returns trigger language plpgsql as $$
    begin
      if tg_level = 'STATEMENT' then
        perform pg_notify('sortie_api_keys', '*');
      else
        perform pg_notify('sortie_api_keys', old.key_hash);
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
}
