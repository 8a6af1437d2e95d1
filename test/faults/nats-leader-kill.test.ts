import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createWebhookReceiver, type WebhookReceiver } from '@sortie/contracts/examples/webhook-receiver';
import {
  eventually,
  freePort,
  setUpDispatchingOrg,
  startChildCloudFixture,
  startHttpsReceiver,
  startServiceChild,
  verifiedBody,
  type ChildCloudFixture,
  type DispatchingOrg,
  type ServiceChild,
  type TestReceiver,
} from '@sortie/cloud/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNatsCluster, streamLeader, streamReplicas, type NatsCluster } from './nats-cluster.ts';

/**
 * docs/operations.md ("A NATS node fails") promises: with the delivery stream on three replicas, losing
 * any one node, even the stream's leader, loses no dispatched command, and deliveries resume within
 * RESUME_BOUND_MS. This test holds the service to it with real processes: three nats-servers, the cloud
 * in a child process, an HTTPS receiver running the example receiver (acts once per command.id).
 */
const COMMANDS = 300;
/** The kill comes after this many dispatches have been answered, so both sides of it carry traffic. */
const KILL_AFTER = 100;
/**
 * The documented bound (docs/operations.md): a dispatch answered after the kill is POSTed within this.
 * Where it comes from: JetStream's followers wait 4–9 s for a lost leader before electing another
 * (nats-server's raft election timeout, not configurable); a publish sent to the dead leader meanwhile
 * times out after 5 s (nats-queue.ts) and the relay publishes it again within its 2 s grace and 1 s
 * interval; a pull open on the dead consumer leader ends within 2 s and is sent again.
 */
const RESUME_BOUND_MS = 20_000;

