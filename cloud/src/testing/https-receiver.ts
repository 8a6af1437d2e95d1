import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** Exactly the bytes received, for signature checks. */
  rawBody: Buffer;
  receivedAt: number;
}

export interface ReceiverAnswer {
  status: number;
  body?: string;
  headers?: Record<string, string>;
  /** Hold the answer this long (time-out tests). */
  delayMs?: number;
}

export interface TestReceiver {
  port: number;
  requests: ReceivedRequest[];
  /** Replace how the receiver answers; it is called once per request, in order. */
  answer(fn: (req: ReceivedRequest, index: number) => ReceiverAnswer | Promise<ReceiverAnswer>): void;
  /** Resolves once `count` requests have arrived (rejects after `timeoutMs`). */
  waitForRequests(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

/** A real HTTPS server on loopback standing in for a customer's webhook receiver. */
export async function startHttpsReceiver(tls: { cert: string; key: string }): Promise<TestReceiver> {
  const requests: ReceivedRequest[] = [];
  let respond: (req: ReceivedRequest, index: number) => ReceiverAnswer | Promise<ReceiverAnswer> = () => ({ status: 200, body: 'ok' });
  const waiters = new Set<() => void>();
  const server: Server = createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const received: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        rawBody: Buffer.concat(chunks),
        receivedAt: Date.now(),
      };
      const index = requests.push(received) - 1;
      for (const wake of waiters) wake();
      try {
        const a = await respond(received, index);
        if (a.delayMs) await new Promise((r) => setTimeout(r, a.delayMs));
        if (res.destroyed) return;
        res.writeHead(a.status, a.headers ?? {});
        res.end(a.body ?? '');
      } catch {
        res.destroy();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    answer: (fn) => {
      respond = fn;
    },
    waitForRequests: (count, timeoutMs = 15_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (requests.length >= count) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(requests.slice(0, count));
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`receiver got ${requests.length} of ${count} requests within ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
