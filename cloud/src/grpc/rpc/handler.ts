import type { HandlerContext } from '@connectrpc/connect';
import { isUuid } from '@sortie/contracts';
import type { AppContext } from '../../platform/context.ts';
import { ServiceError } from '../../platform/errors.ts';
import { requestIdKey } from './context.ts';
import { toConnectError } from './errors.ts';

/** Run an RPC body: every failure leaves as a ConnectError with its gRPC code and the request id; each call is logged once. */
export async function runRpc<T>(ctx: AppContext, context: HandlerContext, body: () => Promise<T>, summary?: (result: T) => object): Promise<T> {
  const started = performance.now();
  const requestId = context.values.get(requestIdKey);
  try {
    const result = await body();
    ctx.logger.info({ requestId, rpc: context.method.name, protocol: context.protocolName, ms: Math.round(performance.now() - started), ...summary?.(result) }, 'grpc call');
    return result;
  } catch (error) {
    const failure = toConnectError(error, { logger: ctx.logger, requestId });
    ctx.logger.info(
      { requestId, rpc: context.method.name, protocol: context.protocolName, ms: Math.round(performance.now() - started), code: failure.code, error: failure.rawMessage },
      'grpc call failed',
    );
    throw failure;
  }
}

/** A UUID field of a request; `optional` lets the empty string through (field not set). */
export function uuidField(value: string, field: string, options: { optional?: boolean } = {}): string {
  if (value === '' && options.optional) return '';
  if (value === '') throw new ServiceError('invalid_request', `${field} is required`);
  if (!isUuid(value)) throw new ServiceError('invalid_request', `${field} is not a UUID: "${value.slice(0, 80)}"`);
  return value.toLowerCase();
}
