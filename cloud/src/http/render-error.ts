import type { ErrorEnvelope } from '@sortie/contracts';
import type { Context } from 'hono';
import type { ApiError } from './api-error.ts';

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
