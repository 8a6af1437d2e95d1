import type http from 'node:http';
import type http2 from 'node:http2';
import net from 'node:net';

const PREFACE = Buffer.from('PRI * HTTP/2.0');
const SNIFF_TIMEOUT_MS = 10_000;

/**
 * One TCP port for HTTP/2 without TLS (h2c, which gRPC clients speak) and HTTP/1.1 (which gRPC-Web and
 * Connect clients such as browsers and plain curl speak). Node's h2c server cannot fall back to
 * HTTP/1.1 by itself, so the first bytes decide: the HTTP/2 connection preface goes to `h2`, anything
 * else to `h1`.
 */
export function createH2cListener(h2: http2.Http2Server, h1: http.Server): { server: net.Server; sockets: Set<net.Socket> } {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    let head: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
      const n = Math.min(head.length, PREFACE.length);
      if (head.length < PREFACE.length && head.subarray(0, n).equals(PREFACE.subarray(0, n))) return; // need more bytes
      socket.off('data', onData);
      socket.setTimeout(0);
      socket.pause();
      socket.unshift(head);
      if (head.subarray(0, PREFACE.length).equals(PREFACE)) {
        // The HTTP/2 session reads what is buffered on the socket itself; resuming here would drop it.
        h2.emit('connection', socket);
      } else {
        h1.emit('connection', socket);
        socket.resume();
      }
    };
    socket.on('data', onData);
    socket.on('error', () => socket.destroy());
    // A connection that never says which protocol it speaks is not kept open.
    socket.setTimeout(SNIFF_TIMEOUT_MS, () => socket.destroy());
  });
  return { server, sockets };
}
