import { generateAckToken, hashAckToken } from '@sortie/contracts';
import { sql, type RawBuilder } from 'kysely';
import { sha256HexSync } from '../crypto/node-crypto.ts';
import type { Executor } from '../db/executor.ts';

/**
 * Ack tokens (`ack_tokens`) are made here, beside the ack that verifies them (ack.ts): the token's form,
 * its hash and its lifetime are decided in one folder. Each delivery carries its own token; only the hash
 * is stored, so the token exists nowhere but in that delivery body. Delivery asks for a token per attempt
 * (newAckToken) and has its hash stored by the statements below, composed into its own.
 */

/** A fresh token and the hash that is stored for it. */
export function newAckToken(): { token: string; hash: string } {
  const token = generateAckToken();
  return { token, hash: sha256HexSync(token) };
}

/** Mint a one-time ack token for a command, valid until its ack deadline. */
export async function mintAckToken(db: Executor, commandId: string, expiresAt: Date): Promise<string> {
  const token = generateAckToken();
  await db.insertInto('ack_tokens').values({ token_hash: await hashAckToken(token), command_id: commandId, expires_at: expiresAt }).execute();
  return token;
}

/**
 * The dispatch statement's tokens (a CTE body): the hashes `hashes` for the command the CTE `moved` queued,
 * valid until its deadline, at most one per row of the CTE `endpoints` (a guess too high stores no extra).
 */
export function mintDispatchTokens(hashes: readonly string[], deadline: Date): RawBuilder<unknown> {
  return sql`
        insert into ack_tokens (token_hash, command_id, expires_at)
        select t.hash, m.id, ${deadline}::timestamptz
        from moved m cross join unnest(${hashes}::text[]) with ordinality as t(hash, n)
        where t.n <= (select count(*) from endpoints)`;
}

/**
 * The lease statement's tokens (a CTE body): for each row of the CTE `leased` (command_id, token_hash),
 * its hash when the command is still queued and before its deadline, valid until that deadline.
 * Returns the hashes stored.
 */
export function mintLeaseTokens(now: Date): RawBuilder<unknown> {
  return sql`
      insert into ack_tokens (token_hash, command_id, expires_at)
      select l.token_hash, c.id, c.ack_deadline_at
      from leased l join commands c on c.id = l.command_id
      where c.status = 'queued' and c.ack_deadline_at > ${now}
      returning token_hash`;
}
