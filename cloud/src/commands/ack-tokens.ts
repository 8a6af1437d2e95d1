import { ACK_TOKEN_PREFIX, isAckToken } from '@sortie/contracts';
import { createHmac, createSecretKey, hkdfSync, randomFillSync, timingSafeEqual, type KeyObject } from 'node:crypto';
import { sql } from 'kysely';
import { sha256HexSync } from '../crypto/node-crypto.ts';
import type { Executor } from '../db/executor.ts';

/**
 * Ack tokens are made here, beside the ack that verifies them (ack.ts): the token's form, what it proves
 * and when it is spent are decided in one folder.
 *
 * A token proves itself: `cak_` + 32 bytes in base64url, a 12-byte random nonce and the first 20 bytes
 * of HMAC-SHA256(key, label ‖ command id ‖ ack deadline ‖ nonce), under a key derived from the
 * deployment's secret key. So nothing is written when a delivery carries one — every delivery carries
 * its own token, and the service stores none of them (the spec's "appears nowhere else and is not
 * stored by the service"). The ack recomputes the MAC from the command row it locks: a token is valid
 * only for that command and only for the deadline it was dispatched with, and it expires with it.
 * Single use is kept by storing the SHA-256 of a token when it is spent (`ack_tokens`, one row per
 * ack, not per delivery); a second use finds that row.
 *
 * Tokens minted before tokens proved themselves were stored as hashes with `used_at` null; those are
 * still accepted until their deadline (at most an hour), by the stored-hash path in spendAckToken.
 */

const NONCE_BYTES = 12;
const MAC_BYTES = 20;
const LABEL = Buffer.from('sortie ack token v1\0', 'utf8');

/**
 * The deployment key → the ack-token key (HKDF-SHA256, its own label), derived once per key and kept as
 * a KeyObject: createHmac given raw bytes checks and imports them on every call, which cost more than the
 * HMAC itself (a profile of the dispatch bench: ~20 µs a token).
 */
const derivedKeys = new WeakMap<Uint8Array, KeyObject>();

function ackKey(secretKey: Uint8Array): KeyObject {
  let key = derivedKeys.get(secretKey);
  if (!key) {
    key = createSecretKey(Buffer.from(hkdfSync('sha256', secretKey, Buffer.alloc(0), 'sortie/ack-token/v1', 32)));
    derivedKeys.set(secretKey, key);
  }
  return key;
}

/**
 * Nonces come from the CSPRNG a pool at a time, as crypto.randomUUID's do: one getrandom call per 4 KiB
 * rather than one (~10 µs) per token. Each nonce is handed out once.
 */
const noncePool = Buffer.alloc(NONCE_BYTES * 341);
let nonceAt = noncePool.length;

function nextNonce(): Buffer {
  if (nonceAt + NONCE_BYTES > noncePool.length) {
    randomFillSync(noncePool);
    nonceAt = 0;
  }
  nonceAt += NONCE_BYTES;
  return noncePool.subarray(nonceAt - NONCE_BYTES, nonceAt);
}

function mac(secretKey: Uint8Array, commandId: string, deadline: Date, nonce: Uint8Array): Buffer {
  const at = Buffer.alloc(8);
  at.writeBigInt64BE(BigInt(deadline.getTime()));
  // A UUID's text is case-insensitive; its canonical form is lower case (what PostgreSQL returns).
  return createHmac('sha256', ackKey(secretKey)).update(LABEL).update(commandId.toLowerCase(), 'utf8').update(at).update(nonce).digest().subarray(0, MAC_BYTES);
}

/** A fresh one-time token for `commandId`, valid until `deadline` (the command's ack deadline). */
export function mintAckToken(secretKey: Uint8Array, commandId: string, deadline: Date): string {
  const nonce = nextNonce();
  return ACK_TOKEN_PREFIX + Buffer.concat([nonce, mac(secretKey, commandId, deadline, nonce)]).toString('base64url');
}

/**
 * Whether `token` was minted by this deployment for `commandId` with `deadline`. Only the canonical
 * spelling passes: base64url's last character carries two spare bits, and a second spelling of the same
 * bytes would otherwise be a second token with its own spent-hash.
 */
export function verifyAckToken(secretKey: Uint8Array, token: string, commandId: string, deadline: Date): boolean {
  if (!isAckToken(token)) return false;
  const text = token.slice(ACK_TOKEN_PREFIX.length);
  const bytes = Buffer.from(text, 'base64url');
  if (bytes.length !== NONCE_BYTES + MAC_BYTES || bytes.toString('base64url') !== text) return false;
  const nonce = bytes.subarray(0, NONCE_BYTES);
  return timingSafeEqual(bytes.subarray(NONCE_BYTES), mac(secretKey, commandId, deadline, nonce));
}

/**
 * Spend `token` for the command, in the caller's transaction: true once, false for a token that is
 * spent, expired, wrong or another command's. `command` is the command's row as locked by the caller.
 */
export async function spendAckToken(
  tx: Executor,
  input: { secretKey: Uint8Array; token: string; command: { id: string; ack_deadline_at: Date | null }; now: Date },
): Promise<boolean> {
  const { token, command, now } = input;
  const hash = sha256HexSync(token);
  const deadline = command.ack_deadline_at;
  if (deadline && verifyAckToken(input.secretKey, token, command.id, deadline)) {
    if (deadline <= now) return false;
    const spent = await sql`
      insert into ack_tokens (token_hash, command_id, expires_at, used_at) values (${hash}, ${command.id}, ${deadline}, ${now})
      on conflict (token_hash) do nothing
      returning token_hash`.execute(tx);
    return spent.rows.length === 1;
  }
  // A token stored as a hash when it was minted (before tokens proved themselves).
  const stored = await tx
    .updateTable('ack_tokens')
    .set({ used_at: now })
    .where('token_hash', '=', hash)
    .where('command_id', '=', command.id)
    .where('used_at', 'is', null)
    .where('expires_at', '>', now)
    .returning('token_hash')
    .executeTakeFirst();
  return stored !== undefined;
}

/** How long past its deadline a token's row is kept: more than any clock skew between cloud processes. */
export const SPENT_TOKEN_KEPT_MS = 3_600_000;
/** Rows deleted per prune at most, so a table grown by an earlier version shrinks over a few sweeps. */
const PRUNE_BATCH = 10_000;

/**
 * Delete token rows past their deadline by SPENT_TOKEN_KEPT_MS: a spent token's hash (an ack past the
 * deadline is refused before the table is read) and a stored hash of an earlier version, spent or not
 * (refused past `expires_at`). Before tokens proved themselves every delivery left a row here and
 * nothing deleted them. Returns how many went.
 */
export async function pruneExpiredAckTokens(db: Executor, now: Date): Promise<number> {
  const result = await sql`
    delete from ack_tokens where token_hash in (
      select token_hash from ack_tokens where expires_at < ${new Date(now.getTime() - SPENT_TOKEN_KEPT_MS)} limit ${PRUNE_BATCH}
    )`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}
