import { sha256Hex } from './random.ts';
import { tokenFormat } from './token-format.ts';

/** Prefix of the one-time bearer token sent in a delivery's `ack.token`. */
export const ACK_TOKEN_PREFIX = 'cak_';
const ACK_TOKEN = tokenFormat(ACK_TOKEN_PREFIX, 32);

/** A fresh ack token: `cak_` + 43 base64url characters (256 random bits). */
export function generateAckToken(): string {
  return ACK_TOKEN.generate();
}

/** Exact shape check, so the ack endpoint can answer 404 for garbage without touching the database. */
export function isAckToken(s: unknown): s is string {
  return ACK_TOKEN.matches(s);
}

/**
 * What the service stores and looks up instead of the token: SHA-256 hex of the whole token,
 * prefix included. A plain unsalted hash is enough because the token carries 256 random bits
 * (no dictionary to attack), and it keeps lookup an indexed equality on the hash.
 */
export function hashAckToken(token: string): Promise<string> {
  return sha256Hex(token);
}
