import { isApiKeyFormat, type Scope } from '@sortie/contracts';
import { checkApiKey, type KeyCheck } from './api-keys.ts';
import type { Clock } from '../platform/clock.ts';
import type { Db } from '../db/connect.ts';
import { admit, keyRejected, principalFrom, type Principal } from './principal.ts';

/** A principal from the cache, with what it takes to re-check the key when the cached answer runs out. */
export interface CachedPrincipal extends Principal {
  /** The scope the call was admitted for. */
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

  /** Authenticate `key` and require `scope`; throws ServiceError unauthorized / insufficient_scope. */
  async authenticate(key: string | null, scope: Scope): Promise<CachedPrincipal> {
    // Refused before the cache, so that garbage neither reaches the database nor fills the cache.
    if (!key || !isApiKeyFormat(key)) throw keyRejected('malformed', 'metadata');
    const now = this.#clock.now();
    const { check, until } = this.#lookup(key, now.getTime());
    const result = await check;
    admit(result, scope, now, 'metadata');
    const expiresAt = result.expiresAt?.getTime() ?? Infinity;
    return { ...principalFrom(result), scope, key, validUntil: Math.min(until, expiresAt) };
  }

  /** For long streams: re-check the key once its cached answer has run out. */
  async revalidate(principal: CachedPrincipal): Promise<void> {
    if (this.#clock.now().getTime() < principal.validUntil) return;
    const fresh = await this.authenticate(principal.key, principal.scope);
    if (fresh.organizationId !== principal.organizationId) throw keyRejected('unknown', 'metadata');
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
