import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../platform/logger.ts';
import { migratedTestDatabase, type MigratedTestDatabase } from '../testing/test-database.ts';
import { dropDeliveryStream, TEST_NATS_URL, uniqueNatsNamespace } from '../testing/nats-server.ts';
import { loadPendingJobs } from './jobs.ts';
import { MemoryDeliveryQueue } from './memory-queue.ts';
import { NatsDeliveryQueue } from './nats-queue.ts';
import { ack, nak, type DeliveryQueue, type JobDecision, type QueuedJob } from './queue.ts';

/**
 * One contract, two queues. Both are driven from real outbox rows in the real Postgres; the JetStream
 * one runs against the real NATS. What a queue must do: deliver each published job, collapse a repeated
 * publish, redeliver after nak(delay) and never after ack, stay within its concurrency, keep unfinished
 * work across a restart, and on stop finish what runs and hand back what it has not started.
 */

const logger = createLogger('silent');
let database: MigratedTestDatabase;
let organizationId: string;
let commandId: string;
let endpointId: string;

beforeAll(async () => {
  database = await migratedTestDatabase();
  const db = database.db;
  organizationId = crypto.randomUUID();
  const experimentId = crypto.randomUUID();
  const datasetId = crypto.randomUUID();
  commandId = crypto.randomUUID();
  endpointId = crypto.randomUUID();
  await db.insertInto('organizations').values({ id: organizationId, name: 'queue contract' }).execute();
  await db.insertInto('experiments').values({ id: experimentId, organization_id: organizationId, name: 'e', description: '' }).execute();
  await db.insertInto('datasets').values({ id: datasetId, organization_id: organizationId, experiment_id: experimentId, name: 'd', storage_shape: 'wide' }).execute();
  await db
    .insertInto('commands')
    .values({
      id: commandId,
      organization_id: organizationId,
      experiment_id: experimentId,
      dataset_id: datasetId,
      command_text: 'X',
      description: '',
      args: '{}',
      template_key: '',
      category: '',
      issued_by_name: '',
      issued_by_email: '',
      status_detail: '',
      rel_time: 0,
      issued_at: new Date(),
      status: 'queued',
    })
    .execute();
  await db
    .insertInto('webhook_endpoints')
    .values({ id: endpointId, organization_id: organizationId, label: '', url: 'https://x.invalid/', secret_ciphertext: 'x', updated_at: new Date() })
    .execute();
});

afterAll(() => database?.drop());

/** A real pending outbox row. The unique (command, endpoint) pair is avoided with a fresh endpoint each time. */
async function seedJob(): Promise<QueuedJob> {
  const db = database.db;
  const endpoint = crypto.randomUUID();
  await db
    .insertInto('webhook_endpoints')
    .values({ id: endpoint, organization_id: organizationId, label: '', url: 'https://x.invalid/', secret_ciphertext: 'x', updated_at: new Date() })
    .execute();
  const id = crypto.randomUUID();
  await db.insertInto('delivery_jobs').values({ id, organization_id: organizationId, command_id: commandId, endpoint_id: endpoint }).execute();
  return { jobId: id, organizationId };
}

async function finish(jobId: string) {
  await database.db.updateTable('delivery_jobs').set({ state: 'delivered', finished_at: new Date() }).where('id', '=', jobId).execute();
}

interface Implementation {
  name: string;
  /** A new queue instance on the same backing store (a restarted process gets the same). */
  open(): Promise<DeliveryQueue>;
  cleanup(): Promise<void>;
}

const namespace = uniqueNatsNamespace();
const implementations: Implementation[] = [
  {
    name: 'in-process (embedded mode)',
    open: async () => new MemoryDeliveryQueue({ loadPending: () => loadPendingJobs(database.db, new Date()), logger }),
    cleanup: async () => {},
  },
  {
    name: 'JetStream',
    open: () => NatsDeliveryQueue.connect({ url: TEST_NATS_URL, namespace, logger }),
    cleanup: () => dropDeliveryStream(TEST_NATS_URL, namespace),
  },
];

