import { ERROR_STATUS, type ErrorEnvelope } from '@sortie/contracts';
import type { Context } from 'hono';
import type { Logger } from '../platform/logger.ts';
import { ServiceError, clientFacingError } from '../platform/errors.ts';

/** The one place the error envelope is written: a ServiceError's code, its HTTP status and Retry-After. */
export function renderError(c: Context, error: ServiceError): Response {
  const body: ErrorEnvelope = {
    error: {
      code: error.code,
      message: error.message,
      details: error.details,
      request_id: (c.get('requestId') as string | undefined) ?? '',
    },
  };
  if (error.retryAfterSeconds !== undefined) c.header('retry-after', String(error.retryAfterSeconds));
  return c.json(body, ERROR_STATUS[error.code]);
}

/**
 * Anything a handler threw, in the envelope: the client's errors and an unreachable database as what
 * they are (a database outage is logged at warn, it is not a bug), any other fault logged with the
 * request id and answered 500 without internals.
 */
export function renderThrown(c: Context, error: unknown, logger: Logger): Response {
  const known = clientFacingError(error);
  const requestId = c.get('requestId') as string | undefined;
  if (known?.code === 'unavailable') logger.warn({ err: error, requestId }, 'database unreachable; answered 503');
  if (known) return renderError(c, known);
  logger.error({ err: error, requestId }, 'unhandled error');
  return renderError(c, new ServiceError('internal_error', 'internal error; quote the request id when reporting it'));
}
