// deploy/compose.nats-cluster.yaml against compose.yaml and the cloud's config, and its three nodes'
// command lines run with this machine's nats-server (host names and ports mapped to loopback): they must
// form a cluster that holds a stream on three replicas, as the cloud's setting asks.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect as tcpConnect, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '@sortie/cloud';
import { NATS_SERVER_BIN } from '@sortie/cloud/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { environmentOf, interpolateDeep } from './deploy-files.ts';

const ROOT = new URL('../../', import.meta.url);
const read = (p: string) => readFileSync(new URL(p, ROOT), 'utf8');

interface Service {
  command?: string[];
  environment?: unknown;
  volumes?: string[];
  depends_on?: Record<string, { condition?: string }>;
  healthcheck?: { test: string[] };
  image?: string;
}
interface ComposeFile {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

const OPERATOR_ENV = { SORTIE_SECRET_KEY: Buffer.alloc(32, 1).toString('base64'), POSTGRES_PASSWORD: 'abc123' };
const base = interpolateDeep(parse(read('compose.yaml')) as ComposeFile, OPERATOR_ENV);
const overlay = interpolateDeep(parse(read('deploy/compose.nats-cluster.yaml'), { merge: true }) as ComposeFile, OPERATOR_ENV);

/** Docker Compose's merge of the two files, for the keys this overlay sets (maps merge, command and image replace). */
function merged(name: string): Service {
  const a = base.services[name] ?? {};
  const b = overlay.services[name] ?? {};
  return {
    ...a,
    ...b,
    environment: { ...environmentOf(a), ...environmentOf(b) },
    depends_on: { ...(a.depends_on ?? {}), ...(b.depends_on ?? {}) },
    volumes: [...new Map([...(a.volumes ?? []), ...(b.volumes ?? [])].map((v) => [v.split(':')[1], v])).values()],
  };
}

const flag = (command: string[], name: string) => {
  const i = command.indexOf(name);
  return i < 0 ? undefined : command[i + 1];
};

const cloudConfig = loadConfig(environmentOf(merged('cloud')));
const nodes = cloudConfig.natsUrl!.split(',').map((u) => new URL(u.trim()).hostname);

describe('deploy/compose.nats-cluster.yaml', () => {
  it('gives the cloud every node and a delivery stream on three replicas', () => {
    expect(cloudConfig.natsStreamReplicas).toBe(3);
    expect(nodes).toHaveLength(3);
    expect(new Set(nodes).size).toBe(3);
    for (const node of nodes) {
      expect(merged(node).command, node).toBeDefined();
      // The cloud starts once every node is healthy.
      expect(merged('cloud').depends_on?.[node]?.condition, node).toBe('service_healthy');
      expect(merged(node).healthcheck?.test.join(' '), node).toContain('/healthz');
    }
  });

  it('makes each node a JetStream server of one cluster, with its own name and its own volume, routed to all', () => {
    const names = new Set<string>();
    const stores = new Set<string>();
    for (const node of nodes) {
      const command = merged(node).command!;
      expect(command).toContain('--jetstream');
      names.add(flag(command, '--server_name')!);
      expect(flag(command, '--cluster_name')).toBe('sortie');
      const routes = flag(command, '--routes')!.split(',').map((r) => new URL(r).hostname);
      expect(routes.sort()).toEqual([...nodes].sort());
      const storeDir = flag(command, '--store_dir')!;
      const volume = merged(node).volumes!.find((v) => v.endsWith(`:${storeDir}`))!.split(':')[0]!;
      expect({ ...base.volumes, ...overlay.volumes }).toHaveProperty(volume);
      stores.add(volume);
    }
    expect(names.size).toBe(3);
    expect(stores.size).toBe(3);
  });

  describe('its command lines, run with this machine nats-server on loopback', () => {
    const children: ChildProcess[] = [];
    let dir = '';
    afterAll(async () => {
      for (const c of children) c.kill('SIGTERM');
      await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((r) => c.once('exit', r)) : undefined)));
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it('form a cluster that keeps a stream on three replicas', async () => {
      dir = await mkdtemp(path.join(tmpdir(), 'sortie-compose-nats-'));
      const listeners = await Promise.all(
        Array.from({ length: nodes.length * 3 }, () => new Promise<ReturnType<typeof createServer>>((resolve) => {
          const s = createServer();
          s.listen(0, '127.0.0.1', () => resolve(s));
        })),
      );
      const free = listeners.map((s) => (s.address() as AddressInfo).port);
      await Promise.all(listeners.map((s) => new Promise((r) => s.close(r))));
      const ports = Object.fromEntries(nodes.map((n, i) => [n, { client: free[3 * i]!, route: free[3 * i + 1]!, http: free[3 * i + 2]! }]));
      for (const node of nodes) {
        const p = ports[node]!;
        const args = merged(node).command!.map((arg, i, all) => {
          if (all[i - 1] === '--store_dir') return path.join(dir, node);
          if (all[i - 1] === '--http_port') return String(p.http);
          if (all[i - 1] === '--cluster') return `nats://127.0.0.1:${p.route}`;
          if (all[i - 1] === '--routes') return arg.split(',').map((r) => `nats://127.0.0.1:${ports[new URL(r).hostname]!.route}`).join(',');
          return arg;
        });
        children.push(spawn(NATS_SERVER_BIN, [...args, '-a', '127.0.0.1', '-p', String(p.client)], { stdio: 'ignore' }));
      }
      for (const node of nodes) {
        const port = ports[node]!.client;
        const until = Date.now() + 20_000;
        while (!(await new Promise<boolean>((r) => tcpConnect(port, '127.0.0.1', function (this: any) { this.destroy(); r(true); }).once('error', () => r(false))))) {
          if (Date.now() > until) throw new Error(`${node} did not listen`);
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      const { connect } = await import('@nats-io/transport-node');
      const { jetstreamManager } = await import('@nats-io/jetstream');
      const nc = await connect({ servers: nodes.map((n) => `nats://127.0.0.1:${ports[n]!.client}`) });
      try {
        let info;
        const until = Date.now() + 30_000;
        for (;;) {
          try {
            const jsm = await jetstreamManager(nc, { timeout: 2000 });
            info = await jsm.streams.add({ name: 'COMPOSE_CHECK', subjects: ['compose.check.>'], num_replicas: 3 });
            break;
          } catch (error) {
            // the cluster is still electing its meta leader
            if (Date.now() > until) throw error;
            await new Promise((r) => setTimeout(r, 250));
          }
        }
        expect(info.config.num_replicas).toBe(3);
        const members = [info.cluster?.leader, ...(info.cluster?.replicas ?? []).map((r) => r.name)].sort();
        expect(members).toEqual(nodes.map((n) => flag(merged(n).command!, '--server_name')).sort());
      } finally {
        await nc.close();
      }
    }, 60_000);
  });
});
