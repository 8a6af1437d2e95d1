import { createHmac } from 'node:crypto';
import { deliveryTimestamp, formatSignatureHeader, hashAckToken, hashApiKey, signedPayloadHead, signWebhook, verifyWebhook, WEBHOOK_HEADERS } from '@sortie/contracts';
import { describe, expect, it } from 'vitest';
import { HMAC_KEY_CACHE_LIMIT, hmacKeyCacheSize, hmacKeyFor, sha256HexSync, signWebhookSync } from './node-crypto.ts';

describe('node:crypto twins of the contracts functions', () => {
  it('hash exactly like hashApiKey and hashAckToken', async () => {
    for (const text of ['sk_abc', 'cak_' + 'x'.repeat(43), 'ünïcødé ✓', '']) {
      expect(sha256HexSync(text)).toBe(await hashApiKey(text));
      expect(sha256HexSync(text)).toBe(await hashAckToken(text));
    }
  });

  it('sign exactly like signWebhook, with one and with two secrets, for string and byte bodies', async () => {
    const cases = [
      { secrets: ['whsec_one'], rawBody: '{"a":"ü"}' },
      { secrets: ['whsec_new', 'whsec_old'], rawBody: new TextEncoder().encode('{"eventType":"command.dispatched"}') },
    ];
    for (const c of cases) {
      const input = { ...c, eventType: 'command.dispatched', deliveryId: 'job.3', nowMs: 1_795_000_000_123 };
      const fast = signWebhookSync(input);
      expect(fast).toEqual(await signWebhook(input));
      await expect(verifyWebhook(c.rawBody, fast, c.secrets[0]!, { now: () => input.nowMs })).resolves.toBeDefined();
    }
  });

  it('refuses zero or three secrets, and an empty one as signWebhook does', async () => {
    const base = { eventType: 'e', deliveryId: 'd', rawBody: '{}' };
    expect(() => signWebhookSync({ ...base, secrets: [''] })).toThrow(TypeError);
    await expect(signWebhook({ ...base, secrets: [''] })).rejects.toThrow(TypeError);
    expect(() => signWebhookSync({ ...base, secrets: [] })).toThrow(RangeError);
    expect(() => signWebhookSync({ ...base, secrets: ['a', 'b', 'c'] })).toThrow(RangeError);
  });

  describe('the cached HMAC key per secret', () => {
    /** The signature header as computed before the cache: a fresh key from the secret's bytes each time. */
    const uncached = (secrets: string[], rawBody: string, nowMs: number) => {
      const head = signedPayloadHead(deliveryTimestamp(nowMs));
      return formatSignatureHeader(secrets.map((s) => createHmac('sha256', Buffer.from(s, 'utf8')).update(head).update(rawBody).digest('hex')));
    };
    const secrets = ['whsec_a', 'whsec_b', 'whsec_' + 'z'.repeat(64), 'ünïcødé ✓ secret', 'whsec_a ', 'x'];

    it('signs byte-identically to an uncached key and to the Web Crypto signer, however often a secret repeats', async () => {
      for (let round = 0; round < 3; round++) {
        for (const [i, secret] of secrets.entries()) {
          const pair = [secret, secrets[(i + 1) % secrets.length]!];
          for (const live of [[secret], pair]) {
            const input = { secrets: live, eventType: 'command.dispatched', deliveryId: `job.${i}`, rawBody: `{"n":${round}}`, nowMs: 1_795_000_000_000 + round };
            const fast = signWebhookSync(input);
            expect(fast[WEBHOOK_HEADERS.signature]).toBe(uncached(live, input.rawBody, input.nowMs));
            expect(fast).toEqual(await signWebhook(input));
          }
        }
      }
    });

    it('reuses one key object per secret, and stays within its bound as secrets come and go', () => {
      expect(hmacKeyFor('whsec_reused')).toBe(hmacKeyFor('whsec_reused'));
      expect(hmacKeyFor('whsec_reused')).not.toBe(hmacKeyFor('whsec_other'));
      for (let i = 0; i < HMAC_KEY_CACHE_LIMIT + 50; i++) hmacKeyFor(`whsec_rotated_${i}`);
      expect(hmacKeyCacheSize()).toBe(HMAC_KEY_CACHE_LIMIT);
      // The oldest fell out; signing with it again builds a fresh key that still signs the same.
      const input = { secrets: ['whsec_rotated_0'], eventType: 'e', deliveryId: 'd', rawBody: '{}', nowMs: 1_795_000_000_000 };
      expect(signWebhookSync(input)[WEBHOOK_HEADERS.signature]).toBe(uncached(input.secrets, input.rawBody, input.nowMs));
      expect(hmacKeyCacheSize()).toBe(HMAC_KEY_CACHE_LIMIT);
    });
  });
});
