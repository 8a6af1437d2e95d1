import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const NATS_SERVER_BIN = process.env.SORTIE_TEST_NATS_SERVER ?? '/usr/sbin/nats-server';
/** The shared NATS the CI script starts; tests that need their own (to restart it) use startNatsServer. */
export const TEST_NATS_URL = process.env.SORTIE_TEST_NATS_URL ?? 'nats://127.0.0.1:4222';

export interface TestNatsServer {
  url: string;
  /** Stop it (SIGTERM) keeping its JetStream store, as a restart would. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stop and delete its store. */
  destroy(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts TCP connections on 127.0.0.1:`port`; throws after `timeoutMs`. */
export async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nats-server did not listen on ${port} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A private nats-server with JetStream on a free loopback port and its own store, for restart tests. */
export async function startNatsServer(): Promise<TestNatsServer> {
  const port = await freePort();
  const storeDir = await mkdtemp(path.join(tmpdir(), 'sortie-nats-'));
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(NATS_SERVER_BIN, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', storeDir], { stdio: 'ignore' });
    await waitForPort(port, 10_000);
  };
  const stop = async () => {
    const c = child;
    child = undefined;
    if (!c || c.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      c.once('exit', () => resolve());
      c.kill('SIGTERM');
    });
  };
  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    stop,
    start,
    destroy: async () => {
      await stop();
      await rm(storeDir, { recursive: true, force: true });
    },
  };
}

/** A namespace no other test run uses, so parallel test files never share a stream. */
export function uniqueNatsNamespace(): string {
  return `t${crypto.randomUUID().replaceAll('-', '').slice(0, 12)}`;
}

/** Remove a test run's delivery stream (and its consumer), so the shared NATS does not fill up. */
export async function dropDeliveryStream(url: string, namespace: string): Promise<void> {
  const { connect } = await import('@nats-io/transport-node');
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const { jetStreamNames } = await import('../delivery/nats-queue.ts');
  const nc = await connect({ servers: url, maxReconnectAttempts: 0 });
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete(jetStreamNames(namespace).stream).catch(() => false);
  } finally {
    await nc.close();
  }
}
