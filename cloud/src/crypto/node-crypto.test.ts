import { hashAckToken, hashApiKey, signWebhook, verifyWebhook } from '@sortie/contracts';
import { describe, expect, it } from 'vitest';
import { sha256HexSync, signWebhookSync } from './node-crypto.ts';

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

  it('refuses zero or three secrets', () => {
    const base = { eventType: 'e', deliveryId: 'd', rawBody: '{}' };
    expect(() => signWebhookSync({ ...base, secrets: [] })).toThrow(RangeError);
    expect(() => signWebhookSync({ ...base, secrets: ['a', 'b', 'c'] })).toThrow(RangeError);
  });
});
