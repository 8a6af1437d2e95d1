import { SCOPES } from '@sortie/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueApiKey } from '../auth/api-keys.ts';
import { createOrganization } from '../auth/organizations.ts';
import { writeCommandWebhooksEnabled } from '../commands/settings.ts';
import { startChildCloudFixture, type ChildCloudFixture } from '../testing/child-cloud-fixture.ts';
import { eventually, RECEIVER_HOST, verifiedBody } from '../testing/delivery-fixture.ts';
import { startHttpsReceiver, type ReceivedRequest, type TestReceiver } from '../testing/https-receiver.ts';
import { freePort } from '../testing/nats-server.ts';
import { startServiceChild, type ServiceChild } from '../testing/service-child.ts';

/** An organization set up for dispatching: one endpoint on `receiver`, an armed dataset. */
interface Tenant {
  key: string;
  secret: string;
  experimentId: string;
  datasetId: string;
}

type Answer = { status: number; body: any } | { error: string };

async function post(base: string, p: string, body: unknown, headers: Record<string, string>): Promise<Answer> {
  try {
    const r = await fetch(base + p, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    return { status: r.status, body: await r.json() };
  } catch (error) {
    return { error: String((error as Error).cause ?? error) };
  }
}

/** Run `fn` over `items`, at most `limit` at a time, keeping the order of results. */
async function inParallel<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await fn(items[i]!, i);
      }
    }),
  );
  return results;
}

