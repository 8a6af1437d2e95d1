import { randomBytes, randomInt } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { base64UrlEncode, base64UrlLength, bytesToHex, hexToBytes } from './encoding.ts';

describe('encodings agree with Node Buffer on random input', () => {
  it('base64url and hex', () => {
    for (let i = 0; i < 500; i++) {
      const b = randomBytes(randomInt(0, 70));
      const u = new Uint8Array(b);
      expect(base64UrlEncode(u)).toBe(b.toString('base64url'));
      expect(base64UrlEncode(u)).toHaveLength(base64UrlLength(u.length));
      expect(bytesToHex(u)).toBe(b.toString('hex'));
      expect(hexToBytes(b.toString('hex'))).toEqual(u);
      expect(hexToBytes(b.toString('hex').toUpperCase())).toEqual(u);
    }
  });

  it('hexToBytes refuses odd length and non-hex', () => {
    for (const bad of ['a', 'abc', 'zz', '0x00', ' 00', '00 ', 'g0']) expect(hexToBytes(bad)).toBeNull();
    expect(hexToBytes('')).toEqual(new Uint8Array());
  });
});