/** Records every call; answers with `decide`. */
function recorder(decide: (job: QueuedJob, n: number) => JobDecision | Promise<JobDecision> = () => ack()) {
  const calls: Array<{ job: QueuedJob; redelivered: boolean; at: number }> = [];
  const handler = async (job: QueuedJob, d: { redelivered: boolean }) => {
    calls.push({ job, redelivered: d.redelivered, at: Date.now() });
    return decide(job, calls.filter((c) => c.job.jobId === job.jobId).length);
  };
  const waitFor = async (n: number, timeoutMs = 10_000) => {
    const until = Date.now() + timeoutMs;
    while (calls.length < n) {
      if (Date.now() > until) throw new Error(`got ${calls.length} of ${n} handler calls`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  return { calls, handler, waitFor };
}

const settle = (ms = 400) => new Promise((r) => setTimeout(r, ms));

describe.each(implementations)('delivery queue contract: $name', (impl) => {
  afterAll(() => impl.cleanup());

  it('hands each published job to the handler once when it acks', async () => {
    const queue = await impl.open();
    const r = recorder();
    try {
      await queue.start(r.handler, { concurrency: 4 });
      const jobs = [await seedJob(), await seedJob(), await seedJob()];
      await queue.publish(jobs);
      await r.waitFor(3);
      await settle();
      expect(r.calls.map((c) => c.job.jobId).sort()).toEqual(jobs.map((j) => j.jobId).sort());
      expect(r.calls.every((c) => c.job.organizationId === organizationId && !c.redelivered)).toBe(true);
      for (const j of jobs) await finish(j.jobId);
    } finally {
      await queue.stop();
    }
  });

  it('collapses a repeated publish of a job still queued', async () => {
    const queue = await impl.open();
    const r = recorder();
    try {
      const job = await seedJob();
      await queue.publish([job]);
      await queue.publish([job]);
      await queue.start(r.handler, { concurrency: 4 });
      await r.waitFor(1);
      await settle();
      expect(r.calls.map((c) => c.job.jobId)).toEqual([job.jobId]);
      await finish(job.jobId);
    } finally {
      await queue.stop();
    }
  });

  it('redelivers after nak(delay), not before, and stops after ack', async () => {
    const queue = await impl.open();
    const r = recorder((_job, n) => (n === 1 ? nak(300) : ack()));
    try {
      await queue.start(r.handler, { concurrency: 4 });
      const job = await seedJob();
      await queue.publish([job]);
      await r.waitFor(2);
      expect(r.calls[1]!.at - r.calls[0]!.at).toBeGreaterThanOrEqual(280);
      expect(r.calls[1]!.redelivered).toBe(true);
      await settle(600);
      expect(r.calls).toHaveLength(2);
      await finish(job.jobId);
    } finally {
      await queue.stop();
    }
  });

  it('runs no more handlers at once than its concurrency', async () => {
    const queue = await impl.open();
    let running = 0;
    let peak = 0;
    const r = recorder(async () => {
      running += 1;
      peak = Math.max(peak, running);
      await new Promise((res) => setTimeout(res, 60));
      running -= 1;
      return ack();
    });
    try {
      await queue.start(r.handler, { concurrency: 2 });
      const jobs = await Promise.all(Array.from({ length: 8 }, () => seedJob()));
      await queue.publish(jobs);
      await r.waitFor(8);
      expect(peak).toBe(2);
      for (const j of jobs) await finish(j.jobId);
    } finally {
      await queue.stop();
    }
  });

  it('keeps a published, unfinished job across a restart', async () => {
    const first = await impl.open();
    const job = await seedJob();
    await first.publish([job]);
    await first.stop();

    const second = await impl.open();
    const r = recorder();
    try {
      await second.start(r.handler, { concurrency: 4 });
      await r.waitFor(1);
      expect(r.calls[0]!.job.jobId).toBe(job.jobId);
      await finish(job.jobId);
    } finally {
      await second.stop();
    }
  });

  it('stop lets handlers in flight finish, starts none after, and the next process gets the rest at once', async () => {
    const first = await impl.open();
    const gates: Array<() => void> = [];
    const r = recorder(async (job) => {
      await new Promise<void>((release) => gates.push(release));
      await finish(job.jobId);
      return ack();
    });
    const jobs = await Promise.all(Array.from({ length: 8 }, () => seedJob()));
    await first.start(r.handler, { concurrency: 2 });
    await first.publish(jobs);
    await r.waitFor(2);
    const stopped = first.stop();
    await settle(200);
    for (const release of gates) release();
    await stopped;
    expect(r.calls).toHaveLength(2);

    // Well inside JetStream's 60 s ack wait: what the first had fetched and not started went back at once.
    const second = await impl.open();
    const rest = recorder(async (job) => {
      await finish(job.jobId);
      return ack();
    });
    try {
      await second.start(rest.handler, { concurrency: 4 });
      await rest.waitFor(6, 5000);
      await settle();
      const handled = [...r.calls, ...rest.calls].map((c) => c.job.jobId).sort();
      expect(handled).toEqual(jobs.map((j) => j.jobId).sort());
    } finally {
      await second.stop();
    }
  });

  it('a handler that throws gets the job again later', async () => {
    const queue = await impl.open();
    const r = recorder((_job, n) => {
      if (n === 1) throw new Error('database hiccup');
      return ack();
    });
    try {
      await queue.start(r.handler, { concurrency: 1 });
      const job = await seedJob();
      await queue.publish([job]);
      await r.waitFor(2, 15_000);
      expect(r.calls[1]!.job.jobId).toBe(job.jobId);
      await finish(job.jobId);
    } finally {
      await queue.stop();
    }
  }, 20_000);
});
