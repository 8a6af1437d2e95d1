import { base64UrlLength } from './encoding.ts';
import { randomToken, sha256Hex } from './random.ts';

/** Prefix of the one-time bearer token sent in a delivery's `ack.token`. */
export const ACK_TOKEN_PREFIX = 'cak_';
const ACK_TOKEN_BYTES = 32;
const ACK_TOKEN_RE = new RegExp(`^${ACK_TOKEN_PREFIX}[A-Za-z0-9_-]{${base64UrlLength(ACK_TOKEN_BYTES)}}$`);

/** A fresh ack token: `cak_` + 43 base64url characters (256 random bits). */
export function generateAckToken(): string {
  return randomToken(ACK_TOKEN_PREFIX, ACK_TOKEN_BYTES);
}

/** Exact shape check, so the ack endpoint can answer 404 for garbage without touching the database. */
export function isAckToken(s: unknown): s is string {
  return typeof s === 'string' && ACK_TOKEN_RE.test(s);
}

/**
 * What the service stores and looks up instead of the token: SHA-256 hex of the whole token,
 * prefix included. A plain unsalted hash is enough because the token carries 256 random bits
 * (no dictionary to attack), and it keeps lookup an indexed equality on the hash.
 */
export function hashAckToken(token: string): Promise<string> {
  return sha256Hex(token);
}
