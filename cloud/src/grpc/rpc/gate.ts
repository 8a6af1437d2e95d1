import { Code, ConnectError, type HandlerContext } from '@connectrpc/connect';
import { API_KEY_HEADER, type Scope } from '@sortie/contracts';
import { REQUEST_ID_HEADER, requestIdFrom } from '../../http/request-id.ts';
import { principalKey, requestIdKey } from './context.ts';
import type { GrpcDeps } from './deps.ts';
import { settleProtocolError, toConnectError } from './errors.ts';

/** The scope each RPC needs, by the method's local name (also what /docs/grpc lists). */
export const SCOPE_OF: Readonly<Record<string, Scope>> = {
  submit: 'telemetry:write',
  streamSubmit: 'telemetry:write',
  query: 'telemetry:read',
  follow: 'telemetry:read',
};

/**
 * Connect's `requestGate` for TelemetryService, wherever it is mounted (the gRPC port, and the HTTP
 * port's Connect routes): runs on every call of every protocol once its headers are in, before a
 * single request byte is read or parsed. It sets the request id (a response header, which gRPC sends
 * on errors too), settles how the call's errors look, and authenticates.
 */
export function telemetryRequestGate(deps: GrpcDeps): (context: HandlerContext) => Promise<void> {
  return (context) => authenticate(deps, context);
}

async function authenticate({ ctx, keys }: GrpcDeps, context: HandlerContext): Promise<void> {
  const requestId = requestIdFrom(context.requestHeader.get(REQUEST_ID_HEADER));
  context.values.set(requestIdKey, requestId);
  context.responseHeader.set(REQUEST_ID_HEADER, requestId);
  // Every protocol handler of Connect aborts the call's context with the error it is about to send,
  // including errors of its own (unparsable bytes, a message over readMaxBytes) that no handler of
  // ours sees: this is the one place they all pass.
  const controller = context as HandlerContext & { abort?: (reason?: unknown) => void };
  const abort = controller.abort;
  if (typeof abort === 'function') {
    controller.abort = (reason?: unknown) => {
      settleProtocolError(reason, context.method, { logger: ctx.logger, requestId });
      abort.call(controller, reason);
    };
  }
  const scope = SCOPE_OF[context.method.localName];
  try {
    if (!scope) throw new ConnectError(`no scope is defined for ${context.method.name}`, Code.Unimplemented);
    context.values.set(principalKey, await keys.authenticate(context.requestHeader.get(API_KEY_HEADER), scope));
  } catch (error) {
    throw toConnectError(error, { logger: ctx.logger, requestId });
  }
}
