import type { Context, MiddlewareHandler } from 'hono';
import { bodyLimit as honoBodyLimit } from 'hono/body-limit';

/**
 * hono's bodyLimit, without its cost on the common path. hono's middleware starts by touching
 * `c.req.raw.body`, which makes @hono/node-server build a full web `Request` (AbortController,
 * ReadableStream, finalizer registration) for every request, and handlers lose its direct read of the
 * body. A body with a Content-Length cannot exceed it (Node's HTTP parser ends the body there), so the
 * header alone decides; bodyless methods have nothing to limit; chunked bodies go through hono's
 * middleware, which counts the bytes as they arrive.
 */
export function bodyLimit(options: { maxSize: number; onError: (c: Context) => Response | Promise<Response> }): MiddlewareHandler {
  const streaming = honoBodyLimit(options);
  return async (c, next) => {
    if (c.req.method === 'GET' || c.req.method === 'HEAD') return next();
    const length = c.req.header('content-length');
    if (length !== undefined && c.req.header('transfer-encoding') === undefined) {
      return Number(length) > options.maxSize ? options.onError(c) : next();
    }
    return streaming(c, next);
  };
}
