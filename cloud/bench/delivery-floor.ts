/**
 * The least any implementation of the spec's delivery guarantees does per webhook on this machine, for
 * bench:dispatch to set beside the engine: each job written to an outbox table and published to
 * JetStream with its Nats-Msg-Id; pulled in batches; POSTed; its attempt row inserted and its job row
 * finished in one statement per batch; acked. No signature, token, body building, DNS check, lease,
 * endpoint re-read, retry logic or counters — the engine does all of those on top. The tables are
 * copies of delivery_jobs and delivery_attempts with their indexes but without foreign keys, so the
 * floor is, if anything, cheaper than the real rows.
 */
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { connect, nanos } from '@nats-io/transport-node';
import { sql } from 'kysely';
import type { Dispatcher } from 'undici';
import { request } from 'undici';
import type { Db } from '../src/db/connect.ts';

export interface FloorOptions {
  db: Db;
  natsUrl: string;
  namespace: string;
  url: string;
  dispatcher: Dispatcher;
  body: string;
  count: number;
  /** Jobs pulled, POSTed and recorded together, per worker. */
  batch: number;
  workers: number;
  /**
   * Where the jobs come from. Without it, outbox rows are written in bulk (250 to a statement) and
   * published from here: no dispatch requests at all. With it, this is called once the stream exists
   * and is to make `count` jobs appear on `deliveryFloorSubject(namespace)` (bench:dispatch sends the
   * dispatches to the fanned-out dispatch floor, which writes and publishes them).
   */
  feed?: () => Promise<void>;
}

/** How long the floor may take before it is taken as stuck (the cloud's phase waits as long). */
const DEADLINE_MS = 120_000;

/** The subject the floor's jobs are published on. */
export function deliveryFloorSubject(namespace: string): string {
  return `${namespace}.floor`;
}

export async function runDeliveryFloor(o: FloorOptions): Promise<{ delivered: number; seconds: number }> {
  // The fanned-out dispatch floor (dispatch-floor.ts) may have made them already.
  await sql`create table if not exists floor_jobs (like delivery_jobs including all)`.execute(o.db);
  await sql`create table if not exists floor_attempts (like delivery_attempts including all)`.execute(o.db);
  const nc = await connect({ servers: o.natsUrl });
  const jsm = await jetstreamManager(nc);
  const stream = `${o.namespace.toUpperCase()}_FLOOR`;
  const subject = deliveryFloorSubject(o.namespace);
  await jsm.streams.add({ name: stream, subjects: [subject], retention: RetentionPolicy.Workqueue, storage: StorageType.File, duplicate_window: nanos(600_000) });
  await jsm.consumers.add(stream, { durable_name: 'floor', ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All });
  const js = jetstream(nc);
  const consumer = await js.consumers.get(stream, 'floor');
  const ids = Array.from({ length: o.count }, () => crypto.randomUUID());
  const someUuid = crypto.randomUUID();
  let done = 0;
  let finished: number | undefined;
  const started = performance.now();
  try {
    const publisher = o.feed ? o.feed() : (async () => {
      for (let i = 0; i < ids.length; i += 250) {
        const slice = ids.slice(i, i + 250);
        await sql`
          insert into floor_jobs (id, organization_id, command_id, endpoint_id)
          select id, ${someUuid}::uuid, id, ${someUuid}::uuid from unnest(${slice}::uuid[]) as id
        `.execute(o.db);
        await Promise.all(slice.map((id) => js.publish(subject, JSON.stringify({ jobId: id }), { msgID: id })));
      }
    })();
    // A feed that failed, or jobs that never come (a publish lost in the fanned-out floor), end the run
    // with an error rather than leaving the workers pulling.
    let fed = true;
    void publisher.catch(() => (fed = false));
    const deadline = performance.now() + DEADLINE_MS;
    const worker = async () => {
      while (done < o.count && fed) {
        if (performance.now() > deadline) throw new Error(`delivery floor: ${done} of ${o.count} jobs delivered in ${DEADLINE_MS / 1000} s`);
        const msgs = [];
        try {
          const batch = await consumer.fetch({ max_messages: o.batch, expires: 1000 });
          for await (const m of batch) msgs.push(m);
        } catch {
          // A pull cut short (heartbeats missed on a busy loop): what it delivered is kept, the rest is pulled again.
        }
        if (msgs.length === 0) continue;
        const results = await Promise.all(
          msgs.map(async (m) => {
            const t = performance.now();
            const r = await request(o.url, { method: 'POST', body: o.body, headers: { 'content-type': 'application/json' }, dispatcher: o.dispatcher });
            await r.body.dump();
            return { id: (m.json() as { jobId: string }).jobId, status: r.statusCode, ms: Math.round(performance.now() - t) };
          }),
        );
        await sql`
          with attempts as (
            insert into floor_attempts (id, organization_id, job_id, command_id, endpoint_id, endpoint_url, event_type, attempt, status_code, duration_ms, attempted_at)
            select gen_random_uuid(), ${someUuid}::uuid, id, ${someUuid}::uuid, ${someUuid}::uuid, ${o.url}, 'command.dispatched', 1, status, ms, now()
            from unnest(${results.map((r) => r.id)}::uuid[], ${results.map((r) => r.status)}::int[], ${results.map((r) => r.ms)}::int[]) as t(id, status, ms)
          )
          update floor_jobs set state = 'succeeded', attempts = 1, finished_at = now() where id = any(${results.map((r) => r.id)}::uuid[])
        `.execute(o.db);
        for (const m of msgs) m.ack();
        done += msgs.length;
        if (done >= o.count) finished ??= performance.now();
      }
    };
    await Promise.all([publisher, ...Array.from({ length: o.workers }, worker)]);
    await nc.flush();
    return { delivered: done, seconds: ((finished ?? performance.now()) - started) / 1000 };
  } finally {
    await jsm.streams.delete(stream).catch(() => {});
    await nc.close();
    await sql`drop table if exists floor_attempts`.execute(o.db);
    await sql`drop table if exists floor_jobs`.execute(o.db);
  }
}
