import { sha256Hex } from './random.ts';
import { tokenFormat } from './token-format.ts';

export const API_KEY_PREFIX = 'sk_';
/** The HTTP header, and the gRPC metadata entry, that carries an API key. */
export const API_KEY_HEADER = 'x-api-key';
const API_KEY = tokenFormat(API_KEY_PREFIX, 32);

/** A fresh API key: `sk_` + 43 base64url characters (256 random bits). Shown once, never stored. */
export function generateApiKey(): string {
  return API_KEY.generate();
}

/** Shape check only; lets the auth middleware answer 401 for malformed keys before any lookup. */
export function isApiKeyFormat(s: unknown): s is string {
  return API_KEY.matches(s);
}

/**
 * SHA-256 hex of the whole key, prefix included: what the service stores and looks up.
 * No salt or slow KDF: the key is 256 random bits, so there is nothing to brute-force,
 * and a deterministic hash is what makes the lookup a single indexed equality.
 */
export function hashApiKey(key: string): Promise<string> {
  return sha256Hex(key);
}
