import { sha256Hex } from './random.ts';
import { tokenFormat } from './token-format.ts';

/** Prefix of the one-time bearer token sent in a delivery's `ack.token`. */
export const ACK_TOKEN_PREFIX = 'cak_';
const ACK_TOKEN = tokenFormat(ACK_TOKEN_PREFIX, 32);

/**
 * A random token of the ack token's form: `cak_` + 43 base64url characters (256 random bits). The service
 * no longer issues these: its tokens are a nonce and a MAC of the same form, which it checks without
 * storing them (cloud/src/commands/ack-tokens.ts). Earlier versions issued random ones and stored their hash.
 */
export function generateAckToken(): string {
  return ACK_TOKEN.generate();
}

/** Exact shape check (either kind), so the ack endpoint can answer 404 for garbage without touching the database. */
export function isAckToken(s: unknown): s is string {
  return ACK_TOKEN.matches(s);
}

/**
 * What the service stores of a token once it is spent (and stored of every token it issued, in earlier
 * versions): SHA-256 hex of the whole token, prefix included. A plain unsalted hash is enough because no
 * token can be guessed (256 random bits, or a nonce and a MAC under the deployment's key: no dictionary
 * to attack), and it keeps lookup an indexed equality on the hash.
 */
export function hashAckToken(token: string): Promise<string> {
  return sha256Hex(token);
}
