import { isDatabaseUnavailable } from '../db/errors.ts';
import { ERROR_STATUS, type ErrorCode, type ErrorDetail } from '@sortie/contracts';

/** A failure the client should see in the spec's envelope. Anything else thrown becomes 500 internal_error. */
export class ApiError extends Error {
  override name = 'ApiError';
  readonly code: ErrorCode;
  readonly details: ErrorDetail[];
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, options: { details?: ErrorDetail[]; headers?: Record<string, string> } = {}) {
    super(message);
    this.code = code;
    this.details = options.details ?? [];
    this.headers = options.headers ?? {};
  }

  get status(): (typeof ERROR_STATUS)[ErrorCode] {
    return ERROR_STATUS[this.code];
  }
}

export const invalidRequest = (message: string, details: ErrorDetail[] = []) =>
  new ApiError('invalid_request', message, { details });
export const notFound = (message: string) => new ApiError('not_found', message);
export const conflict = (message: string) => new ApiError('conflict', message);
export const forbidden = (message: string) => new ApiError('forbidden', message);

/** Seconds a client is told to wait before sending again a request refused while the database was unreachable. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/**
 * What a thrown error means for the client, when it is not a server fault: an ApiError as it is, a
 * query that failed because PostgreSQL was unreachable (stopped, restarting, failing over) as 503
 * `unavailable` with Retry-After. Anything else is a fault (undefined): 500, logged. A 503 does not
 * promise that nothing happened: a statement whose connection broke may have committed, so clients
 * retry with the idempotent forms (the same dispatch, the same clientToken, the same append rows).
 */
export function clientFacingError(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error;
  if (isDatabaseUnavailable(error)) {
    // Not "nothing was done": a connection that broke while PostgreSQL committed leaves the outcome unknown.
    return new ApiError('unavailable', 'the database is unreachable for the moment; send the same request again after Retry-After', {
      headers: { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_SECONDS) },
    });
  }
  return undefined;
}
