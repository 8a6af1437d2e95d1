import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeSelfSignedCertificate, type TestCertificate } from '../testing/tls.ts';
import { postWebhook, RESPONSE_KEEP_BYTES, WebhookAgents, type WebhookPost } from './send.ts';

/**
 * postWebhook against a real HTTPS receiver on loopback (a certificate made for the run): what an attempt
 * keeps of each kind of answer, and that every way an answer can fail ends within the time limit.
 */
const HOST = 'hooks.send.test';
const TIMEOUT_MS = 300;

let cert: TestCertificate;
let server: Server;
let port: number;
let agents: WebhookAgents;
/** What the receiver does with a request, by path. */
const routes = new Map<string, (req: IncomingMessage, res: ServerResponse, body: string) => void>();
const received: Array<{ path: string; body: string; headers: IncomingMessage['headers'] }> = [];

beforeAll(async () => {
  cert = await makeSelfSignedCertificate([HOST]);
  server = createServer({ key: cert.key, cert: cert.cert }, (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      received.push({ path: req.url!, body, headers: req.headers });
      (routes.get(req.url!) ?? ((_q, s) => s.writeHead(404).end()))(req, res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  agents = new WebhookAgents({ extraCa: cert.cert, timeoutMs: TIMEOUT_MS });
});

afterAll(async () => {
  await agents.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await cert.remove();
});

function post(path: string, body = '{"n":1}', extra: Partial<WebhookPost> = {}) {
  return postWebhook(
    {
      url: new URL(`https://${HOST}:${port}${path}`),
      hostname: HOST,
      addresses: [{ address: '127.0.0.1', family: 4 }],
      headers: { 'content-type': 'application/json', 'x-test': 'yes' },
      body,
      timeoutMs: TIMEOUT_MS,
      ...extra,
    },
    agents,
  );
}

describe('postWebhook', () => {
  it('sends the body and headers, and keeps the status and the answer', async () => {
    routes.set('/ok', (_req, res, body) => res.writeHead(200, { 'content-type': 'text/plain' }).end(`got ${body.length} bytes`));
    const answer = await post('/ok', '{"hello":"world"}');
    expect(answer).toMatchObject({ statusCode: 200, response: 'got 17 bytes' });
    expect(answer.error).toBeUndefined();
    expect(answer.durationMs).toBeGreaterThanOrEqual(0);
    const seen = received.findLast((r) => r.path === '/ok')!;
    expect(seen.body).toBe('{"hello":"world"}');
    expect(seen.headers['x-test']).toBe('yes');
  });

  it(`keeps the first ${RESPONSE_KEEP_BYTES} bytes of a long answer, a character cut at the limit as U+FFFD, and the next POST still goes through`, async () => {
    // "é" is two bytes: an odd prefix of "a" puts the limit inside one.
    const long = `a${'é'.repeat(10_000)}`;
    routes.set('/long', (_req, res) => res.writeHead(200).end(long));
    const answer = await post('/long');
    expect(answer.statusCode).toBe(200);
    expect(Buffer.byteLength(answer.response)).toBeLessThanOrEqual(RESPONSE_KEEP_BYTES + 2);
    expect(answer.response).toBe(`a${'é'.repeat((RESPONSE_KEEP_BYTES - 2) / 2)}\uFFFD`);
    expect(answer.error).toBeUndefined();
    routes.set('/after', (_req, res) => res.writeHead(204).end());
    expect(await post('/after')).toMatchObject({ statusCode: 204, response: '' });
  });

  it('keeps Retry-After and Location, and follows no redirect', async () => {
    routes.set('/busy', (_req, res) => res.writeHead(429, { 'retry-after': '7' }).end('slow down'));
    routes.set('/moved', (_req, res) => res.writeHead(307, { location: '/elsewhere' }).end());
    expect(await post('/busy')).toMatchObject({ statusCode: 429, retryAfter: '7', response: 'slow down' });
    const before = received.length;
    const moved = await post('/moved');
    expect(moved).toMatchObject({ statusCode: 307, location: '/elsewhere' });
    expect(received.slice(before).map((r) => r.path)).toEqual(['/moved']);
  });

  it('a receiver that never answers is an attempt timed out at the limit, with no status', async () => {
    routes.set('/silent', () => {});
    const answer = await post('/silent');
    expect(answer.statusCode).toBeUndefined();
    expect(answer.error).toBe(`timed out after ${TIMEOUT_MS} ms`);
    expect(answer.durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    expect(answer.durationMs).toBeLessThan(TIMEOUT_MS + 1000);
  });

  it('an answer whose body stalls keeps its status and ends at the limit', async () => {
    routes.set('/stall', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
    });
    const answer = await post('/stall');
    expect(answer.statusCode).toBe(200);
    expect(answer.error).toBeUndefined();
    expect(answer.response).toBe('partial');
    expect(answer.durationMs).toBeLessThan(TIMEOUT_MS + 1000);
  });

  it('a refused connection is an error naming its cause', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const answer = await post('/ok', '{}', { url: new URL(`https://${HOST}:${closedPort}/ok`) });
    expect(answer.statusCode).toBeUndefined();
    expect(answer.error).toMatch(/ECONNREFUSED/);
  });
});
