import type { DescService } from '@bufbuild/protobuf';
import { createConnectRouter } from '@connectrpc/connect';
import { createFetchHandler } from '@connectrpc/connect/protocol';
import { TelemetryService } from '@sortie/contracts';
import { Hono } from 'hono';
import { KeyCache } from '../auth/key-cache.ts';
import { notFound } from '../platform/errors.ts';
import type { AppEnv } from '../http/app-env.ts';
import { REQUEST_ID_HEADER } from '../http/request-id.ts';
import type { AppContext } from '../platform/context.ts';
import type { GrpcDeps } from './rpc/deps.ts';
import { ERROR_CODE_TRAILER } from './rpc/errors.ts';
import { isJsonContentType, LazyTelemetryService } from './rpc/lazy-schema.ts';
import { telemetryHandlerOptions } from './rpc/options.ts';
import { followHandler } from './routes/follow.ts';
import { queryHandler } from './routes/query.ts';
import { submitHandler } from './routes/submit.ts';

/** Where TelemetryService is mounted on the HTTP app; a method is at `${RPC_PREFIX}/sortie.telemetry.v1.TelemetryService/Query`. */
export const RPC_PREFIX = '/api/rpc';

type FetchHandler = (request: Request) => Promise<Response>;

/**
 * TelemetryService's Query, Submit and Follow on the HTTP port under /api/rpc, in the Connect protocol
 * (JSON and binary): a browser, curl or the typed client reads, writes and follows telemetry over the
 * one port a deployment exposes (the gRPC port stays on loopback behind the TLS front). The handlers,
 * the request gate (authentication, request id, x-sortie-error-code on every error), the limits and
 * the JSON options are the gRPC port's. Follow is a server stream, which Connect carries over a plain
 * HTTP/1.1 response (what a browser's fetch reads). StreamSubmit stays on the gRPC port: a client
 * stream over HTTP/1.1 through a proxy is what that port's h2c listener exists to avoid.
 *
 * Mounted with `all` so that a wrong method reaches Connect, which answers it in its own protocol.
 */
export function telemetryRpcRoutes(ctx: AppContext): Hono<AppEnv> {
  // Follow streams end when the service closes its live feeds (service.ts, before the listeners close).
  const deps: GrpcDeps = { ctx, keys: new KeyCache(ctx.db, ctx.clock, ctx.config.grpc.keyCacheSeconds), draining: new AbortController().signal };
  const options = telemetryHandlerOptions(deps);
  const handlersOf = (service: DescService): Map<string, FetchHandler> => {
    const router = createConnectRouter({ ...options, grpc: false, grpcWeb: false, connect: true });
    const query = service.methods.find((m) => m.localName === 'query')!;
    const submit = service.methods.find((m) => m.localName === 'submit')!;
    const follow = service.methods.find((m) => m.localName === 'follow')!;
    router.rpc(query, queryHandler(deps) as never).rpc(submit, submitHandler(deps) as never).rpc(follow, followHandler(deps) as never);
    return new Map(router.handlers.map((handler) => [handler.requestPath, createFetchHandler(handler, { httpVersion: '1.1' })]));
  };
  // Binary requests leave point payloads encoded for the fast decoder; JSON ones are decoded as generated.
  const binary = handlersOf(LazyTelemetryService);
  const json = handlersOf(TelemetryService);

  return new Hono<AppEnv>().all('/rpc/*', async (c) => {
    const path = c.req.path.slice(RPC_PREFIX.length);
    const handler = (isJsonContentType(c.req.header('content-type')) ? json : binary).get(path);
    if (!handler) {
      // The spec's code beside the envelope, as the RPCs themselves carry it in their trailer.
      c.header(ERROR_CODE_TRAILER, 'not_found');
      throw notFound(`no RPC at ${c.req.path.slice(0, 200)}; the HTTP port serves Query, Submit and Follow of TelemetryService`);
    }
    // The gate reads the request id from the request: hand it the one this request already answers with.
    const headers = new Headers(c.req.raw.headers);
    headers.set(REQUEST_ID_HEADER, c.get('requestId'));
    const request = new Request(c.req.url, {
      method: c.req.method,
      headers,
      body: c.req.method === 'GET' || c.req.method === 'HEAD' ? null : c.req.raw.body,
      signal: c.req.raw.signal,
      duplex: 'half',
    } as RequestInit);
    return handler(request);
  });
}
