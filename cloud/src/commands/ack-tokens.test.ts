import { ACK_TOKEN_PREFIX, isAckToken } from '@sortie/contracts';
import { describe, expect, it } from 'vitest';
import { mintAckToken, verifyAckToken } from './ack-tokens.ts';

const key = new Uint8Array(32).fill(7);
const otherKey = new Uint8Array(32).fill(8);
const command = '0193a5c4-6f2e-7c1a-9b3d-2f4e5a6b7c8d';
const deadline = new Date('2026-12-07T14:00:00.123Z');
/** base64url's characters in value order (RFC 4648 §5). */
const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

describe('ack tokens that prove themselves', () => {
  it('have the spec form and verify for their command and deadline', () => {
    const token = mintAckToken(key, command, deadline);
    expect(isAckToken(token)).toBe(true);
    expect(verifyAckToken(key, token, command, deadline)).toBe(true);
  });

  it('are fresh every time: two deliveries of one command carry different tokens', () => {
    expect(mintAckToken(key, command, deadline)).not.toBe(mintAckToken(key, command, deadline));
  });

  it('do not verify for another command, another deadline or another deployment key', () => {
    const token = mintAckToken(key, command, deadline);
    expect(verifyAckToken(key, token, '0193a5c4-6f2e-7c1a-9b3d-2f4e5a6b7c8e', deadline)).toBe(false);
    expect(verifyAckToken(key, token, command, new Date(deadline.getTime() + 1))).toBe(false);
    expect(verifyAckToken(otherKey, token, command, deadline)).toBe(false);
  });

  it('read the command id case-insensitively, as PostgreSQL does', () => {
    expect(verifyAckToken(key, mintAckToken(key, command.toUpperCase(), deadline), command, deadline)).toBe(true);
  });

  it('fail with any one character changed', () => {
    const token = mintAckToken(key, command, deadline);
    for (let i = ACK_TOKEN_PREFIX.length; i < token.length; i++) {
      const swapped = alphabet[(alphabet.indexOf(token[i]!) + 1) % alphabet.length]!;
      expect(verifyAckToken(key, token.slice(0, i) + swapped + token.slice(i + 1), command, deadline), `character ${i}`).toBe(false);
    }
  });

  // 32 bytes take 43 base64url characters, the last carrying two spare bits: Buffer decodes four
  // spellings to the same bytes. Only the canonical one is the token, or a spent token could be spent
  // again under another spelling (its spent-hash is of the text).
  it('accept only the canonical spelling of their bytes', () => {
    const token = mintAckToken(key, command, deadline);
    const last = alphabet.indexOf(token.at(-1)!);
    const variants = [1, 2, 3].map((spare) => token.slice(0, -1) + alphabet[(last & ~3) | ((last + spare) & 3)]!);
    for (const variant of variants) {
      expect(Buffer.from(variant.slice(ACK_TOKEN_PREFIX.length), 'base64url')).toEqual(Buffer.from(token.slice(ACK_TOKEN_PREFIX.length), 'base64url'));
      expect(verifyAckToken(key, variant, command, deadline)).toBe(false);
    }
  });

  it('refuse what is not a token at all', () => {
    for (const bad of ['', 'cak_', 'garbage', `cak_${'A'.repeat(43)}`, `cak_${'A'.repeat(44)}`, `cap_${mintAckToken(key, command, deadline).slice(4)}`]) {
      expect(verifyAckToken(key, bad, command, deadline)).toBe(false);
    }
  });
});
