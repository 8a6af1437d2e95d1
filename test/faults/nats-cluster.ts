import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { NATS_SERVER_BIN, waitForPort } from '@sortie/cloud/testing';

/**
 * A three-node NATS JetStream cluster on loopback, each node a nats-server process with its own store
 * and ports, so a test can SIGKILL one (the stream's leader) as a machine failure would.
 */
export interface NatsCluster {
  /** The client URL list every cloud process gets: all three nodes, comma-separated. */
  url: string;
  nodes: NatsNode[];
  node(name: string): NatsNode;
  close(): Promise<void>;
}

export interface NatsNode {
  name: string;
  port: number;
  /** Running, or killed and not started again. */
  running(): boolean;
  kill(signal: NodeJS.Signals): Promise<void>;
  start(): Promise<void>;
}

/** `n` distinct free loopback ports: every listener is held open until all are known, so none repeats. */
async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: n }, () => new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
      const server = createServer();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve(server));
    })),
  );
  const ports = servers.map((server) => (server.address() as AddressInfo).port);
  await Promise.all(servers.map((server) => new Promise((r) => server.close(r))));
  return ports;
}

export async function startNatsCluster(size = 3): Promise<NatsCluster> {
  const dir = await mkdtemp(path.join(tmpdir(), 'sortie-nats-cluster-'));
  const free = await freePorts(size * 2);
  const ports = Array.from({ length: size }, (_, i) => ({ client: free[2 * i]!, route: free[2 * i + 1]! }));
  const clusterName = `sortie_fault_${process.pid}`;
  const nodes: NatsNode[] = [];
  for (const [i, p] of ports.entries()) {
    const name = `n${i + 1}`;
    const routes = ports.filter((_, j) => j !== i).map((q) => `nats-route://127.0.0.1:${q.route}`);
    const configFile = path.join(dir, `${name}.conf`);
    // The production shape in small: server names (JetStream's placement needs them), one route to each
    // other node, file storage per node.
    await writeFile(
      configFile,
      [
        `server_name: ${name}`,
        `listen: 127.0.0.1:${p.client}`,
        `jetstream { store_dir: "${path.join(dir, name)}" }`,
        `cluster { name: ${clusterName}, listen: 127.0.0.1:${p.route}, routes: [${routes.map((r) => `"${r}"`).join(', ')}] }`,
      ].join('\n'),
    );
    let child: ChildProcess | undefined;
    const node: NatsNode = {
      name,
      port: p.client,
      running: () => child !== undefined && child.exitCode === null && child.signalCode === null,
      start: async () => {
        // Its log goes to a file beside its store, for a start that fails (a port taken meanwhile).
        child = spawn(NATS_SERVER_BIN, ['-c', configFile, '-l', path.join(dir, `${name}.log`)], { stdio: 'ignore' });
        await waitForPort(p.client, 20_000);
      },
      kill: async (signal) => {
        const c = child;
        if (!c || c.exitCode !== null || c.signalCode !== null) return;
        await new Promise<void>((resolve) => {
          c.once('exit', () => resolve());
          c.kill(signal);
        });
      },
    };
    nodes.push(node);
  }
  await Promise.all(nodes.map((n) => n.start()));
  await waitForJetStreamCluster(`nats://127.0.0.1:${ports[0]!.client}`, 30_000);
  return {
    url: nodes.map((n) => `nats://127.0.0.1:${n.port}`).join(','),
    nodes,
    node: (name) => {
      const found = nodes.find((n) => n.name === name);
      if (!found) throw new Error(`no NATS node ${name}`);
      return found;
    },
    close: async () => {
      await Promise.all(nodes.map((n) => n.kill('SIGTERM')));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The cluster has elected its JetStream meta leader (streams can be created) once the account info answers. */
async function waitForJetStreamCluster(url: string, timeoutMs: number): Promise<void> {
  const { connect } = await import('@nats-io/transport-node');
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const until = Date.now() + timeoutMs;
  const nc = await connect({ servers: url, maxReconnectAttempts: -1 });
  try {
    for (;;) {
      try {
        const jsm = await jetstreamManager(nc, { timeout: 2000 });
        await jsm.getAccountInfo();
        return;
      } catch (error) {
        if (Date.now() > until) throw new Error(`JetStream cluster not ready within ${timeoutMs} ms: ${(error as Error).message}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  } finally {
    await nc.close();
  }
}

/** The server name of the stream's RAFT leader, as JetStream reports it. */
export async function streamLeader(url: string, stream: string): Promise<string | undefined> {
  const { connect } = await import('@nats-io/transport-node');
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const nc = await connect({ servers: url.split(','), maxReconnectAttempts: 5 });
  try {
    const jsm = await jetstreamManager(nc, { timeout: 2000 });
    const info = await jsm.streams.info(stream);
    return info.cluster?.leader;
  } finally {
    await nc.close();
  }
}

/** Stream and consumer configuration and placement, for the assertions. */
export async function streamReplicas(url: string, stream: string, consumer: string): Promise<{ stream: number; consumer: number; consumerLeader?: string }> {
  const { connect } = await import('@nats-io/transport-node');
  const { jetstreamManager } = await import('@nats-io/jetstream');
  const nc = await connect({ servers: url.split(','), maxReconnectAttempts: 5 });
  try {
    const jsm = await jetstreamManager(nc, { timeout: 2000 });
    const s = await jsm.streams.info(stream);
    const c = await jsm.consumers.info(stream, consumer);
    return { stream: s.config.num_replicas, consumer: (c.cluster?.replicas?.length ?? 0) + (c.cluster?.leader ? 1 : 0), consumerLeader: c.cluster?.leader };
  } finally {
    await nc.close();
  }
}
