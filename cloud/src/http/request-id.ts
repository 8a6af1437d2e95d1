import { createMiddleware } from 'hono/factory';

export const REQUEST_ID_HEADER = 'X-Request-Id';

// A client's id is echoed only when it is safe to put in logs and headers.
const ACCEPTABLE = /^[A-Za-z0-9._:\-]{1,128}$/;

export type RequestIdVariables = { requestId: string };

/** Echo the caller's X-Request-Id or make one; set before anything can fail so every response has it. */
export const requestId = createMiddleware<{ Variables: RequestIdVariables }>(async (c, next) => {
  const sent = c.req.header(REQUEST_ID_HEADER);
  const id = sent && ACCEPTABLE.test(sent) ? sent : `req_${crypto.randomUUID().replaceAll('-', '')}`;
  c.set('requestId', id);
  c.header(REQUEST_ID_HEADER, id);
  await next();
});
