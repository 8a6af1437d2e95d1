import type { Server, ServerResponse } from 'node:http';

/**
 * Closing an HTTP server gracefully. `server.close()` alone stops accepting but then waits for every
 * keep-alive connection to time out (5 s each, after its last response). Here requests in flight
 * finish and are answered with `Connection: close`, and connections with nothing in flight are closed
 * at once, so close resolves as soon as the last answer is out. Call before the server gets requests.
 *
 * `forceAfterMs` bounds the wait: an answer still going out then (a live Follow stream to a client that
 * stopped reading, whose last bytes can never leave) has its connection closed.
 */
export function gracefulCloser(server: Server): { close(options?: { forceAfterMs?: number }): Promise<void> } {
  const inFlight = new Set<ServerResponse>();
  let closing = false;
  server.on('request', (_req, res: ServerResponse) => {
    // A request that arrives on an open connection while closing still gets its real answer.
    if (closing) res.shouldKeepAlive = false;
    inFlight.add(res);
    res.once('close', () => {
      inFlight.delete(res);
      if (closing) setImmediate(() => server.closeIdleConnections());
    });
  });
  return {
    close: (options = {}) =>
      new Promise<void>((resolve) => {
        closing = true;
        for (const res of inFlight) if (!res.headersSent) res.shouldKeepAlive = false;
        const force = options.forceAfterMs === undefined ? undefined : setTimeout(() => server.closeAllConnections(), options.forceAfterMs);
        force?.unref();
        server.close(() => {
          clearTimeout(force);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
