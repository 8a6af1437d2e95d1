import { randomBytes } from 'node:crypto';
import { generateWebhookSecret } from '@sortie/contracts';
import { describe, expect, it } from 'vitest';
import { cachedSecretOpener, openSecret, sealSecret, SecretBoxError } from './secret-box.ts';

const key = new Uint8Array(randomBytes(32));
const endpointId = '3f1c7a52-7c4e-4b7e-9d0a-2b9f1e0c5d11';

/** Flip one bit of the decoded byte at `index` inside part `part` of the sealed text. */
function flipBit(sealed: string, part: 1 | 2, index: number): string {
  const parts = sealed.split('.');
  const bytes = Buffer.from(parts[part]!, 'base64url');
  bytes[index] = bytes[index]! ^ 0x01;
  parts[part] = bytes.toString('base64url');
  return parts.join('.');
}

describe('secret box', () => {
  it('round-trips a secret and never contains the plaintext', () => {
    const secret = generateWebhookSecret();
    const sealed = sealSecret(secret, key, endpointId);
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain(secret);
    expect(sealed).not.toContain(secret.slice('whsec_'.length, 20));
    expect(openSecret(sealed, key, endpointId)).toBe(secret);
  });

  it('uses a fresh nonce for every encryption', () => {
    const a = sealSecret('whsec_same', key, endpointId);
    const b = sealSecret('whsec_same', key, endpointId);
    expect(a.split('.')[1]).not.toBe(b.split('.')[1]);
    expect(a).not.toBe(b);
  });

  it('refuses a tampered ciphertext, tag or nonce', () => {
    const sealed = sealSecret(generateWebhookSecret(), key, endpointId);
    const bodyLength = Buffer.from(sealed.split('.')[2]!, 'base64url').length;
    expect(() => openSecret(flipBit(sealed, 2, 0), key, endpointId)).toThrow(SecretBoxError);
    expect(() => openSecret(flipBit(sealed, 2, bodyLength - 1), key, endpointId)).toThrow(SecretBoxError);
    expect(() => openSecret(flipBit(sealed, 1, 0), key, endpointId)).toThrow(SecretBoxError);
  });

  it('refuses a ciphertext moved to another endpoint (associated data)', () => {
    const sealed = sealSecret(generateWebhookSecret(), key, endpointId);
    expect(() => openSecret(sealed, key, '00000000-0000-4000-8000-000000000000')).toThrow(/failed authentication/);
  });

  it('refuses the wrong key', () => {
    const sealed = sealSecret(generateWebhookSecret(), key, endpointId);
    const other = new Uint8Array(randomBytes(32));
    expect(() => openSecret(sealed, other, endpointId)).toThrow(/failed authentication/);
  });

  it('refuses malformed text: unknown version, truncated tag, bad encoding', () => {
    const sealed = sealSecret(generateWebhookSecret(), key, endpointId);
    const [, nonce, body] = sealed.split('.');
    expect(() => openSecret(`v2.${nonce}.${body}`, key, endpointId)).toThrow(/version/);
    expect(() => openSecret(`v1.${nonce}.${body!.slice(0, 10)}`, key, endpointId)).toThrow(/truncated/);
    // A tag cut to 12 bytes must not be accepted as a weaker tag.
    const shortTag = Buffer.from(body!, 'base64url').subarray(0, -4).toString('base64url');
    expect(() => openSecret(`v1.${nonce}.${shortTag}`, key, endpointId)).toThrow(SecretBoxError);
    expect(() => openSecret(`v1.${nonce}.${body}=`, key, endpointId)).toThrow(/base64url/);
    expect(() => openSecret('whsec_plaintext', key, endpointId)).toThrow(SecretBoxError);
  });

  it('insists on a 32-byte key', () => {
    expect(() => sealSecret('x', new Uint8Array(16), endpointId)).toThrow(/32 bytes/);
  });
});

describe('cachedSecretOpener', () => {
  it('answers what openSecret answers, a rotated secret included, and still refuses what openSecret refuses', () => {
    const open = cachedSecretOpener(2);
    const first = generateWebhookSecret();
    const sealedFirst = sealSecret(first, key, endpointId);
    expect(open(sealedFirst, key, endpointId)).toBe(first);
    expect(open(sealedFirst, key, endpointId)).toBe(first);
    const rotated = generateWebhookSecret();
    expect(open(sealSecret(rotated, key, endpointId), key, endpointId)).toBe(rotated);
    // The same sealed text under another endpoint's id is another cache entry, and fails authentication.
    expect(() => open(sealedFirst, key, '00000000-0000-4000-8000-000000000000')).toThrow(SecretBoxError);
    // Past `max` the cache starts over and keeps answering correctly.
    const third = generateWebhookSecret();
    expect(open(sealSecret(third, key, endpointId), key, endpointId)).toBe(third);
    expect(open(sealedFirst, key, endpointId)).toBe(first);
  });
});
