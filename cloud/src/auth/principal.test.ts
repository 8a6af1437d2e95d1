import { describe, expect, it } from 'vitest';
import { ServiceError } from '../platform/errors.ts';
import type { KeyCheck } from './api-keys.ts';
import { admit, keyRejected, principalFrom } from './principal.ts';

const NOW = new Date('2026-01-01T00:00:00Z');
const accepted = (over: Partial<Extract<KeyCheck, { ok: true }>> = {}): KeyCheck => ({
  ok: true,
  organizationId: 'org',
  keyId: 'key',
  userId: null,
  scopes: ['telemetry:read'],
  expiresAt: null,
  ...over,
});

function refusal(run: () => void): [string, string] {
  try {
    run();
  } catch (error) {
    if (error instanceof ServiceError) return [error.code, error.message];
    throw error;
  }
  throw new Error('admitted');
}

describe('keyRejected', () => {
  // The texts clients see; each protocol names its own way of sending the key.
  it('tells each protocol how to send a missing key', () => {
    expect(keyRejected('malformed', 'header').message).toBe('missing or malformed API key (send it as x-api-key)');
    expect(keyRejected('malformed', 'metadata').message).toBe('missing or malformed API key (send it as x-api-key metadata)');
  });

  it('words the other reasons the same on both protocols', () => {
    for (const carrier of ['header', 'metadata'] as const) {
      expect(keyRejected('unknown', carrier).message).toBe('unknown API key');
      expect(keyRejected('revoked', carrier).message).toBe('API key has been revoked');
      expect(keyRejected('expired', carrier).message).toBe('API key has expired');
      expect(keyRejected('expired', carrier).code).toBe('unauthorized');
    }
  });
});

describe('admit', () => {
  it('refuses a failed check with its reason', () => {
    expect(refusal(() => admit({ ok: false, reason: 'revoked' }, 'telemetry:read', NOW, 'header'))).toEqual(['unauthorized', 'API key has been revoked']);
  });

  it('refuses a (cached) check whose key has expired by now, and takes one expiring later', () => {
    expect(refusal(() => admit(accepted({ expiresAt: NOW }), 'telemetry:read', NOW, 'metadata'))).toEqual(['unauthorized', 'API key has expired']);
    expect(() => admit(accepted({ expiresAt: new Date(NOW.getTime() + 1) }), 'telemetry:read', NOW, 'metadata')).not.toThrow();
  });

  it('refuses a key without the scope, naming it', () => {
    expect(refusal(() => admit(accepted(), 'telemetry:write', NOW, 'header'))).toEqual(['insufficient_scope', 'this API key lacks the scope telemetry:write']);
  });

  it('turns an admitted check into the principal', () => {
    const check = accepted({ userId: 'user', scopes: ['telemetry:read', 'datasets:read'] });
    admit(check, 'telemetry:read', NOW, 'header');
    expect(principalFrom(check)).toEqual({ organizationId: 'org', keyId: 'key', userId: 'user', scopes: new Set(['telemetry:read', 'datasets:read']) });
  });
});
