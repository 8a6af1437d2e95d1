import { describe, expect, it } from 'vitest';
import { timingSafeEqual, timingSafeEqualString } from './timing-safe-equal.ts';

const bytes = (...b: number[]) => new Uint8Array(b);

describe('timingSafeEqual', () => {
  it('is true only for identical content and length', () => {
    expect(timingSafeEqual(bytes(), bytes())).toBe(true);
    expect(timingSafeEqual(bytes(1, 2, 3), bytes(1, 2, 3))).toBe(true);
    expect(timingSafeEqual(bytes(1, 2, 3), bytes(1, 2, 4))).toBe(false);
    expect(timingSafeEqual(bytes(0, 2, 3), bytes(1, 2, 3))).toBe(false);
    expect(timingSafeEqual(bytes(255), bytes(254))).toBe(false);
  });

  it('is false on a length mismatch, including when one side is a prefix or all zeros', () => {
    expect(timingSafeEqual(bytes(1, 2, 3), bytes(1, 2))).toBe(false);
    expect(timingSafeEqual(bytes(1, 2), bytes(1, 2, 3))).toBe(false);
    expect(timingSafeEqual(bytes(0, 0), bytes(0, 0, 0))).toBe(false);
    expect(timingSafeEqual(bytes(0), bytes())).toBe(false);
    expect(timingSafeEqual(bytes(), bytes(0))).toBe(false);
  });

  it('detects a difference at every position', () => {
    const a = crypto.getRandomValues(new Uint8Array(64));
    for (let i = 0; i < a.length; i++) {
      const b = a.slice();
      b[i] = b[i]! ^ 0x80;
      expect(timingSafeEqual(a, b)).toBe(false);
    }
    expect(timingSafeEqual(a, a.slice())).toBe(true);
  });
});

describe('timingSafeEqualString', () => {
  it('compares UTF-8 bytes', () => {
    expect(timingSafeEqualString('cak_abc', 'cak_abc')).toBe(true);
    expect(timingSafeEqualString('cak_abc', 'cak_abd')).toBe(false);
    expect(timingSafeEqualString('caf\u00e9', 'cafe\u0301')).toBe(false);
    expect(timingSafeEqualString('', '')).toBe(true);
    expect(timingSafeEqualString('a', '')).toBe(false);
  });
});
