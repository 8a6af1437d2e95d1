import { createMiddleware } from 'hono/factory';

export const REQUEST_ID_HEADER = 'X-Request-Id';

// A client's id is echoed only when it is safe to put in logs and headers.
const ACCEPTABLE = /^[A-Za-z0-9._:\-]{1,128}$/;

export type RequestIdVariables = { requestId: string };

/** The caller's id when it is safe to echo, else a fresh one (shared with the gRPC server). */
export function requestIdFrom(sent: string | null | undefined): string {
  return sent && ACCEPTABLE.test(sent) ? sent : `req_${crypto.randomUUID().replaceAll('-', '')}`;
}

/** Echo the caller's X-Request-Id or make one; set before anything can fail so every response has it. */
export const requestId = createMiddleware<{ Variables: RequestIdVariables }>(async (c, next) => {
  const id = requestIdFrom(c.req.header(REQUEST_ID_HEADER));
  c.set('requestId', id);
  c.header(REQUEST_ID_HEADER, id);
  await next();
});
