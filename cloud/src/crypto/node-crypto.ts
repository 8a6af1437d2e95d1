import { createHash, createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { deliveryHeaders, deliveryTimestamp, formatSignatureHeader, signedPayloadHead, type SignWebhookInput } from '@sortie/contracts';

/**
 * The server's hot-path twins of contracts' hashing and signing. contracts uses Web Crypto so the
 * receiver kit runs in browsers and Deno too; in Node each Web Crypto call costs 70–170 µs against
 * 2–4 µs here (measured: docs/PERFORMANCE.md), which is paid on every API request and every delivery.
 * Tests pin both to the same outputs.
 */

/** SHA-256 hex of the UTF-8 text: what hashApiKey and hashAckToken compute. */
export function sha256HexSync(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/**
 * How many webhook secrets keep a ready HMAC key. Each endpoint signs with one secret, two while a
 * rotation overlaps; a secret that stops being used (rotated out, endpoint deleted) falls out as the
 * least recently used, so nothing has to tell the cache about rotations. Past this many endpoints
 * delivering at once the cache churns and signing costs what it did without it, no more.
 */
export const HMAC_KEY_CACHE_LIMIT = 1024;

/**
 * Secret → its HMAC KeyObject, in least-recently-used order (a Map iterates in insertion order; a hit
 * moves to the end). Building the key object (UTF-8 encode, key import) was ~3 % of the cloud's CPU
 * in the dispatch bench, paid on every signature though an endpoint's secret rarely changes. Keyed by
 * the secret text itself rather than a hash of it, as contracts' Web Crypto key cache is: hashing would
 * cost about what the cache saves, and the process already holds the secret (the KeyObject is a copy).
 */
const hmacKeys = new Map<string, KeyObject>();

/** The HMAC key of a webhook secret (its UTF-8 bytes, as contracts' signer imports it), cached. */
export function hmacKeyFor(secret: string): KeyObject {
  let key = hmacKeys.get(secret);
  if (key) {
    hmacKeys.delete(secret);
  } else {
    // As contracts' signer refuses it (checked on a miss only: a cached secret passed this already).
    if (typeof secret !== 'string' || secret.length === 0) throw new TypeError('webhook secret must be a non-empty string');
    key = createSecretKey(Buffer.from(secret, 'utf8'));
    if (hmacKeys.size >= HMAC_KEY_CACHE_LIMIT) hmacKeys.delete(hmacKeys.keys().next().value!);
  }
  hmacKeys.set(secret, key);
  return key;
}

/** How many secrets hold a cached key now (for tests of the bound). */
export function hmacKeyCacheSize(): number {
  return hmacKeys.size;
}

/** Same headers as contracts' signWebhook. */
export function signWebhookSync(input: SignWebhookInput): Record<string, string> {
  if (input.secrets.length < 1 || input.secrets.length > 2) throw new RangeError('signWebhookSync needs one or two live secrets');
  const timestamp = deliveryTimestamp(input.nowMs);
  const head = signedPayloadHead(timestamp);
  const body = typeof input.rawBody === 'string' ? Buffer.from(input.rawBody, 'utf8') : input.rawBody;
  const signatures = input.secrets.map((secret) => createHmac('sha256', hmacKeyFor(secret)).update(head).update(body).digest('hex'));
  return deliveryHeaders(input, timestamp, formatSignatureHeader(signatures));
}
