import { base64UrlLength } from './encoding.ts';
import { randomToken, sha256Hex } from './random.ts';

export const API_KEY_PREFIX = 'sk_';
const API_KEY_BYTES = 32;
const API_KEY_RE = new RegExp(`^${API_KEY_PREFIX}[A-Za-z0-9_-]{${base64UrlLength(API_KEY_BYTES)}}$`);

/** A fresh API key: `sk_` + 43 base64url characters (256 random bits). Shown once, never stored. */
export function generateApiKey(): string {
  return randomToken(API_KEY_PREFIX, API_KEY_BYTES);
}

/** Shape check only; lets the auth middleware answer 401 for malformed keys before any lookup. */
export function isApiKeyFormat(s: unknown): s is string {
  return typeof s === 'string' && API_KEY_RE.test(s);
}

/**
 * SHA-256 hex of the whole key, prefix included: what the service stores and looks up.
 * No salt or slow KDF: the key is 256 random bits, so there is nothing to brute-force,
 * and a deterministic hash is what makes the lookup a single indexed equality.
 */
export function hashApiKey(key: string): Promise<string> {
  return sha256Hex(key);
}
