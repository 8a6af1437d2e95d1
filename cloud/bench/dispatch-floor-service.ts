/**
 * The dispatch floor's service (dispatch-floor.ts starts it as a process of its own, as the cloud is):
 * the least any implementation of the spec's dispatch does per command, for bench:dispatch to set
 * beside the cloud at the same rate. Per request: read the JSON body; one statement, committed with
 * the WAL flush that makes a 200 durable, that moves the command `logged → queued` by compare-and-set
 * and writes its outbox row; answer; POST the webhook over HTTPS; record the attempt, many attempts
 * to a statement gathered for up to 20 ms and committed without the WAL flush (as the engine records).
 * No API key, validation, preconditions, ack token, signature, DNS check, lease, counters or metrics:
 * the cloud does all of those on top.
 *
 * Fanned out (FLOOR_ENDPOINTS set), for bench:dispatch's throughput phase: the one statement writes an
 * outbox row per endpoint, and once answered each row is published to JetStream with its Nats-Msg-Id
 * (delivery-floor.ts pulls, POSTs and records them), as the engine hands a fan-out over.
 *
 * Env: FLOOR_DATABASE_URL, FLOOR_RECEIVER_URL, FLOOR_CA_FILE, FLOOR_ORG (the rows' organization);
 * fanned out: FLOOR_ENDPOINTS (endpoint ids, comma-separated), FLOOR_NATS_URL, FLOOR_SUBJECT.
 * Prints `READY <port>` once it listens.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import { Agent, request } from 'undici';

const { FLOOR_DATABASE_URL, FLOOR_RECEIVER_URL, FLOOR_CA_FILE, FLOOR_ORG, FLOOR_ENDPOINTS, FLOOR_NATS_URL, FLOOR_SUBJECT } = process.env;
if (!FLOOR_DATABASE_URL || !FLOOR_RECEIVER_URL || !FLOOR_CA_FILE || !FLOOR_ORG) throw new Error('dispatch floor: FLOOR_* environment missing');
const endpoints = FLOOR_ENDPOINTS?.split(',');
if (endpoints && (!FLOOR_NATS_URL || !FLOOR_SUBJECT)) throw new Error('dispatch floor: FLOOR_NATS_URL and FLOOR_SUBJECT go with FLOOR_ENDPOINTS');
const nc = endpoints ? await connect({ servers: FLOOR_NATS_URL }) : undefined;
const js = nc ? jetstream(nc) : undefined;

// As many connections as the cloud's pool: a fanned-out phase keeps 16 dispatches in flight.
const pool = new pg.Pool({ connectionString: FLOOR_DATABASE_URL, max: 20 });
const agent = new Agent({ connect: { ca: readFileSync(FLOOR_CA_FILE, 'utf8') }, connections: 64 });

const DISPATCH = `
  with moved as (
    update floor_commands set status = 'queued', queued_at = now(), ack_deadline_at = now() + interval '10 minutes'
    where id = $1 and status = 'logged'
    returning id
  )
  insert into floor_jobs (id, organization_id, command_id, endpoint_id, leased_until)
  select gen_random_uuid(), $2, id, $2, now() + interval '5 seconds' from moved
  returning id`;

const RECORD = `
  with inserted as (
    insert into floor_attempts (id, organization_id, job_id, command_id, endpoint_id, endpoint_url, event_type, attempt, status_code, duration_ms, attempted_at)
    select gen_random_uuid(), $2, t.job, t.command, $2, $5, 'command.dispatched', 1, t.status, 0, now()
    from unnest($1::uuid[], $3::uuid[], $4::int[]) as t(job, command, status)
    where set_config('synchronous_commit', 'off', true) is not null
  )
  update floor_jobs set state = 'succeeded', attempts = 1, leased_until = null, finished_at = now(), published_at = now()
  where id = any($1::uuid[])`;

const DISPATCH_FANOUT = `
  with moved as (
    update floor_commands set status = 'queued', queued_at = now(), ack_deadline_at = now() + interval '10 minutes'
    where id = $1 and status = 'logged'
    returning id
  )
  insert into floor_jobs (id, organization_id, command_id, endpoint_id)
  select gen_random_uuid(), $2, moved.id, e from moved, unnest($3::uuid[]) as e
  returning id`;

let pending: Array<{ job: string; command: string; status: number }> = [];
let flushTimer: NodeJS.Timeout | undefined;
function record(attempt: { job: string; command: string; status: number }): void {
  pending.push(attempt);
  flushTimer ??= setTimeout(() => {
    const batch = pending;
    pending = [];
    flushTimer = undefined;
    pool
      .query({ name: 'floor_record', text: RECORD, values: [batch.map((a) => a.job), FLOOR_ORG, batch.map((a) => a.command), batch.map((a) => a.status), FLOOR_RECEIVER_URL] })
      .catch((err) => console.error('dispatch floor: record failed', err));
  }, 20);
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', async () => {
    try {
      const { commandId } = JSON.parse(Buffer.concat(chunks).toString()) as { commandId: string };
      const { rows } = endpoints
        ? await pool.query<{ id: string }>({ name: 'floor_dispatch_fanout', text: DISPATCH_FANOUT, values: [commandId, FLOOR_ORG, endpoints] })
        : await pool.query<{ id: string }>({ name: 'floor_dispatch', text: DISPATCH, values: [commandId, FLOOR_ORG] });
      if (rows.length === 0) {
        res.writeHead(409, { 'content-type': 'application/json' }).end('{"error":"not logged"}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ commandId, status: 'queued' }));
      if (js) {
        await Promise.all(rows.map(({ id }) => js.publish(FLOOR_SUBJECT!, JSON.stringify({ jobId: id }), { msgID: id })));
        return;
      }
      const r = await request(FLOOR_RECEIVER_URL, {
        method: 'POST',
        body: JSON.stringify({ eventType: 'command.dispatched', command: { id: commandId } }),
        headers: { 'content-type': 'application/json' },
        dispatcher: agent,
      });
      await r.body.dump();
      record({ job: rows[0]!.id, command: commandId, status: r.statusCode });
    } catch (err) {
      console.error('dispatch floor:', err);
      if (!res.headersSent) res.writeHead(500).end();
    }
  });
});
server.listen(0, '127.0.0.1', () => console.log(`READY ${(server.address() as AddressInfo).port}`));
process.on('SIGTERM', () => {
  server.close();
  void Promise.all([pool.end(), agent.close(), nc?.drain()]).then(() => process.exit(0));
});
