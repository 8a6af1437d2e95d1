import { createCipheriv, createDecipheriv, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';

/**
 * Webhook signing secrets at rest. They are needed in plaintext to sign deliveries, so they cannot be
 * hashed like API keys; instead each is sealed with AES-256-GCM under the deployment key.
 *
 * Text format: `v1.<nonce>.<ciphertext‖tag>`, both parts base64url without padding. The version tag
 * lets a later key or algorithm change coexist with rows written today. The caller passes associated
 * data (the endpoint id) so a ciphertext copied onto another endpoint's row fails to open instead of
 * silently signing for the wrong endpoint.
 */

const VERSION = 'v1';
const KEY_BYTES = 32;
// 96-bit random nonces: the GCM standard size. Secrets are sealed rarely (create and rotate), far below
// the ~2^32 messages per key where random-nonce collisions become a concern.
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

export class SecretBoxError extends Error {
  override name = 'SecretBoxError';
}

// Every delivery opens a secret: turning the raw key into a KeyObject once saves that work per attempt.
const keyObjects = new WeakMap<Uint8Array, KeyObject>();

function checkKey(key: Uint8Array): KeyObject {
  if (key.length !== KEY_BYTES) throw new SecretBoxError(`secret key must be ${KEY_BYTES} bytes, got ${key.length}`);
  let keyObject = keyObjects.get(key);
  if (!keyObject) {
    keyObject = createSecretKey(key);
    keyObjects.set(key, keyObject);
  }
  return keyObject;
}

/** Encrypt `plaintext`, binding it to `associatedData`. Every call uses a fresh random nonce. */
export function sealSecret(plaintext: string, key: Uint8Array, associatedData: string): string {
  const keyObject = checkKey(key);
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv('aes-256-gcm', keyObject, nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(Buffer.from(associatedData, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return `${VERSION}.${nonce.toString('base64url')}.${body.toString('base64url')}`;
}

/**
 * Decrypt a value made by `sealSecret`. Throws SecretBoxError when the text is malformed, or when the
 * key, the associated data or any byte differs from what was sealed (GCM cannot tell these apart).
 */
export function openSecret(sealed: string, key: Uint8Array, associatedData: string): string {
  const keyObject = checkKey(key);
  const parts = sealed.split('.');
  if (parts.length !== 3 || parts[0] !== VERSION) throw new SecretBoxError('sealed secret has an unknown format or version');
  const [, noncePart = '', bodyPart = ''] = parts;
  if (!BASE64URL.test(noncePart) || !BASE64URL.test(bodyPart)) throw new SecretBoxError('sealed secret is not base64url');
  const nonce = Buffer.from(noncePart, 'base64url');
  const body = Buffer.from(bodyPart, 'base64url');
  if (nonce.length !== NONCE_BYTES || body.length < TAG_BYTES) throw new SecretBoxError('sealed secret is truncated');

  // authTagLength pins the tag at 16 bytes: without it Node would accept a truncated (weaker) tag.
  const decipher = createDecipheriv('aes-256-gcm', keyObject, nonce, { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(associatedData, 'utf8'));
  decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretBoxError('sealed secret failed authentication (wrong key, wrong endpoint, or altered)');
  }
}

/**
 * openSecret remembering what it opened, for the delivery worker: decrypting (AES-GCM, a fresh cipher
 * each time) cost more per attempt than signing did. Keyed by the sealed text, which a rotation
 * replaces, so a rotated secret is never served from the cache; cleared whole when `max` is reached.
 */
export function cachedSecretOpener(max = 1024): typeof openSecret {
  const opened = new Map<string, string>();
  return (sealed, key, associatedData) => {
    const cacheKey = `${associatedData}\n${sealed}`;
    let secret = opened.get(cacheKey);
    if (secret === undefined) {
      secret = openSecret(sealed, key, associatedData);
      if (opened.size >= max) opened.clear();
      opened.set(cacheKey, secret);
    }
    return secret;
  };
}
