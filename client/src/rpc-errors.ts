// A failed RPC as the typed client reports it, without zod: the console's browser script uses it alone.
import { Code, ConnectError } from '@connectrpc/connect';
import { ERROR_STATUS, type ErrorCode } from '@sortie/contracts';
import { SortieApiError } from './errors.ts';
import { REQUEST_ID_HEADER } from './wire.ts';

/** The trailer (or header) in which the service sends its error code beside the gRPC status. */
export const ERROR_CODE_TRAILER = 'x-sortie-error-code';

/** The spec's code for a gRPC status when the service sent none (a proxy, or the network). */
const CODE_OF_STATUS: Partial<Record<Code, ErrorCode>> = {
  [Code.InvalidArgument]: 'invalid_request',
  [Code.OutOfRange]: 'invalid_request',
  [Code.Unauthenticated]: 'unauthorized',
  [Code.PermissionDenied]: 'insufficient_scope',
  [Code.NotFound]: 'not_found',
  [Code.FailedPrecondition]: 'conflict',
  [Code.AlreadyExists]: 'conflict',
  [Code.ResourceExhausted]: 'rate_limited',
  [Code.DeadlineExceeded]: 'request_timeout',
};

function isErrorCode(value: string | null): value is ErrorCode {
  return value !== null && Object.hasOwn(ERROR_STATUS, value);
}

/**
 * A failed RPC as the same typed error HTTP calls throw: the service's own code from
 * `x-sortie-error-code` (so callers branch alike on both), the status that code travels with over HTTP.
 * What is no ConnectError (a bug in the caller), and an UNAVAILABLE no service answered, pass through.
 */
export function rpcError(error: unknown, requestId: string): unknown {
  if (!(error instanceof ConnectError)) return error;
  const sent = error.metadata.get(ERROR_CODE_TRAILER);
  // No code and UNAVAILABLE: nothing answered (connection refused, reset); the ConnectError says why.
  if (!isErrorCode(sent) && error.code === Code.Unavailable) return error;
  const code: ErrorCode | 'http_error' = isErrorCode(sent) ? sent : (CODE_OF_STATUS[error.code] ?? (error.code === Code.Internal ? 'internal_error' : 'http_error'));
  return new SortieApiError({
    // Status 0 is kept for inputs never sent; an answer without a code reads as a bad gateway.
    status: code === 'http_error' ? 502 : ERROR_STATUS[code],
    code,
    message: error.rawMessage,
    requestId: error.metadata.get(REQUEST_ID_HEADER) ?? requestId,
    cause: error,
  });
}
