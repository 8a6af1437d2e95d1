import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { randomToken, sha256Hex } from './random.ts';

describe('randomToken', () => {
  it('is the prefix plus unpadded base64url of the requested byte count', () => {
    for (const [bytes, chars] of [[1, 2], [2, 3], [3, 4], [16, 22], [32, 43], [33, 44]] as const) {
      const t = randomToken('p_', bytes);
      expect(t.startsWith('p_')).toBe(true);
      expect(t.slice(2)).toMatch(new RegExp(`^[A-Za-z0-9_-]{${chars}}$`));
    }
    expect(randomToken('x_')).toHaveLength(2 + 43);
  });

  it('decodes back to the requested number of bytes (checked with an independent decoder)', () => {
    for (const bytes of [1, 2, 3, 31, 32, 100]) {
      expect(Buffer.from(randomToken('', bytes), 'base64url')).toHaveLength(bytes);
    }
  });

  it('does not repeat over many draws and uses the whole alphabet', () => {
    const seen = new Set<string>();
    const alphabet = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      const t = randomToken('', 32);
      seen.add(t);
      for (const c of t) alphabet.add(c);
    }
    expect(seen.size).toBe(5000);
    expect(alphabet.size).toBe(64);
  });

  it('refuses nonsense byte counts', () => {
    for (const bad of [0, -1, 1.5, 65_537, Number.NaN]) expect(() => randomToken('p_', bad)).toThrow(RangeError);
  });
});

describe('sha256Hex', () => {
  it('matches known answers', async () => {
    // printf %s abc | sha256sum
    expect(await sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    // printf %s '' | sha256sum
    expect(await sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('hashes the UTF-8 bytes of a string, and bytes as given', async () => {
    const text = 'Z\u00fcrich \u2708';
    const expected = createHash('sha256').update(text, 'utf8').digest('hex');
    expect(await sha256Hex(text)).toBe(expected);
    expect(await sha256Hex(new TextEncoder().encode(text))).toBe(expected);
  });
});
