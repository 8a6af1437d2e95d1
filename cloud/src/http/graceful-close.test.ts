import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { gracefulCloser } from './graceful-close.ts';

describe('gracefulCloser', () => {
  it('answers the request in flight, closes idle keep-alive connections, and does not wait out the keep-alive timeout', async () => {
    const server = http.createServer((req, res) => {
      setTimeout(() => res.end(req.url), req.url === '/slow' ? 300 : 0);
    });
    server.keepAliveTimeout = 10_000;
    const closer = gracefulCloser(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const agent = new http.Agent({ keepAlive: true });
    const get = (p: string) =>
      new Promise<{ body: string; connection: string | undefined }>((resolve, reject) => {
        http
          .get({ port, host: '127.0.0.1', path: p, agent }, (res) => {
            let body = '';
            res.on('data', (d: Buffer) => (body += d.toString()));
            res.on('end', () => resolve({ body, connection: res.headers.connection }));
          })
          .on('error', reject);
      });
    try {
      // Two idle keep-alive connections, then one request in flight on a third.
      await Promise.all([get('/a'), get('/b')]);
      const slow = get('/slow');
      await new Promise((r) => setTimeout(r, 100));
      const started = Date.now();
      await closer.close();
      const took = Date.now() - started;

      expect(await slow).toEqual({ body: '/slow', connection: 'close' });
      expect(took).toBeLessThan(2000);
      expect(server.listening).toBe(false);
    } finally {
      agent.destroy();
      server.closeAllConnections();
    }
  });

  it('cuts, after forceAfterMs, an answer that can never finish (a stream to a client that stopped reading)', async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(200);
      res.write('first part; the rest never comes');
    });
    const closer = gracefulCloser(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const cut = new Promise<string>((resolve) => {
      http.get({ port, host: '127.0.0.1', path: '/' }, (res) => {
        res.on('data', () => {});
        res.on('close', () => resolve(res.complete ? 'complete' : 'cut'));
      });
    });
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await closer.close({ forceAfterMs: 300 });
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(250);
    expect(took).toBeLessThan(2000);
    expect(await cut).toBe('cut');
    expect(server.listening).toBe(false);
  });
});