describe('two cloud processes on one Postgres and one NATS', () => {
  let f: ChildCloudFixture;
  /** Acks every delivery through the process that did not send it. */
  let acking: TestReceiver;
  /** Answers 200 and never acks, so its commands time out. */
  let silent: TestReceiver;
  let a: ServiceChild;
  let b: ServiceChild;
  const tenants: { acking?: Tenant; silent?: Tenant } = {};

  const api = (base: string, p: string, key: string, body: unknown) => post(base, p, body, { 'x-api-key': key });
  const ok = (answer: Answer, status: number) => {
    if (!('status' in answer) || answer.status !== status) throw new Error(`expected ${status}, got ${JSON.stringify(answer)}`);
    return answer.body;
  };
  const createCommand = async (base: string, t: Tenant, relTime: number): Promise<string> =>
    ok(await api(base, '/api/commands/create', t.key, { experimentId: t.experimentId, datasetId: t.datasetId, commandText: 'RTL', relTime }), 201).id;
  const dispatch = (base: string, t: Tenant, commandId: string, ackTimeoutSeconds = 600) =>
    api(base, '/api/commands/dispatch', t.key, { commandId, ackTimeoutSeconds });
  const statuses = async (ids: readonly string[]) =>
    new Map((await f.database.db.selectFrom('commands').select(['id', 'status']).where('id', 'in', ids).execute()).map((r) => [r.id, r.status]));
  const allAcked = (ids: readonly string[], timeoutMs: number) =>
    eventually(
      async () => {
        const s = await statuses(ids);
        return ids.every((id) => s.get(id) === 'acked') ? true : undefined;
      },
      timeoutMs,
      `${ids.length} commands to be acked`,
    );

  async function setUpTenant(name: string, receiver: TestReceiver): Promise<Tenant> {
    const { organizationId, ownerUserId } = await createOrganization(f.database.db, name);
    const { apiKey: key } = await issueApiKey(f.database.db, { organizationId, userId: ownerUserId, scopes: [...SCOPES] });
    const endpoint = ok(await api(a.url, '/api/webhooks/create', key, { label: name, url: `https://${RECEIVER_HOST}:${receiver.port}/hook` }), 201);
    const exp = ok(await api(b.url, '/api/experiments/create', key, { name }), 201);
    const reg = ok(await api(a.url, '/api/streams/register', key, { experimentId: exp.id, datasetName: 'vehicle', channels: [{ name: 'alt' }] }), 201);
    ok(await api(b.url, '/api/datasets/arm', key, { datasetId: reg.datasetId, ttlSeconds: 3600 }), 200);
    return { key, secret: endpoint.secret, experimentId: exp.id, datasetId: reg.datasetId };
  }

  /** Which process sent a delivery: its ack.url is that process's SORTIE_PUBLIC_URL. */
  const sender = (ackUrl: string) => (ackUrl.startsWith(`${a.url}/`) ? 'a' : ackUrl.startsWith(`${b.url}/`) ? 'b' : 'unknown');
  const deliveredBy = { a: 0, b: 0, unknown: 0 };
  const ackAnswers: Array<{ via: 'a' | 'b'; status: number | string }> = [];

  beforeAll(async () => {
    f = await startChildCloudFixture();
    acking = await startHttpsReceiver(f.cert);
    silent = await startHttpsReceiver(f.cert);
    const env = f.env({
      // info: the sweeper's and the shutdown's log lines are what the tests read.
      SORTIE_LOG_LEVEL: 'info',
      SORTIE_WEBHOOK_RETRY_SCHEDULE: '200ms',
      SORTIE_WEBHOOK_TIMEOUT_MS: '5000',
      SORTIE_SHUTDOWN_GRACE_SECONDS: '20',
    });
    const [portA, portB] = [await freePort(), await freePort()];
    // Started together: both migrate the fresh database and create the stream and consumer at once.
    const start = (port: number) => startServiceChild({ ...env, SORTIE_HTTP_PORT: String(port), SORTIE_PUBLIC_URL: `http://127.0.0.1:${port}` });
    [a, b] = await Promise.all([start(portA), start(portB)]);
    await writeCommandWebhooksEnabled(f.database.db, true, new Date());
    tenants.acking = await setUpTenant('acking', acking);
    tenants.silent = await setUpTenant('silent', silent);

    acking.answer(async (req: ReceivedRequest) => {
      const delivery = await verifiedBody(req, tenants.acking!.secret);
      const from = sender(delivery.ack.url);
      deliveredBy[from] += 1;
      // Answer first, ack after (as a receiver should), through the process that did not send it.
      const via = from === 'a' ? 'b' : 'a';
      setImmediate(() => {
        void post(via === 'a' ? a.url : b.url, '/api/commands/ack', { commandId: delivery.command.id, state: 'acked' }, {
          authorization: `Bearer ${delivery.ack.token}`,
        }).then((answer) => ackAnswers.push({ via, status: 'status' in answer ? answer.status : answer.error }));
      });
      return { status: 200, body: 'ok' };
    });
  }, 60_000);

  afterAll(async () => {
    for (const child of [a, b]) {
      if (child && child.process.exitCode === null && child.process.signalCode === null) {
        child.process.kill('SIGTERM');
        await child.exited;
      }
    }
    await acking?.close();
    await silent?.close();
    await f?.close();
  }, 30_000);

  it('500 dispatches spread over both are all delivered and acked; racing dispatches have one winner; timeouts are swept once', async () => {
    const t = tenants.acking!;
    const s = tenants.silent!;
    const base = (i: number) => (i % 2 === 0 ? a.url : b.url);

    // Commands that time out: dispatched with a 1 s deadline to the receiver that never acks.
    const timeoutIds = await inParallel(Array.from({ length: 20 }, (_, i) => i), 8, (i) => createCommand(base(i), s, i));
    await inParallel(timeoutIds, 8, async (id, i) => ok(await dispatch(base(i + 1), s, id, 1), 200));

    // 500 commands, each created on one process and dispatched on the other.
    const ids = await inParallel(Array.from({ length: 500 }, (_, i) => i), 16, (i) => createCommand(base(i), t, i));
    const dispatched = await inParallel(ids, 16, (id, i) => dispatch(base(i + 1), t, id));
    for (const d of dispatched) ok(d, 200);

    // The same command dispatched on both processes at once: one 200, one 409, one job.
    const racing = await inParallel(Array.from({ length: 20 }, (_, i) => i), 8, (i) => createCommand(base(i), t, 1000 + i));
    const raced = await Promise.all(racing.map((id) => Promise.all([dispatch(a.url, t, id), dispatch(b.url, t, id)])));
    for (const pair of raced) {
      expect(pair.map((r) => ('status' in r ? r.status : r.error)).sort()).toEqual([200, 409]);
    }

    const all = [...ids, ...racing];
    await allAcked(all, 45_000);
    // A receiver acks as soon as it has the POST, and the attempt's record may reach the database a few
    // milliseconds after that (records are batched): every job must end delivered, so wait for it.
    const readJobs = () => f.database.db.selectFrom('delivery_jobs').select(['command_id', 'state']).where('command_id', 'in', all).execute();
    await eventually(async () => ((await readJobs()).every((j) => j.state === 'delivered') ? true : undefined), 10_000, 'every job recorded delivered').catch(() => undefined);
    const jobs = await readJobs();
    expect(jobs).toHaveLength(all.length);
    expect(new Set(jobs.map((j) => j.command_id)).size).toBe(all.length);
    expect(jobs.every((j) => j.state === 'delivered')).toBe(true);
    const received = new Set(await Promise.all(acking.requests.map(async (r) => (await verifiedBody(r, t.secret)).command.id)));
    for (const id of all) expect(received.has(id)).toBe(true);

    // Work spread over both processes, and each accepted acks for the other's deliveries.
    expect(deliveredBy.unknown).toBe(0);
    expect(deliveredBy.a).toBeGreaterThan(0);
    expect(deliveredBy.b).toBeGreaterThan(0);
    await eventually(async () => (ackAnswers.length >= acking.requests.length ? true : undefined), 15_000, 'every ack to be answered');
    expect(ackAnswers.filter((x) => x.status !== 200)).toEqual([]);
    expect(ackAnswers.filter((x) => x.via === 'a').length).toBeGreaterThan(0);
    expect(ackAnswers.filter((x) => x.via === 'b').length).toBeGreaterThan(0);

    // Every timeout moved once, by one of the two sweepers.
    await eventually(
      async () => {
        const st = await statuses(timeoutIds);
        return timeoutIds.every((id) => st.get(id) === 'timed_out') ? true : undefined;
      },
      20_000,
      'the short commands to time out',
    );
    const swept = () => [...a.logs('commands timed out'), ...b.logs('commands timed out')].flatMap((l) => l.commandIds as string[]);
    await eventually(async () => (timeoutIds.every((id) => swept().includes(id)) ? true : undefined), 10_000, 'the sweepers to log every timeout');
    const times = new Map<string, number>();
    for (const id of swept()) times.set(id, (times.get(id) ?? 0) + 1);
    expect([...times.entries()].filter(([, n]) => n !== 1)).toEqual([]);
    expect([...times.keys()].sort()).toEqual([...timeoutIds].sort());
    console.log(
      `replicas: delivered by a ${deliveredBy.a}, b ${deliveredBy.b}; acks via a ${ackAnswers.filter((x) => x.via === 'a').length}, ` +
        `via b ${ackAnswers.filter((x) => x.via === 'b').length}; timeouts swept by a ${a.logs('commands timed out').length} ` +
        `times, by b ${b.logs('commands timed out').length} times`,
    );
  }, 120_000);

  it('SIGTERM to one process during a dispatch run loses no command', async () => {
    const t = tenants.acking!;
    // From now on every ack goes to b, the process that stays; answers are slow so attempts are in flight.
    acking.answer(async (req: ReceivedRequest) => {
      const delivery = await verifiedBody(req, t.secret);
      deliveredBy[sender(delivery.ack.url)] += 1;
      setTimeout(() => {
        void post(b.url, '/api/commands/ack', { commandId: delivery.command.id, state: 'acked' }, { authorization: `Bearer ${delivery.ack.token}` }).then(
          (answer) => ackAnswers.push({ via: 'b', status: 'status' in answer ? answer.status : answer.error }),
        );
      }, 300);
      return { status: 200, body: 'ok', delayMs: 300 };
    });
    const ids = await inParallel(Array.from({ length: 300 }, (_, i) => i), 16, (i) => createCommand(b.url, t, 2000 + i));

    let answered = 0;
    let signalledAt = 0;
    const answeredAt = new Array<number>(ids.length);
    const results = await inParallel(ids, 8, async (id, i) => {
      const r = await dispatch(a.url, t, id);
      answeredAt[i] = Date.now();
      if (++answered === 60) {
        signalledAt = Date.now();
        a.process.kill('SIGTERM');
      }
      return r;
    });
    const exit = await a.exited;
    const shutdownMs = Date.now() - signalledAt;
    expect(exit).toBe(0);
    expect(shutdownMs).toBeLessThan(20_000);

    const won = ids.filter((_, i) => 'status' in results[i]! && (results[i] as { status: number }).status === 200);
    const refused = ids.filter((_, i) => 'error' in results[i]!);
    // Every answer is a 200 or no answer at all: nothing half-done answered 5xx.
    expect(won.length + refused.length).toBe(ids.length);
    const answeredAfterSignal = ids.filter((_, i) => 'status' in results[i]! && answeredAt[i]! > signalledAt).length;
    expect(answeredAfterSignal).toBeGreaterThan(0);
    // A dispatch that got no answer never committed: its command is still logged.
    const before = await statuses(refused);
    expect(refused.filter((id) => before.get(id) !== 'logged')).toEqual([]);

    // The refused ones go to the process that stays, as a client would retry them.
    for (const r of await inParallel(refused, 8, (id) => dispatch(b.url, t, id))) ok(r, 200);
    await allAcked(ids, 45_000);
    // No attempt was cut off by the shutdown: every recorded attempt got the receiver's 200.
    const attempts = await f.database.db.selectFrom('delivery_attempts').select(['command_id', 'status_code', 'error']).where('command_id', 'in', ids).execute();
    expect(attempts.filter((x) => x.status_code !== 200)).toEqual([]);

    const phases = a.logs().map((l) => l.msg as string).filter((m) => m.startsWith('shutdown:') || m === 'delivery queue stopped');
    expect(phases).toEqual([
      'shutdown: started',
      'shutdown: closing listeners; requests in flight finish',
      'shutdown: listeners closed; finishing delivery attempts in flight',
      'delivery queue stopped',
      'shutdown: delivery stopped; closing the database',
      'shutdown: complete',
    ]);
    // Nothing went wrong on the way out (a publish cut off by the closing pool would warn here). Only the
    // way out: start-up may warn about the server (TimescaleDB offered but not preloaded, on this machine).
    const wayOut = a.logs().slice(a.logs().findIndex((l) => String(l.msg).startsWith('shutdown:')));
    expect(wayOut.length).toBeGreaterThan(4);
    expect(wayOut.filter((l) => l.level >= 40)).toEqual([]);
    expect(b.logs().filter((l) => l.level >= 50)).toEqual([]);
    const stopped = a.logs('delivery queue stopped')[0]!;
    console.log(
      `sigterm: ${won.length} dispatches answered 200 by a (${answeredAfterSignal} after the signal), ${refused.length} refused; ` +
        `a exited 0 after ${shutdownMs} ms finishing ${stopped.attemptsFinished} attempts and handing back ${stopped.handedBack} messages`,
    );
  }, 120_000);
});
