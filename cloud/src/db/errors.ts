/** Postgres SQLSTATE 23505: a unique constraint refused the row. */
export function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: string }).code === '23505';
}

/** Socket failures that mean the server is not there (stopped, restarting, unreachable), not a bad query. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/**
 * SQLSTATEs of a server going away or not taking connections: class 08 (connection exception),
 * 57P01 admin_shutdown (a fast stop), 57P02 crash_shutdown, 57P03 cannot_connect_now (starting up,
 * shutting down, in recovery), 53300 too_many_connections.
 */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);
/** What node-postgres says, without a code, when the socket under a client closes or never opens in time. */
const DRIVER_MESSAGES = [
  'Connection terminated unexpectedly',
  'Connection terminated',
  'Client has encountered a connection error and is not queryable',
  'timeout exceeded when trying to connect',
  'Connection terminated due to connection timeout',
];

/**
 * True when a query failed because PostgreSQL was unreachable rather than because of the query (HTTP
 * 503 `unavailable`, gRPC UNAVAILABLE): the request may be sent again. A statement whose connection
 * broke after it was sent may still have committed, so its outcome is unknown, as with any lost
 * answer. Looks through `cause` chains and AggregateErrors (one per address tried).
 */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 4) return false;
  const e = error as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string' && (NETWORK_CODES.has(e.code) || UNAVAILABLE_SQLSTATES.has(e.code) || e.code.startsWith('08'))) return true;
  if (typeof e.message === 'string' && DRIVER_MESSAGES.includes(e.message)) return true;
  if (Array.isArray(e.errors) && e.errors.some((inner) => isDatabaseUnavailable(inner, depth + 1))) return true;
  return isDatabaseUnavailable(e.cause, depth + 1);
}

/**
 * True when the session that ran a statement cannot serve another and must not go back to the pool: a
 * socket that failed, a FATAL or PANIC error (the server ended the session, whatever its code), anything
 * without a SQLSTATE. A statement error the server answered with leaves the session usable.
 */
export function endsSession(error: unknown): boolean {
  const { code, severity } = (error ?? {}) as { code?: unknown; severity?: unknown };
  return isDatabaseUnavailable(error) || typeof code !== 'string' || severity === 'FATAL' || severity === 'PANIC';
}
