import type { ErrorEnvelope } from '@sortie/contracts';
import type { Context } from 'hono';
import type { Logger } from '../platform/logger.ts';
import { ApiError, clientFacingError } from './api-error.ts';

/** The one place the error envelope is written. */
export function renderError(c: Context, error: ApiError): Response {
  const body: ErrorEnvelope = {
    error: {
      code: error.code,
      message: error.message,
      details: error.details,
      request_id: (c.get('requestId') as string | undefined) ?? '',
    },
  };
  for (const [name, value] of Object.entries(error.headers)) c.header(name, value);
  return c.json(body, error.status);
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
  return renderError(c, new ApiError('internal_error', 'internal error; quote the request id when reporting it'));
}
