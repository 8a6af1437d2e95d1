import { isApiKeyFormat, type Scope } from '@sortie/contracts';
import { checkApiKey, type KeyCheck } from './api-keys.ts';
import type { Clock } from '../platform/clock.ts';
import type { Db } from '../db/connect.ts';
import { ApiError } from '../http/api-error.ts';

export const API_KEY_METADATA = 'x-api-key';

const REASONS = {
  malformed: `missing or malformed API key (send it as ${API_KEY_METADATA} metadata)`,
  unknown: 'unknown API key',
  revoked: 'API key has been revoked',
  expired: 'API key has expired',
} as const;

/** Who is calling: the key's organization and scopes, and until when that answer may be trusted. */
export interface GrpcPrincipal {
  organizationId: string;
  keyId: string;
  scope: Scope;
  /** The presented key, to re-check it when the cached answer runs out. */
  key: string;
  /** Epoch ms until which the cached check holds (the cache time or the key's expiry, if sooner). */
  validUntil: number;
}

/** Bound so that a flood of distinct bogus keys cannot grow memory; oldest entries go first. */
const MAX_ENTRIES = 10_000;

/**
 * Key checks cached for `ttlSeconds` (at most 300, the spec's five minutes): a revoked or widened key
 * takes up to that long to take effect, and a revoked key can keep streaming for that long. A TTL of
 * 0 asks the database every time.
 */
export class KeyCache {
  #db: Db;
  #clock: Clock;
  #ttlMs: number;
  #entries = new Map<string, { check: Promise<KeyCheck>; until: number }>();

  constructor(db: Db, clock: Clock, ttlSeconds: number) {
    this.#db = db;
    this.#clock = clock;
    this.#ttlMs = Math.min(Math.max(ttlSeconds, 0), 300) * 1000;
  }

  /** Authenticate `key` and require `scope`; throws ApiError unauthorized / insufficient_scope. */
  async authenticate(key: string | null, scope: Scope): Promise<GrpcPrincipal> {
    if (!key || !isApiKeyFormat(key)) throw new ApiError('unauthorized', REASONS.malformed);
    const now = this.#clock.now().getTime();
    const { check, until } = this.#lookup(key, now);
    const result = await check;
    if (!result.ok) throw new ApiError('unauthorized', REASONS[result.reason]);
    const expiresAt = result.expiresAt?.getTime() ?? Infinity;
    if (expiresAt <= now) throw new ApiError('unauthorized', REASONS.expired);
    if (!result.scopes.includes(scope)) throw new ApiError('insufficient_scope', `this API key lacks the scope ${scope}`);
    return { organizationId: result.organizationId, keyId: result.keyId, scope, key, validUntil: Math.min(until, expiresAt) };
  }

  /** For long streams: re-check the key once its cached answer has run out. */
  async revalidate(principal: GrpcPrincipal): Promise<void> {
    if (this.#clock.now().getTime() < principal.validUntil) return;
    const fresh = await this.authenticate(principal.key, principal.scope);
    if (fresh.organizationId !== principal.organizationId) throw new ApiError('unauthorized', REASONS.unknown);
    principal.validUntil = fresh.validUntil;
  }

  #lookup(key: string, now: number): { check: Promise<KeyCheck>; until: number } {
    const cached = this.#entries.get(key);
    if (cached && cached.until > now) return cached;
    const check = checkApiKey(this.#db, key, new Date(now));
    const entry = { check, until: now + this.#ttlMs };
    if (this.#ttlMs > 0) {
      this.#entries.delete(key);
      this.#entries.set(key, entry);
      // A failed lookup (database down) must not be remembered.
      check.catch(() => this.#entries.get(key) === entry && this.#entries.delete(key));
      while (this.#entries.size > MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value!);
    }
    return entry;
  }
}
