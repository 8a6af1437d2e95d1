import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { Code, ConnectError, type HandlerContext } from '@connectrpc/connect';
import { compressionGzip, connectNodeAdapter } from '@connectrpc/connect-node';
import { API_KEY_HEADER, TelemetryService, type Scope } from '@sortie/contracts';
import type { AppContext } from '../platform/context.ts';
import { REQUEST_ID_HEADER, requestIdFrom } from '../http/request-id.ts';
import { KeyCache } from '../auth/key-cache.ts';
import { principalKey, requestIdKey } from './rpc/context.ts';
import type { GrpcDeps } from './rpc/deps.ts';
import { toConnectError } from './rpc/errors.ts';
import { grpcPortCloser } from './graceful-close.ts';
import { createH2cListener } from './h2c-listener.ts';
import { isJsonContentType, LazyTelemetryService } from './rpc/lazy-schema.ts';
import { GRPC_LIMITS } from './rpc/limits.ts';
import { queryHandler } from './routes/query.ts';
import { streamSubmitHandler } from './routes/stream-submit.ts';
import { submitHandler } from './routes/submit.ts';

/** The scope each RPC needs, by the method's local name. */
const SCOPE_OF: Record<string, Scope> = {
  submit: 'telemetry:write',
  streamSubmit: 'telemetry:write',
  query: 'telemetry:read',
};

export interface GrpcServer {
  readonly port: number;
  readonly url: string;
  /**
   * Graceful: stop accepting (GOAWAY on HTTP/2), let unary calls in flight finish, end open
   * StreamSubmit calls once what they received is written; cut what is left after `forceAfterMs`.
   */
  close(options?: { forceAfterMs?: number }): Promise<void>;
}

/**
 * sortie.telemetry.v1.TelemetryService over gRPC, gRPC-Web and Connect (Connect-ES), on the gRPC
 * host and port of the configuration: HTTP/2 without TLS, and HTTP/1.1 on the same port.
 */
export async function startGrpcServer(ctx: AppContext): Promise<GrpcServer> {
  const draining = new AbortController();
  const deps: GrpcDeps = { ctx, keys: new KeyCache(ctx.db, ctx.clock, ctx.config.grpc.keyCacheSeconds), draining: draining.signal };
  // Aborts every handler's context signal: only when the grace period is over and calls are cut.
  const shutdown = new AbortController();
  const options = {
    readMaxBytes: GRPC_LIMITS.readMaxBytes,
    writeMaxBytes: GRPC_LIMITS.writeMaxBytes,
    compressMinBytes: GRPC_LIMITS.compressMinBytes,
    maxTimeoutMs: GRPC_LIMITS.maxTimeoutMs,
    acceptCompression: [compressionGzip],
    shutdownSignal: shutdown.signal,
    // Authenticate from the headers alone, before a single request byte is read or parsed.
    requestGate: (context: HandlerContext) => authenticate(deps, context),
  };
  const impl = { submit: submitHandler(deps), streamSubmit: streamSubmitHandler(deps), query: queryHandler(deps) };
  // Binary requests leave point payloads encoded for the fast decoder; JSON ones are decoded as generated.
  const binary = connectNodeAdapter({ ...options, routes: (router) => router.service(LazyTelemetryService, impl as never) });
  const json = connectNodeAdapter({ ...options, routes: (router) => router.service(TelemetryService, impl) });
  const handler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) =>
    (isJsonContentType(req.headers['content-type']) ? json : binary)(req as never, res as never);

  const h2 = http2.createServer(
    {
      settings: {
        maxConcurrentStreams: GRPC_LIMITS.maxConcurrentStreams,
        initialWindowSize: GRPC_LIMITS.initialWindowSize,
        maxHeaderListSize: GRPC_LIMITS.maxHeaderListSize,
      },
      maxSessionMemory: GRPC_LIMITS.maxSessionMemoryMb,
    },
    handler,
  );
  const h1 = http.createServer({ maxHeaderSize: GRPC_LIMITS.maxHeaderListSize }, handler);
  const { server, sockets } = createH2cListener(h2, h1);
  const closer = grpcPortCloser({ server, sockets, h2, h1 });
  const { host, port } = ctx.config.grpc;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  ctx.logger.info({ url: `http://${host}:${bound}` }, 'gRPC (gRPC, gRPC-Web, Connect) listening');

  return {
    port: bound,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}`,
    close: async (options = {}) => {
      const started = performance.now();
      const forceAfterMs = options.forceAfterMs ?? ctx.config.shutdownGraceMs;
      draining.abort();
      const outcome = await closer.close({
        forceAfterMs,
        onForce: () => shutdown.abort(new ConnectError('server shutting down', Code.Unavailable)),
      });
      const ms = Math.round(performance.now() - started);
      if (outcome === 'forced') ctx.logger.warn({ ms, forceAfterMs }, 'gRPC: calls still open when the grace period ended were cut');
      else ctx.logger.info({ ms }, 'gRPC: calls in flight finished; listener closed');
    },
  };
}

/** The request id goes out as a response header, which gRPC sends on errors too. */
async function authenticate({ ctx, keys }: GrpcDeps, context: HandlerContext): Promise<void> {
  const requestId = requestIdFrom(context.requestHeader.get(REQUEST_ID_HEADER));
  context.values.set(requestIdKey, requestId);
  context.responseHeader.set(REQUEST_ID_HEADER, requestId);
  const scope = SCOPE_OF[context.method.localName];
  try {
    if (!scope) throw new ConnectError(`no scope is defined for ${context.method.name}`, Code.Unimplemented);
    context.values.set(principalKey, await keys.authenticate(context.requestHeader.get(API_KEY_HEADER), scope));
  } catch (error) {
    throw toConnectError(error, { logger: ctx.logger, requestId });
  }
}
