import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo, Socket } from 'node:net';
import { Code, ConnectError } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import { TelemetryService } from '@sortie/contracts';
import type { AppContext } from '../platform/context.ts';
import { KeyCache } from '../auth/key-cache.ts';
import { answerParserErrors } from '../http/client-error.ts';
import { REQUEST_ID_HEADER, requestIdFrom } from '../http/request-id.ts';
import type { GrpcDeps } from './rpc/deps.ts';
import { ERROR_CODE_TRAILER } from './rpc/errors.ts';
import { grpcPortCloser } from './graceful-close.ts';
import { createH2cListener } from './h2c-listener.ts';
import { isJsonContentType, LazyTelemetryService } from './rpc/lazy-schema.ts';
import { GRPC_LIMITS } from './rpc/limits.ts';
import { telemetryHandlerOptions } from './rpc/options.ts';
import { followHandler } from './routes/follow.ts';
import { queryHandler } from './routes/query.ts';
import { streamSubmitHandler } from './routes/stream-submit.ts';
import { submitHandler } from './routes/submit.ts';

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
  const options = telemetryHandlerOptions(deps, shutdown.signal);
  const impl = { submit: submitHandler(deps), streamSubmit: streamSubmitHandler(deps), query: queryHandler(deps), follow: followHandler(deps) };
  // Binary requests leave point payloads encoded for the fast decoder; JSON ones are decoded as generated.
  const binary = connectNodeAdapter({ ...options, fallback: noSuchRpc as never, routes: (router) => router.service(LazyTelemetryService, impl as never) });
  const json = connectNodeAdapter({ ...options, fallback: noSuchRpc as never, routes: (router) => router.service(TelemetryService, impl) });
  const handler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => {
    // Every answer carries the request id, also those Connect gives before a call starts (an unknown
    // path, a wrong method or content type); the request gate reads the same id from the request.
    const sent = req.headers['x-request-id'];
    const requestId = requestIdFrom(Array.isArray(sent) ? sent[0] : sent);
    req.headers['x-request-id'] = requestId;
    res.setHeader(REQUEST_ID_HEADER, requestId);
    (isJsonContentType(req.headers['content-type']) ? json : binary)(req as never, res as never);
  };

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
  const h1 = http.createServer({ maxHeaderSize: GRPC_LIMITS.maxHeaderListSize }, (req, res) => {
    closeIfAnsweredEarly(req, res);
    handler(req, res);
  });
  // Node's own timeouts stay: a Connect stream over HTTP/1.1 may outlast any fixed request deadline.
  answerParserErrors(h1, ctx.logger);
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

/**
 * A call answered before its request body was read to the end (a stream that fails at its first
 * message, with more behind it) leaves the rest of the body on the connection, and Node then never
 * reads the next request of that keep-alive connection: the client's next call waits until the idle
 * timeout resets it. Such an answer closes the connection instead (`Connection: close`).
 */
function closeIfAnsweredEarly(req: http.IncomingMessage, res: http.ServerResponse): void {
  const writeHead = res.writeHead;
  res.writeHead = function (this: http.ServerResponse, ...args: unknown[]) {
    if (!req.complete) {
      res.shouldKeepAlive = false;
      // No socket: the client has already gone, and there is nothing to linger on.
      const socket = req.socket as Socket | null;
      if (socket) lingerOnClose(socket);
    }
    return (writeHead as (...a: unknown[]) => http.ServerResponse).apply(this, args);
  } as typeof res.writeHead;
}

/** How long a connection answered early keeps reading what its client still sends before it is closed. */
const LINGER_MS = 2000;

/**
 * Closing a socket while its client is still sending makes the kernel answer the next bytes with a
 * reset, and a reset makes the client drop what it had received but not yet read: a large answer
 * arrived cut ("Invalid EOF state") although the server wrote all of it. So a connection answered before
 * its request was read to the end closes as HTTP servers' "lingering close" does: Node's closing step
 * for it (destroySoon, after the answer is written) ends our side only, keeps reading and dropping what
 * arrives, and closes once the client has finished sending, or after LINGER_MS.
 */
function lingerOnClose(socket: Socket): void {
  socket.destroySoon = function (this: Socket) {
    if (this.writable) this.end();
    const timer = setTimeout(() => this.destroy(), LINGER_MS);
    timer.unref();
    this.once('end', () => this.destroy());
    this.once('close', () => clearTimeout(timer));
    // The request's parser may have stopped reading (the body was never consumed): drop the rest.
    this.resume();
  };
}

/** A path that names no RPC of the service: 404 in the spec's envelope, as on the HTTP port. */
function noSuchRpc(req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse): void {
  const requestId = String(req.headers['x-request-id']);
  const body = JSON.stringify({ error: { code: 'not_found', message: `no RPC at ${String(req.url).slice(0, 200)}`, details: [], request_id: requestId } });
  res.setHeader(ERROR_CODE_TRAILER, 'not_found');
  (res as http.ServerResponse).writeHead(404, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
