import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ACK_TOKEN_PREFIX, generateAckToken, hashAckToken, isAckToken } from './ack-token.ts';
import { API_KEY_PREFIX, generateApiKey, hashApiKey, isApiKeyFormat } from './api-key.ts';
import { WEBHOOK_SECRET_PREFIX, generateWebhookSecret, isWebhookSecret } from './webhook-secret.ts';
import * as barrel from './index.ts';

const kinds = [
  { name: 'ack token', prefix: ACK_TOKEN_PREFIX, expectedPrefix: 'cak_', generate: generateAckToken, check: isAckToken },
  { name: 'webhook secret', prefix: WEBHOOK_SECRET_PREFIX, expectedPrefix: 'whsec_', generate: generateWebhookSecret, check: isWebhookSecret },
  { name: 'API key', prefix: API_KEY_PREFIX, expectedPrefix: 'sk_', generate: generateApiKey, check: isApiKeyFormat },
] as const;

for (const k of kinds) {
  describe(k.name, () => {
    it(`prefix is ${k.expectedPrefix}`, () => {
      expect(k.prefix).toBe(k.expectedPrefix);
    });

    it('generates prefix + 43 base64url characters carrying 32 bytes, and recognises its own output', () => {
      const t = k.generate();
      expect(t).toMatch(new RegExp(`^${k.expectedPrefix}[A-Za-z0-9_-]{43}$`));
      expect(Buffer.from(t.slice(k.expectedPrefix.length), 'base64url')).toHaveLength(32);
      expect(k.check(t)).toBe(true);
    });

    it('never repeats over many draws', () => {
      const seen = new Set(Array.from({ length: 2000 }, () => k.generate()));
      expect(seen.size).toBe(2000);
    });

    it('rejects anything not of the exact shape', () => {
      const good = k.generate();
      const body = good.slice(k.expectedPrefix.length);
      const others = kinds.filter((o) => o.expectedPrefix !== k.expectedPrefix).map((o) => o.generate());
      const bad: unknown[] = [
        '',
        k.expectedPrefix,
        body, // no prefix
        good.slice(0, -1), // 42 chars
        good + 'A', // 44 chars
        good.slice(0, -1) + '=', // padding / non-alphabet
        good.slice(0, -1) + '+', // standard base64, not url-safe
        good.slice(0, -1) + '/',
        ` ${good}`,
        `${good}\n`,
        k.expectedPrefix.toUpperCase() + body,
        ...others, // another kind's prefix
        undefined,
        null,
        42,
        { toString: () => good },
      ];
      for (const b of bad) expect(k.check(b), JSON.stringify(String(b))).toBe(false);
    });
  });
}

describe('hashes', () => {
  it('hashAckToken and hashApiKey are SHA-256 hex of the whole token, prefix included', async () => {
    // printf %s abc | sha256sum
    expect(await hashAckToken('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(await hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    const t = generateAckToken();
    expect(await hashAckToken(t)).toBe(createHash('sha256').update(t).digest('hex'));
    const k = generateApiKey();
    expect(await hashApiKey(k)).toBe(createHash('sha256').update(k).digest('hex'));
    expect(await hashApiKey(k)).not.toBe(await hashApiKey(k.slice(API_KEY_PREFIX.length)));
  });

  it('are deterministic and distinct for distinct tokens', async () => {
    const a = generateAckToken();
    const b = generateAckToken();
    expect(await hashAckToken(a)).toBe(await hashAckToken(a));
    expect(await hashAckToken(a)).not.toBe(await hashAckToken(b));
    expect(await hashAckToken(a)).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('barrel', () => {
  it('re-exports the public names', () => {
    expect(Object.keys(barrel).sort()).toEqual(
      [
        'ACK_TOKEN_PREFIX',
        'API_KEY_HEADER',
        'API_KEY_PREFIX',
        'WEBHOOK_SECRET_PREFIX',
        'generateAckToken',
        'generateApiKey',
        'generateWebhookSecret',
        'hashAckToken',
        'hashApiKey',
        'isAckToken',
        'isApiKeyFormat',
        'isWebhookSecret',
        'randomToken',
        'sha256Hex',
        'timingSafeEqual',
        'timingSafeEqualString',
      ].sort(),
    );
  });
});
