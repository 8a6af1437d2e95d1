import { once } from 'node:events';
import { createServer as createHttpServer } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import { connect, createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createPinnedLookup } from './pinned-lookup.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

function lookupOnce(
  lookup: ReturnType<typeof createPinnedLookup>,
  hostname: string,
  options: Parameters<ReturnType<typeof createPinnedLookup>>[1],
): Promise<{ err: NodeJS.ErrnoException | null; address: unknown; family: number | undefined }> {
  return new Promise((resolve) => {
    lookup(hostname, options, (err, address, family) => resolve({ err, address, family }));
  });
}

describe('createPinnedLookup answers', () => {
  const pinned = createPinnedLookup([
    { address: '93.184.216.34', family: 4 },
    { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 },
  ]);

  it('with the first address when one is asked for', async () => {
    expect(await lookupOnce(pinned, 'example.com', {})).toEqual({ err: null, address: '93.184.216.34', family: 4 });
  });

  it('with the first address of the asked family', async () => {
    const r6 = await lookupOnce(pinned, 'example.com', { family: 6 });
    expect(r6).toEqual({ err: null, address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 });
    const r4 = await lookupOnce(pinned, 'example.com', { family: 'IPv4' });
    expect(r4).toEqual({ err: null, address: '93.184.216.34', family: 4 });
  });

  it('with the array form when all is set', async () => {
    const all = await lookupOnce(pinned, 'example.com', { all: true });
    expect(all.address).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 },
    ]);
    const only6 = await lookupOnce(pinned, 'example.com', { all: true, family: 6 });
    expect(only6.address).toEqual([{ address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 }]);
  });

  it('with ENOTFOUND when no pinned address has the asked family', async () => {
    const v4only = createPinnedLookup([{ address: '93.184.216.34', family: 4 }]);
    const r = await lookupOnce(v4only, 'example.com', { family: 6 });
    expect(r.err?.code).toBe('ENOTFOUND');
  });

  it('the same way every time: a second resolution cannot change the answer', async () => {
    const a = await lookupOnce(pinned, 'example.com', {});
    const b = await lookupOnce(pinned, 'example.com', {});
    expect(b).toEqual(a);
  });

  it('never synchronously', () => {
    let called = false;
    pinned('example.com', {}, () => {
      called = true;
    });
    expect(called).toBe(false);
  });

  it('only for its own host when one is named', async () => {
    const lookup = createPinnedLookup([{ address: '93.184.216.34', family: 4 }], { hostname: 'example.com' });
    expect((await lookupOnce(lookup, 'EXAMPLE.com.', {})).address).toBe('93.184.216.34');
    expect((await lookupOnce(lookup, 'other.example', {})).err?.code).toBe('ENOTFOUND');
  });

  it('refuses to be built with nothing to pin', () => {
    expect(() => createPinnedLookup([])).toThrow(/at least one/);
  });
});

describe('createPinnedLookup on real sockets (loopback only, no DNS)', () => {
  it('net.connect reaches the pinned address for a name that cannot resolve', async () => {
    const accepted: Socket[] = [];
    const server = createServer((s) => {
      accepted.push(s);
      s.end('pinned-ok');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    cleanups.push(() => new Promise((r) => server.close(() => r())));
    const { port } = server.address() as AddressInfo;

    // `.invalid` never resolves (RFC 2606); only the pinned lookup can make this connect.
    const lookup = createPinnedLookup([{ address: '127.0.0.1', family: 4 }]);
    const socket = connect({ host: 'pinned.invalid', port, lookup });
    socket.setEncoding('utf8');
    let body = '';
    socket.on('data', (chunk: string) => {
      body += chunk;
    });
    await once(socket, 'connect');
    expect(socket.remoteAddress).toBe('127.0.0.1');
    expect(socket.remotePort).toBe(port);
    await once(socket, 'end');
    expect(body).toBe('pinned-ok');
    expect(accepted).toHaveLength(1);
    socket.destroy();
  });

  it('net.connect with happy eyeballs (all: true) still uses only pinned addresses', async () => {
    const server = createServer((s) => s.end());
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    cleanups.push(() => new Promise((r) => server.close(() => r())));
    const { port } = server.address() as AddressInfo;

    const seen: Array<{ all: unknown }> = [];
    const inner = createPinnedLookup([{ address: '127.0.0.1', family: 4 }]);
    const socket = connect({
      host: 'pinned.invalid',
      port,
      autoSelectFamily: true,
      lookup: (hostname, options, cb) => {
        seen.push({ all: options.all });
        inner(hostname, options, cb);
      },
    });
    await once(socket, 'connect');
    expect(socket.remoteAddress).toBe('127.0.0.1');
    expect(seen).toEqual([{ all: true }]);
    socket.destroy();
  });

  it('undici Agent({ connect: { lookup } }) sends to the pinned address and keeps the Host header', async () => {
    let seenHeaders: IncomingHttpHeaders | undefined;
    const server = createHttpServer((req, res) => {
      seenHeaders = req.headers;
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`remote=${req.socket.remoteAddress}`);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    cleanups.push(() => new Promise((r) => server.close(() => r())));
    const { port } = server.address() as AddressInfo;

    const lookup = createPinnedLookup([{ address: '127.0.0.1', family: 4 }], { hostname: 'pinned.invalid' });
    const dispatcher = new Agent({ connect: { lookup } });
    cleanups.push(() => dispatcher.close());

    const res = await request(`http://pinned.invalid:${port}/`, { dispatcher });
    expect(res.statusCode).toBe(200);
    expect(await res.body.text()).toBe('remote=127.0.0.1');
    expect(seenHeaders?.host).toBe(`pinned.invalid:${port}`);
  });

  it('undici fails instead of resolving when the pinned lookup refuses a foreign host', async () => {
    const lookup = createPinnedLookup([{ address: '127.0.0.1', family: 4 }], { hostname: 'pinned.invalid' });
    const dispatcher = new Agent({ connect: { lookup } });
    cleanups.push(() => dispatcher.close());
    await expect(request('http://other.invalid:9/', { dispatcher })).rejects.toMatchObject({ code: 'ENOTFOUND' });
  });
});
