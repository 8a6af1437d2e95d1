import { OWNER_ONLY_SCOPES, generateApiKey, hashApiKey, isApiKeyFormat, isScope, type Scope } from '@sortie/contracts';
import { sha256HexSync } from '../crypto/node-crypto.ts';
import { sql } from 'kysely';
import type { Executor } from '../db/executor.ts';
import { organizationExists } from './organizations.ts';

export class KeyIssueError extends Error {
  override name = 'KeyIssueError';
  readonly code: 'invalid_request' | 'forbidden' | 'not_found';
  constructor(code: KeyIssueError['code'], message: string) {
    super(message);
    this.code = code;
  }
}

export interface IssuedKey {
  apiKey: string;
  keyId: string;
  scopes: Scope[];
  expiresAt: string | null;
}

/**
 * Issue a key. The plaintext is returned once and only its hash is stored. Keys carrying webhook
 * scopes act for an owner: the spec lets only a workspace owner hold them.
 */
export async function issueApiKey(
  db: Executor,
  input: { organizationId: string; scopes: string[]; userId?: string; expiresAt?: Date },
): Promise<IssuedKey> {
  const unknown = input.scopes.filter((s) => !isScope(s));
  if (unknown.length > 0) throw new KeyIssueError('invalid_request', `unknown scope: ${unknown.join(', ')}`);
  if (input.scopes.length === 0) throw new KeyIssueError('invalid_request', 'a key needs at least one scope');
  const scopes = [...new Set(input.scopes)] as Scope[];

  if (!(await organizationExists(db, input.organizationId))) throw new KeyIssueError('not_found', `no organization ${input.organizationId}`);

  let role: string | undefined;
  if (input.userId) {
    const user = await db
      .selectFrom('users')
      .select('role')
      .where('id', '=', input.userId)
      .where('organization_id', '=', input.organizationId)
      .executeTakeFirst();
    if (!user) throw new KeyIssueError('not_found', `no user ${input.userId} in organization ${input.organizationId}`);
    role = user.role;
  }
  const ownerOnly = scopes.filter((s) => OWNER_ONLY_SCOPES.includes(s));
  if (ownerOnly.length > 0 && role !== 'owner') {
    throw new KeyIssueError(
      'forbidden',
      `keys with ${ownerOnly.join(', ')} can be created only for a workspace owner (pass --user with an owner's id)`,
    );
  }

  const apiKey = generateApiKey();
  const keyId = crypto.randomUUID();
  await db
    .insertInto('api_keys')
    .values({
      id: keyId,
      organization_id: input.organizationId,
      user_id: input.userId ?? null,
      key_hash: await hashApiKey(apiKey),
      key_prefix: apiKey.slice(0, 10),
      scopes,
      expires_at: input.expiresAt ?? null,
    })
    .execute();
  return { apiKey, keyId, scopes, expiresAt: input.expiresAt?.toISOString() ?? null };
}

export async function revokeApiKey(db: Executor, keyId: string, at: Date): Promise<boolean> {
  const row = await db
    .updateTable('api_keys')
    .set({ revoked_at: at })
    .where('id', '=', keyId)
    .where('revoked_at', 'is', null)
    .returning('key_hash')
    .executeTakeFirst();
  // Other processes hear of it from the database (migration 0008); this one at once, also on PGlite.
  if (row) keyChangedHere(row.key_hash);
  // In a transaction nobody has heard of it yet: its commit announces it, and the caller may wait then.
  if (row && !db.isTransaction) await keyChangesSeen(db);
  return row !== undefined;
}

/** How long keyChangesSeen waits for a process that does not confirm (its connection is going away). */
const SEEN_WAIT_MS = 2000;

/**
 * Wait until every cloud process listening for API key changes has dropped every key changed so far from
 * its cache (each confirms in api_key_listeners, http-key-cache.ts): after this, the next request with
 * such a key on any replica is checked against the database. revokeApiKey calls it; after changing key
 * rows by other means, call it to have the change take effect on the next request rather than within
 * milliseconds. Bounded: a process whose connection dies meanwhile never confirms, and no longer caches.
 * True when every listener confirmed.
 */
export async function keyChangesSeen(db: Executor, timeoutMs = SEEN_WAIT_MS): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await sql<{ behind: number }>`
      select count(*)::int as behind from api_key_listeners l
      join pg_stat_activity a on a.pid = l.pid
      where l.seen < (select case when is_called then last_value else 0 end from api_key_change_seq)
    `.execute(db);
    if (rows[0]!.behind === 0) return true;
    if (Date.now() >= until) return false;
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** Called with the hash of a key this process just changed: the caches of this process drop it. */
const localKeyChanges = new Set<(keyHash: string) => void>();

export function onKeyChangedHere(listener: (keyHash: string) => void): () => void {
  localKeyChanges.add(listener);
  return () => localKeyChanges.delete(listener);
}

function keyChangedHere(keyHash: string): void {
  for (const listener of localKeyChanges) listener(keyHash);
}

/** Whether a key with this id exists, revoked or not: revoking twice is fine, an id never issued is not. */
export async function apiKeyExists(db: Executor, keyId: string): Promise<boolean> {
  const row = await db.selectFrom('api_keys').select('id').where('id', '=', keyId).executeTakeFirst();
  return row !== undefined;
}

export type KeyCheck =
  | { ok: true; organizationId: string; keyId: string; userId: string | null; scopes: Scope[]; expiresAt: Date | null }
  | { ok: false; reason: 'malformed' | 'unknown' | 'revoked' | 'expired' };

/** Look a presented key up by its hash; the hash is what the index holds, so no plaintext comparison happens. */
export async function checkApiKey(db: Executor, presented: string | undefined, now: Date): Promise<KeyCheck> {
  if (!presented || !isApiKeyFormat(presented)) return { ok: false, reason: 'malformed' };
  return checkApiKeyHash(db, apiKeyHash(presented), now);
}

/** The hash a key is stored and announced under (migration 0008's notifications carry it). */
export function apiKeyHash(presented: string): string {
  return sha256HexSync(presented);
}

/** checkApiKey for a key already hashed. */
export async function checkApiKeyHash(db: Executor, keyHash: string, now: Date): Promise<KeyCheck> {
  const row = await db
    .selectFrom('api_keys')
    .select(['id', 'organization_id', 'user_id', 'scopes', 'expires_at', 'revoked_at'])
    .where('key_hash', '=', keyHash)
    .executeTakeFirst();
  if (!row) return { ok: false, reason: 'unknown' };
  // Revocation is immediate: revoked_at records when, it does not schedule (the revoker's clock may run ahead of ours).
  if (row.revoked_at) return { ok: false, reason: 'revoked' };
  if (row.expires_at && row.expires_at <= now) return { ok: false, reason: 'expired' };
  return {
    ok: true,
    organizationId: row.organization_id,
    keyId: row.id,
    userId: row.user_id,
    scopes: row.scopes.filter(isScope),
    expiresAt: row.expires_at,
  };
}
