import { connect, createServer, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  port: number;
  /** Refuse connections and cut the open ones, as a dependency going away would. */
  stop(): Promise<void>;
  /** Listen again on the same port. */
  start(): Promise<void>;
}

/**
 * A loopback TCP forwarder to `target`, so a test can make Postgres unreachable for one service
 * without touching the shared server other tests use.
 */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;
  const start = async () => {
    const s = createServer((client) => {
      const upstream = connect(target.port, target.host);
      for (const socket of [client, upstream]) {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => resolve());
    });
    port = (s.address() as { port: number }).port;
    server = s;
  };
  await start();
  return {
    get port() {
      return port;
    },
    start,
    stop: async () => {
      const s = server;
      server = undefined;
      for (const socket of sockets) socket.destroy();
      if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
    },
  };
}
