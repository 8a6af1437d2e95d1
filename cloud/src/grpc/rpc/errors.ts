import type { ErrorCode } from '@sortie/contracts';
import { Code, ConnectError } from '@connectrpc/connect';
import { ApiError } from '../../http/api-error.ts';
import type { Logger } from '../../platform/logger.ts';
import { NotYetSupportedError } from '../../telemetry/sinks.ts';

/**
 * The gRPC status for each error code of the spec. The spec's code travels too, in the
 * `x-sortie-error-code` trailer, so clients can branch on the same codes as over HTTP.
 */
export const GRPC_CODE: Readonly<Record<ErrorCode, Code>> = {
  invalid_request: Code.InvalidArgument,
  unauthorized: Code.Unauthenticated,
  insufficient_scope: Code.PermissionDenied,
  forbidden: Code.PermissionDenied,
  not_found: Code.NotFound,
  // The one telemetry conflict: the dataset's storage shape does not match what the call carries.
  conflict: Code.FailedPrecondition,
  payload_too_large: Code.ResourceExhausted,
  rate_limited: Code.ResourceExhausted,
  internal_error: Code.Internal,
};

export const ERROR_CODE_TRAILER = 'x-sortie-error-code';

/**
 * Anything a handler throws, as the ConnectError the client sees. Unknown failures are logged with
 * the request id and answered INTERNAL without their message, which may hold SQL or internals.
 */
export function toConnectError(error: unknown, log?: { logger: Logger; requestId: string }): ConnectError {
  if (error instanceof ApiError) {
    return new ConnectError(error.message, GRPC_CODE[error.code], { [ERROR_CODE_TRAILER]: error.code });
  }
  if (error instanceof NotYetSupportedError) return new ConnectError(error.message, Code.Unimplemented);
  if (error instanceof ConnectError) return error;
  log?.logger.error({ err: error, requestId: log.requestId }, 'unhandled gRPC error');
  return new ConnectError(`internal error; quote the request id ${log?.requestId ?? ''} when reporting it`.trim(), Code.Internal, {
    [ERROR_CODE_TRAILER]: 'internal_error',
  });
}