describe('the NATS stream leader SIGKILLed in the middle of a dispatch run', () => {
  let f: ChildCloudFixture;
  let cluster: NatsCluster;
  let https: TestReceiver;
  let cloud: ServiceChild;
  let org: DispatchingOrg;
  let example: WebhookReceiver;
  let journalDir: string;
  const acted = new Map<string, number>();

  beforeAll(async () => {
    [f, cluster] = await Promise.all([startChildCloudFixture(), startNatsCluster(3)]);
    https = await startHttpsReceiver(f.cert);
    const port = await freePort();
    cloud = await startServiceChild(
      f.env({
        SORTIE_NATS_URL: cluster.url,
        SORTIE_NATS_STREAM_REPLICAS: '3',
        SORTIE_HTTP_PORT: String(port),
        SORTIE_PUBLIC_URL: `http://127.0.0.1:${port}`,
        SORTIE_LOG_LEVEL: 'info',
        SORTIE_WEBHOOK_RETRY_SCHEDULE: '500ms',
      }),
    );
    org = await setUpDispatchingOrg(f, cloud.url, https.port, 'nats leader kill');
    journalDir = await mkdtemp(path.join(tmpdir(), 'sortie-fault-receiver-'));
    example = await createWebhookReceiver({
      secrets: [org.secret],
      journalPath: path.join(journalDir, 'journal.jsonl'),
      act: async (command) => {
        acted.set(command.id, (acted.get(command.id) ?? 0) + 1);
        return { state: 'acked', detail: 'done' };
      },
    });
    https.answer((req) => example.handle(new Uint8Array(req.rawBody), req.headers));
  }, 90_000);

  afterAll(async () => {
    if (cloud && cloud.process.exitCode === null && cloud.process.signalCode === null) {
      cloud.process.kill('SIGTERM');
      await cloud.exited;
    }
    await example?.close();
    await https?.close();
    await cluster?.close();
    await f?.close();
    if (journalDir) await rm(journalDir, { recursive: true, force: true });
  }, 60_000);

  it('every command is delivered, acted on once and acked; deliveries resume within the documented time', async () => {
    const { stream, consumer } = { stream: `${f.namespace.toUpperCase()}_DELIVERIES`, consumer: `${f.namespace}-delivery-worker` };
    const placement = await streamReplicas(cluster.url, stream, consumer);
    expect(placement.stream).toBe(3);
    expect(placement.consumer).toBe(3);

    const ids: string[] = [];
    for (let i = 0; i < COMMANDS; i += 20) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(20, COMMANDS - i) }, async (_, j) => {
          const r = await org.call(cloud.url, '/api/commands/create', { experimentId: org.experimentId, datasetId: org.datasetId, commandText: 'WP', relTime: i + j });
          if (r.status !== 201) throw new Error(`create: ${r.status} ${JSON.stringify(r.body)}`);
          return r.body.id as string;
        }),
      );
      ids.push(...batch);
    }

    let answered = 0;
    let killedAt = 0;
    let leader: string | undefined;
    let killing: Promise<void> | undefined;
    const answeredAt = new Map<string, number>();
    const statuses: number[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < ids.length) {
          const id = ids[next++]!;
          const r = await org.call(cloud.url, '/api/commands/dispatch', { commandId: id, ackTimeoutSeconds: 600 });
          statuses.push(r.status);
          answeredAt.set(id, Date.now());
          if (++answered === KILL_AFTER) {
            killing = (async () => {
              leader = await streamLeader(cluster.url, stream);
              killedAt = Date.now();
              await cluster.node(leader!).kill('SIGKILL');
            })();
          }
        }
      }),
    );
    await killing;
    expect(leader).toMatch(/^n[123]$/);
    // Dispatch decides in Postgres: a publish NATS could not take is the relay's, never the client's error.
    expect(statuses.filter((s) => s !== 200)).toEqual([]);

    const acked = await eventually(
      async () => {
        const rows = await f.database.db.selectFrom('commands').select(['id', 'status']).where('id', 'in', ids).execute();
        return rows.every((r) => r.status === 'acked') ? rows : undefined;
      },
      90_000,
      `${ids.length} commands to be acked`,
    );
    expect(acked).toHaveLength(ids.length);
    // A receiver acks as soon as it has the POST, and the attempt's record may reach the database a few
    // milliseconds after that (records are batched): every job must end delivered, so wait for it.
    const readJobs = () => f.database.db.selectFrom('delivery_jobs').select(['command_id', 'state']).where('command_id', 'in', ids).execute();
    await eventually(async () => ((await readJobs()).every((j) => j.state === 'delivered') ? true : undefined), 10_000, 'every job recorded delivered').catch(() => undefined);
    const jobs = await readJobs();
    expect(jobs.filter((j) => j.state !== 'delivered')).toEqual([]);

    // At least once on the wire, exactly once in the receiver's hands.
    const posts = new Map<string, number[]>();
    for (const req of https.requests) {
      const body = await verifiedBody(req, org.secret);
      posts.set(body.command.id, [...(posts.get(body.command.id) ?? []), req.receivedAt]);
    }
    expect(ids.filter((id) => !posts.has(id))).toEqual([]);
    expect(ids.filter((id) => acted.get(id) !== 1)).toEqual([]);
    const duplicates = [...posts.values()].reduce((n, times) => n + times.length - 1, 0);

    // Resumption: a command dispatched after the kill reaches the receiver within the documented bound.
    const after = ids.filter((id) => answeredAt.get(id)! > killedAt);
    expect(after.length).toBeGreaterThan(50);
    const waits = after.map((id) => Math.min(...posts.get(id)!) - answeredAt.get(id)!);
    const worst = Math.max(...waits);
    expect(worst).toBeLessThan(RESUME_BOUND_MS);
    // And the gap in deliveries the kill caused, seen from the receiver.
    const times = https.requests.map((r) => r.receivedAt).filter((t) => t >= killedAt).sort((a, b) => a - b);
    const firstAfterKill = times[0]! - killedAt;
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    const longestGap = Math.max(firstAfterKill, ...gaps);
    expect(longestGap).toBeLessThan(RESUME_BOUND_MS);

    expect(cloud.process.exitCode).toBeNull();
    expect(cloud.logs().filter((l) => l.level >= 50)).toEqual([]);
    console.log(
      `nats leader kill: killed ${leader} after ${KILL_AFTER} of ${COMMANDS} dispatches; ${after.length} dispatched after it; ` +
        `all ${ids.length} acked, each acted on once; ${https.requests.length} POSTs (${duplicates} duplicates); ` +
        `longest delivery gap after the kill ${longestGap} ms, worst dispatch-to-POST after it ${worst} ms`,
    );

    // The killed node comes back and catches up; the stream has its three current replicas again.
    await cluster.node(leader!).start();
    await eventually(
      async () => {
        const { connect } = await import('@nats-io/transport-node');
        const { jetstreamManager } = await import('@nats-io/jetstream');
        const nc = await connect({ servers: cluster.url.split(',') });
        try {
          const info = await (await jetstreamManager(nc)).streams.info(stream);
          const peers = info.cluster?.replicas ?? [];
          return peers.length === 2 && peers.every((p) => p.current && !p.offline) ? true : undefined;
        } catch {
          return undefined;
        } finally {
          await nc.close();
        }
      },
      30_000,
      'the restarted node to be a current replica again',
    );
  }, 180_000);
});
