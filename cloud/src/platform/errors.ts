import { isDatabaseUnavailable } from '../db/errors.ts';
import type { ErrorCode, ErrorDetail } from '@sortie/contracts';

/**
 * A failure the caller should be told about, in the spec's codes: a bad field, a missing row, a
 * conflict. Storage, telemetry, commands and delivery throw it without knowing which port asked; each
 * edge maps it once — http/render-error.ts to the JSON envelope and its status, grpc/rpc/errors.ts to
 * a ConnectError and its trailer. Anything else thrown is a fault: 500/INTERNAL, logged.
 */
export class ServiceError extends Error {
  override name = 'ServiceError';
  readonly code: ErrorCode;
  readonly details: ErrorDetail[];
  /** When sending the same request again makes sense (rate_limited, unavailable): HTTP says it in Retry-After. */
  readonly retryAfterSeconds: number | undefined;

  constructor(code: ErrorCode, message: string, options: { details?: ErrorDetail[]; retryAfterSeconds?: number } = {}) {
    super(message);
    this.code = code;
    this.details = options.details ?? [];
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

export const invalidRequest = (message: string, details: ErrorDetail[] = []) =>
  new ServiceError('invalid_request', message, { details });
export const notFound = (message: string) => new ServiceError('not_found', message);
export const conflict = (message: string) => new ServiceError('conflict', message);
export const forbidden = (message: string) => new ServiceError('forbidden', message);

/** Seconds a client is told to wait before sending again a request refused while the database was unreachable. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/**
 * What a thrown error means for the client, when it is not a server fault: a ServiceError as it is, a
 * query that failed because PostgreSQL was unreachable (stopped, restarting, failing over) as
 * `unavailable` with a retry delay. Anything else is a fault (undefined): 500, logged. An `unavailable`
 * does not promise that nothing happened: a statement whose connection broke may have committed, so
 * clients retry with the idempotent forms (the same dispatch, the same clientToken, the same append rows).
 */
export function clientFacingError(error: unknown): ServiceError | undefined {
  if (error instanceof ServiceError) return error;
  if (isDatabaseUnavailable(error)) {
    // Not "nothing was done": a connection that broke while PostgreSQL committed leaves the outcome unknown.
    return new ServiceError('unavailable', 'the database is unreachable for the moment; send the same request again after Retry-After', {
      retryAfterSeconds: UNAVAILABLE_RETRY_AFTER_SECONDS,
    });
  }
  return undefined;
}
