import type { DescMethod } from '@bufbuild/protobuf';
import type { ErrorCode } from '@sortie/contracts';
import { Code, ConnectError } from '@connectrpc/connect';
import { clientFacingError } from '../../platform/errors.ts';
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
  request_timeout: Code.DeadlineExceeded,
  // The one telemetry conflict: the dataset's storage shape does not match what the call carries.
  conflict: Code.FailedPrecondition,
  payload_too_large: Code.ResourceExhausted,
  headers_too_large: Code.ResourceExhausted,
  rate_limited: Code.ResourceExhausted,
  internal_error: Code.Internal,
  unavailable: Code.Unavailable,
};

export const ERROR_CODE_TRAILER = 'x-sortie-error-code';

/**
 * Anything a handler throws, as the ConnectError the client sees. Unknown failures are logged with
 * the request id and answered INTERNAL without their message, which may hold SQL or internals.
 */
export function toConnectError(error: unknown, log?: { logger: Logger; requestId: string }): ConnectError {
  const known = clientFacingError(error);
  if (known) {
    if (known.code === 'unavailable') log?.logger.warn({ err: error, requestId: log.requestId }, 'database unreachable; answered UNAVAILABLE');
    return new ConnectError(known.message, GRPC_CODE[known.code], { [ERROR_CODE_TRAILER]: known.code });
  }
  if (error instanceof NotYetSupportedError) return new ConnectError(error.message, Code.Unimplemented);
  if (error instanceof ConnectError) return error;
  log?.logger.error({ err: error, requestId: log.requestId }, 'unhandled gRPC error');
  return new ConnectError(`internal error; quote the request id ${log?.requestId ?? ''} when reporting it`.trim(), Code.Internal, {
    [ERROR_CODE_TRAILER]: 'internal_error',
  });
}


/**
 * The spec code for a ConnectError the protocol layer raised on its own (bad framing, an unknown
 * compression, a message over the size limit, a deadline): those never pass toConnectError, so they
 * carry no `x-sortie-error-code` until settleProtocolError adds it.
 */
const SPEC_CODE_OF_GRPC: Readonly<Record<Code, ErrorCode>> = {
  [Code.Canceled]: 'invalid_request',
  [Code.Unknown]: 'internal_error',
  [Code.InvalidArgument]: 'invalid_request',
  [Code.DeadlineExceeded]: 'request_timeout',
  [Code.NotFound]: 'not_found',
  [Code.AlreadyExists]: 'conflict',
  [Code.PermissionDenied]: 'forbidden',
  [Code.ResourceExhausted]: 'payload_too_large',
  [Code.FailedPrecondition]: 'conflict',
  [Code.Aborted]: 'conflict',
  [Code.OutOfRange]: 'invalid_request',
  // An unknown compression, a unary call without its message: the request cannot be served as sent.
  [Code.Unimplemented]: 'invalid_request',
  [Code.Internal]: 'internal_error',
  [Code.Unavailable]: 'unavailable',
  [Code.DataLoss]: 'internal_error',
  [Code.Unauthenticated]: 'unauthorized',
};

/**
 * Failures of the protocol layer that are the client's bytes, not the server: Connect reports them
 * INTERNAL, with the protobuf reader's own words ("parse binary: illegal tag: field no 536870911 wire
 * type 7"). Matched by the messages of @connectrpc/connect 2.x; rpc-protocol-errors.test.ts pins them.
 */
function clientBytesMessage(error: ConnectError, method: DescMethod): string | undefined {
  if (error.code !== Code.Internal) return undefined;
  const raw = error.rawMessage;
  if (raw.startsWith('parse binary:')) return `the request is not a valid ${method.input.typeName} message (protobuf binary)`;
  if (raw === 'decompression failed') return 'the request message could not be decompressed';
  if (raw.startsWith('received compressed envelope')) return 'a message is flagged compressed, but the request names no compression the server accepts';
  return undefined;
}

/**
 * Give an error the protocol layer is about to send the shape of every other error: client-caused
 * failures become INVALID_ARGUMENT with a plain message, and every error carries `x-sortie-error-code`.
 * Mutates the error in place, because Connect serializes the very object it aborts the call with
 * (rpc/gate.ts hooks the abort). Errors from toConnectError already carry the trailer and pass as they are.
 */
export function settleProtocolError(error: unknown, method: DescMethod, log?: { logger: Logger; requestId: string }): void {
  if (!(error instanceof ConnectError) || error.isWireError || error.metadata.has(ERROR_CODE_TRAILER)) return;
  const clean = clientBytesMessage(error, method);
  if (clean !== undefined) {
    // ConnectError's fields are plain properties; `message` is rebuilt as its constructor would.
    Object.assign(error as { code: Code; rawMessage: string; message: string }, {
      code: Code.InvalidArgument,
      rawMessage: clean,
      message: new ConnectError(clean, Code.InvalidArgument).message,
    });
  } else if (error.code === Code.Internal || error.code === Code.Unknown) {
    log?.logger.error({ err: error, requestId: log.requestId }, 'gRPC protocol layer failed');
  }
  error.metadata.set(ERROR_CODE_TRAILER, SPEC_CODE_OF_GRPC[error.code]);
}
