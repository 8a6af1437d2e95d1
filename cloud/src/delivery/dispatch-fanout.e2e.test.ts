import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_NATS_URL } from '../testing/nats-server.ts';
import { jetStreamNames } from './nats-queue.ts';
import { eventually, newScenario, RECEIVER_HOST, startDeliveryFixture, verifiedBody, type DeliveryFixture, type Scenario } from '../testing/delivery-fixture.ts';

/** More endpoints on the scenario's receiver, under other paths. */
async function addEndpoints(f: DeliveryFixture, s: Scenario, paths: string[]): Promise<void> {
  for (const path of paths) {
    const r = await f.t.call('POST', '/api/webhooks/create', { key: s.org.key, body: { label: path, url: `https://${RECEIVER_HOST}:${s.receiver.port}${path}` } });
    expect(r.status).toBe(201);
  }
}

/** How many messages the fixture's delivery stream has ever taken. */
async function streamLastSeq(f: DeliveryFixture): Promise<number> {
  const nc = await connect({ servers: TEST_NATS_URL });
  try {
    return (await (await jetstreamManager(nc)).streams.info(jetStreamNames(f.natsNamespace).stream)).state.last_seq;
  } finally {
    await nc.close();
  }
}

/**
 * A dispatch leases and attempts at once only as many jobs as its process has free slots
 * (SORTIE_DELIVERY_CONCURRENCY, 1 here); the rest go through the queue. Both kinds are delivered once,
 * each with an ack token of its own that acks the command.
 */
describe('a fan-out wider than the free attempt slots', () => {
  let f: DeliveryFixture;
  beforeAll(async () => {
    f = await startDeliveryFixture({ env: { SORTIE_DELIVERY_CONCURRENCY: '1' } });
  });
  afterAll(() => f?.stop());

  it('delivers every job once, whether attempted at dispatch or through the queue, and every ack token works', async () => {
    const s = await newScenario(f);
    try {
      await addEndpoints(f, s, ['/hook2', '/hook3']);
      const commands = [await s.dispatch(), await s.dispatch({ relTime: 2 }), await s.dispatch({ relTime: 3 })];
      const requests = await s.receiver.waitForRequests(9, 20_000);
      const jobs = await eventually(async () => {
        const rows = await f.t.service.ctx.db.selectFrom('delivery_jobs').selectAll().where('command_id', 'in', commands).execute();
        return rows.length === 9 && rows.every((r) => r.state === 'delivered') ? rows : undefined;
      });
      expect(jobs.map((j) => j.attempts)).toEqual(Array(9).fill(1));
      // Both paths were taken: the stream holds a message (ever published) for the queued jobs only.
      const published = await streamLastSeq(f);
      expect(published).toBeGreaterThan(0);
      expect(published).toBeLessThan(9);
      await new Promise((r) => setTimeout(r, 300));
      expect(s.receiver.requests).toHaveLength(9);

      const bodies = requests.map((req) => JSON.parse(req.rawBody.toString()) as { command: { id: string }; ack: { token: string } });
      expect(new Set(bodies.map((b) => b.ack.token)).size).toBe(9);
      for (const commandId of commands) {
        const tokens = bodies.filter((b) => b.command.id === commandId).map((b) => b.ack.token);
        expect(tokens).toHaveLength(3);
        const answers = [];
        for (const token of tokens) {
          const r = await f.t.call('POST', '/api/commands/ack', { headers: { authorization: `Bearer ${token}` }, body: { commandId, state: 'acked' } });
          answers.push([r.status, r.body.duplicate]);
        }
        expect(answers).toEqual([
          [200, false],
          [200, true],
          [200, true],
        ]);
      }
      // The first endpoint's deliveries verify with its secret, as a receiver checks them.
      const first = requests.filter((r) => r.path === '/hook');
      expect(first).toHaveLength(3);
      for (const req of first) expect(commands).toContain((await verifiedBody(req, s.secret)).command.id);
    } finally {
      await s.close();
    }
  }, 40_000);
});

describe('a dispatch whose jobs are all attempted at once by the dispatching process', () => {
  let f: DeliveryFixture;
  beforeAll(async () => {
    f = await startDeliveryFixture();
  });
  afterAll(() => f?.stop());

  // The dispatch statement returns the command and its arming once, on its first row: every endpoint's
  // body must still carry all of it.
  it('sends every endpoint the same whole command, deadline and arming expiry', async () => {
    const s = await newScenario(f);
    try {
      await addEndpoints(f, s, ['/hook2', '/hook3']);
      // The first dispatch of an organization reserves one slot (it knows no fan-out yet); the second
      // reserves as many as the first had endpoints.
      await s.dispatch({ relTime: 6 });
      await s.receiver.waitForRequests(3, 20_000);
      const seqBefore = await streamLastSeq(f);
      const commandId = await s.dispatch({ relTime: 7 });
      const requests = (await s.receiver.waitForRequests(6, 20_000)).slice(3);
      const bodies = requests.map((req) => JSON.parse(req.rawBody.toString()) as { command: Record<string, unknown>; ack: { deadline: string; token: string }; arming: { expiresAt: string } });
      expect(new Set(requests.map((r) => r.path))).toEqual(new Set(['/hook', '/hook2', '/hook3']));
      const row = await f.t.service.ctx.db.selectFrom('commands').selectAll().where('id', '=', commandId).executeTakeFirstOrThrow();
      const arming = await f.t.service.ctx.db.selectFrom('armings').selectAll().where('dataset_id', '=', row.dataset_id).executeTakeFirstOrThrow();
      for (const body of bodies) {
        expect(body.command).toEqual(bodies[0]!.command);
        expect(body.command.id).toBe(commandId);
        expect(body.command.relTime).toBe(7);
        expect(body.command.commandText).toBe(row.command_text);
        expect(body.command.issuedAt).toBe(row.issued_at.toISOString());
        expect(body.ack.deadline).toBe(row.ack_deadline_at!.toISOString());
        expect(body.arming.expiresAt).toBe(arming.expires_at.toISOString());
      }
      // All three were attempted at dispatch: none of them went through the queue.
      expect(await streamLastSeq(f)).toBe(seqBefore);
    } finally {
      await s.close();
    }
  }, 40_000);
});
