import { API_KEY_HEADER, type Scope } from '@sortie/contracts';
import { ServiceError } from '../platform/errors.ts';
import type { KeyCheck } from './api-keys.ts';

/** Who is calling, established by the API key, on either protocol. Every query is scoped by `organizationId`. */
export interface Principal {
  organizationId: string;
  keyId: string;
  userId: string | null;
  scopes: ReadonlySet<Scope>;
}

/** A key check that passed. */
export type AcceptedKey = Extract<KeyCheck, { ok: true }>;
export type KeyRejection = Extract<KeyCheck, { ok: false }>['reason'];

/** Where the key travels; named in the message for a missing key, so the caller learns where to put it. */
export type KeyCarrier = 'header' | 'metadata';

const SENT_AS: Record<KeyCarrier, string> = { header: API_KEY_HEADER, metadata: `${API_KEY_HEADER} metadata` };

const REASONS: Record<KeyRejection, string> = {
  malformed: 'missing or malformed API key',
  unknown: 'unknown API key',
  revoked: 'API key has been revoked',
  expired: 'API key has expired',
};

/** The 401 for a rejected key; a missing or malformed one also says how to send it. */
export function keyRejected(reason: KeyRejection, carrier: KeyCarrier): ServiceError {
  const message = reason === 'malformed' ? `${REASONS.malformed} (send it as ${SENT_AS[carrier]})` : REASONS[reason];
  return new ServiceError('unauthorized', message);
}

/**
 * The rule both protocols apply to a key check: a failed check is unauthorized with its reason, a key
 * past its expiry at `now` is unauthorized, a key without `scope` is insufficient_scope. The expiry is
 * looked at again because gRPC's check may come from a cache and be older than `now`; for a fresh
 * check made at `now` it never fires.
 */
export function admit(check: KeyCheck, scope: Scope, now: Date, carrier: KeyCarrier): asserts check is AcceptedKey {
  if (!check.ok) throw keyRejected(check.reason, carrier);
  if (check.expiresAt && check.expiresAt <= now) throw keyRejected('expired', carrier);
  if (!check.scopes.includes(scope)) throw new ServiceError('insufficient_scope', `this API key lacks the scope ${scope}`);
}

export function principalFrom(check: AcceptedKey): Principal {
  return { organizationId: check.organizationId, keyId: check.keyId, userId: check.userId, scopes: new Set(check.scopes) };
}
