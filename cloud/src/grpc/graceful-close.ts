import type http from 'node:http';
import http2 from 'node:http2';
import type net from 'node:net';

const STREAM_SWEEP_MS = 20;
const UNDER_DENO = 'Deno' in globalThis;

export type CloseOutcome = 'drained' | 'forced';

/**
 * Closing the gRPC port (h2c and HTTP/1.1 on one listener) without cutting calls in flight: the
 * listener stops accepting, every HTTP/2 session gets a GOAWAY (`session.close()`: streams already
 * open finish, new ones are refused, so clients retry elsewhere), HTTP/1.1 requests in flight are
 * answered with `Connection: close`, and connections with nothing in flight are dropped at once.
 * `onForce` runs and every socket is destroyed if that has not finished within `forceAfterMs`.
 *
 * A stream whose answer is complete while its client is still sending (a StreamSubmit ended
 * UNAVAILABLE) would hold its session open until the client gives up; once the answer's END_STREAM
 * is out it gets RST_STREAM NO_ERROR, as RFC 9113 §8.1 allows. Not under Deno: there that reset also
 * ended a unary call in flight on the same connection ("Premature close"), so such a stream waits for
 * its client or for `forceAfterMs`.
 *
 * Node's own tracking does not help here: the h2 and h1 servers never listen (h2c-listener.ts hands
 * them sockets), so `closeIdleConnections()` knows no connections. Call before any connection arrives.
 */
export function grpcPortCloser(input: { server: net.Server; sockets: Set<net.Socket>; h2: http2.Http2Server; h1: http.Server }) {
  const { server, sockets, h2, h1 } = input;
  const sessions = new Set<http2.ServerHttp2Session>();
  const streams = new Set<http2.ServerHttp2Stream>();
  const h2Sockets = new WeakSet<net.Socket>();
  /** HTTP/1.1 responses not yet closed, per connection. */
  const h1InFlight = new Map<net.Socket, Set<http.ServerResponse>>();
  let closing = false;

  h2.on('connection', (socket: net.Socket) => h2Sockets.add(socket));
  h2.on('session', (session: http2.ServerHttp2Session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
    // A connection whose preface arrived after close began gets its GOAWAY straight away.
    if (closing) session.close();
  });
  h2.on('stream', (stream: http2.ServerHttp2Stream) => {
    streams.add(stream);
    stream.once('close', () => streams.delete(stream));
  });
  h1.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const socket = req.socket;
    let open = h1InFlight.get(socket);
    if (!open) h1InFlight.set(socket, (open = new Set()));
    open.add(res);
    if (closing) res.shouldKeepAlive = false;
    res.once('close', () => {
      open.delete(res);
      if (open.size > 0) return;
      h1InFlight.delete(socket);
      // Answered with keep-alive before close began: end it now that nothing is in flight on it.
      if (closing) socket.end();
    });
  });

  return {
    close(options: { forceAfterMs: number; onForce?: () => void }): Promise<CloseOutcome> {
      closing = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const session of sessions) session.close();
      for (const socket of sockets) {
        if (h2Sockets.has(socket)) continue;
        const open = h1InFlight.get(socket);
        if (open) {
          for (const res of open) if (!res.headersSent) res.shouldKeepAlive = false;
        } else {
          // Idle HTTP/1.1, or still sniffing its protocol: no request of it is in flight.
          socket.destroy();
        }
      }
      // No event says when END_STREAM has been sent, so look while closing.
      const sweeper = setInterval(() => {
        if (UNDER_DENO) return;
        for (const stream of streams) {
          const state = stream.state;
          if (state?.localClose === 1 && state.remoteClose !== 1) stream.close(http2.constants.NGHTTP2_NO_ERROR);
        }
      }, STREAM_SWEEP_MS);
      let outcome: CloseOutcome = 'drained';
      const timer = setTimeout(() => {
        outcome = 'forced';
        options.onForce?.();
        for (const socket of sockets) socket.destroy();
      }, options.forceAfterMs);
      return closed.then(() => {
        clearTimeout(timer);
        clearInterval(sweeper);
        return outcome;
      });
    },
  };
}
