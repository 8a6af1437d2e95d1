import { ErrorEnvelopeSchema } from '@sortie/contracts';
import {
  callRpc,
  eventually,
  freePort,
  setUpDispatchingOrg,
  startChildCloudFixture,
  startHttpsReceiver,
  startPostgresInstance,
  startServiceChild,
  verifiedBody,
  type ChildCloudFixture,
  type DispatchingOrg,
  type PostgresInstance,
  type ServiceChild,
  type TestReceiver,
} from '@sortie/cloud/testing';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * docs/operations.md ("PostgreSQL restarts") promises: while the database is unreachable every request
 * that needs it answers 503 `unavailable` in the envelope (gRPC: UNAVAILABLE), at once rather than
 * hanging; /readyz says so; nothing the service acknowledged is lost; and it recovers by itself within
 * RECOVERY_BOUND_MS of the database taking connections again. A PostgreSQL of the test's own is stopped
 * as a crash would (`pg_ctl stop -m immediate`) in the middle of HTTP appends and dispatches, then started.
 */
const REQUEST_TIMEOUT_MS = 10_000;
const RECOVERY_BOUND_MS = 10_000;
/** How long the database stays down, with the load still running. */
const OUTAGE_MS = 3000;

interface Answer {
  route: string;
  status: number | 'hang' | 'no answer';
  at: number;
  /** How long the answer took. */
  ms: number;
  /** A 409 to a retry of a dispatch refused with 503: the refused one had committed. */
  afterUnavailable?: boolean;
  body?: any;
  headers?: Headers;
}

describe('PostgreSQL restarted under ingest and dispatch', () => {
  let pg: PostgresInstance;
  let f: ChildCloudFixture;
  let receiver: TestReceiver;
  let cloud: ServiceChild;
  let org: DispatchingOrg;
  const acks: Array<{ commandId: string; status: number; retried: boolean }> = [];

  beforeAll(async () => {
    pg = await startPostgresInstance();
    f = await startChildCloudFixture({ adminUrl: pg.url });
    receiver = await startHttpsReceiver(f.cert);
    const port = await freePort();
    cloud = await startServiceChild(
      f.env({ SORTIE_HTTP_PORT: String(port), SORTIE_PUBLIC_URL: `http://127.0.0.1:${port}`, SORTIE_LOG_LEVEL: 'info', SORTIE_WEBHOOK_RETRY_SCHEDULE: '500ms' }),
    );
    org = await setUpDispatchingOrg(f, cloud.url, receiver.port, 'postgres restart');
    // A receiver as the spec asks: answer 2xx at once, ack after; an ack refused while the database is
    // down (503) is sent again, as Retry-After says.
    receiver.answer(async (req) => {
      const delivery = await verifiedBody(req, org.secret);
      void (async () => {
        for (let i = 0; i < 200; i++) {
          const r = await fetch(delivery.ack.url, {
            method: 'POST',
            headers: { authorization: `Bearer ${delivery.ack.token}`, 'content-type': 'application/json' },
            body: JSON.stringify({ commandId: delivery.command.id, state: 'acked' }),
          }).catch(() => undefined);
          await r?.arrayBuffer();
          if (r && r.status !== 503) {
            acks.push({ commandId: delivery.command.id, status: r.status, retried: i > 0 });
            return;
          }
          await new Promise((resolve) => setTimeout(resolve, 300));
        }
      })();
      return { status: 200, body: 'ok' };
    });
  }, 120_000);

  afterAll(async () => {
    if (cloud && cloud.process.exitCode === null && cloud.process.signalCode === null) {
      cloud.process.kill('SIGTERM');
      await cloud.exited;
    }
    await receiver?.close();
    await f?.close().catch(() => {});
    await pg?.destroy();
  }, 60_000);

  async function send(route: string, method: 'GET' | 'POST', body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const started = Date.now();
    try {
      const r = await fetch(cloud.url + route, {
        method,
        headers: { 'content-type': 'application/json', 'x-api-key': org.apiKey, ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const text = await r.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // kept as text; judged below
      }
      return { route, status: r.status, at: Date.now(), ms: Date.now() - started, body: parsed, headers: r.headers };
    } catch (error) {
      return { route, status: (error as Error).name === 'TimeoutError' ? 'hang' : 'no answer', at: Date.now(), ms: Date.now() - started, body: String(error) };
    }
  }

  it('requests during the outage answer 503 in the envelope, /readyz reports it, nothing acknowledged is lost, and it recovers by itself', async () => {
    const answers: Answer[] = [];
    const readyz: Answer[] = [];
    const healthz: Answer[] = [];
    const appended: string[] = [];
    const dispatched: string[] = [];
    const committedDespite503: string[] = [];
    let stopping = false;
    let clock = Date.parse('2026-03-01T00:00:00Z');
    const nextTimes = (n: number) => Array.from({ length: n }, () => new Date((clock += 1)).toISOString());

    const appender = async () => {
      while (!stopping) {
        const times = nextTimes(20);
        const a = await send('/api/datasets/append', 'POST', {
          experimentId: org.experimentId,
          datasetId: org.datasetId,
          rows: times.map((timestamp, i) => ({ timestamp, values: { ch_0: i } })),
        });
        answers.push(a);
        if (a.status === 200) appended.push(...times);
      }
    };
    const dispatcher = async () => {
      while (!stopping) {
        const c = await send('/api/commands/create', 'POST', { experimentId: org.experimentId, datasetId: org.datasetId, commandText: 'LOITER', relTime: 0 });
        answers.push(c);
        if (c.status !== 201) continue;
        // A client retries a dispatch refused with 503, as Retry-After says; it is the same request again.
        // A 503 whose statement had committed before the connection broke (the outcome of a cut-off
        // request is unknown) shows on the retry as 409 `already queued`: dispatched, and must be delivered.
        for (let i = 0; i < 100 && !stopping; i++) {
          const d = await send('/api/commands/dispatch', 'POST', { commandId: c.body.id, ackTimeoutSeconds: 600 });
          answers.push(d);
          if (d.status === 200) dispatched.push(c.body.id);
          if (d.status === 409 && i > 0 && /already queued/.test(d.body?.error?.message)) {
            d.afterUnavailable = true;
            dispatched.push(c.body.id);
            committedDespite503.push(c.body.id);
          }
          if (d.status !== 503) break;
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    };
    const prober = async (path: string, into: Answer[]) => {
      while (!stopping) {
        into.push(await send(path, 'GET'));
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const load = Promise.all([appender(), appender(), dispatcher(), dispatcher(), prober('/readyz', readyz), prober('/healthz', healthz)]);

    await new Promise((r) => setTimeout(r, 2000));
    const downAt = Date.now();
    await pg.stop('immediate');
    // The outage is seen: /readyz not ready, appends and command routes refused with 503.
    await eventually(async () => (readyz.some((a) => a.at > downAt && a.status === 503) ? true : undefined), REQUEST_TIMEOUT_MS, '/readyz to report the outage');
    const since = (t: number) =>
      JSON.stringify(
        Object.entries(
          answers
            .filter((a) => a.at > t)
            .reduce<Record<string, { n: number; maxMs: number }>>((m, a) => {
              const k = `${a.route} ${a.status}`;
              m[k] = { n: (m[k]?.n ?? 0) + 1, maxMs: Math.max(m[k]?.maxMs ?? 0, a.ms) };
              return m;
            }, {}),
        ),
      );
    await eventually(
      // A command route: whichever the dispatchers are sending while the database is down. They sit in
      // their dispatch retry loop (a 503 is retried) for most of an outage, so a create may never be in flight.
      async () =>
        [['/api/datasets/append'], ['/api/commands/create', '/api/commands/dispatch']].every((routes) =>
          answers.some((a) => routes.includes(a.route) && a.at > downAt && a.status === 503),
        )
          ? true
          : undefined,
      REQUEST_TIMEOUT_MS,
      'appends and command routes to be refused with 503',
    ).catch((error: Error) => {
      throw new Error(`${error.message}; answers since the stop: ${since(downAt)}`);
    });
    const grpc = await callRpc(cloud.grpcUrl, {
      protocol: 'connect-json',
      method: 'Submit',
      key: org.apiKey,
      body: new TextEncoder().encode(JSON.stringify({ experimentId: org.experimentId, datasetId: org.datasetId, points: [{ channelId: '0', timestamp: '2026-03-02T00:00:00Z', double: 1 }] })),
      raw: true,
      timeoutMs: REQUEST_TIMEOUT_MS,
    });
    await new Promise((r) => setTimeout(r, Math.max(0, OUTAGE_MS - (Date.now() - downAt))));
    await pg.start();
    const upAt = Date.now();
    const recovered = await eventually(async () => readyz.find((a) => a.at > upAt && a.status === 200), RECOVERY_BOUND_MS + 5000, '/readyz to be ready again');
    const recoveryMs = recovered.at - upAt;
    // Load after the recovery, so it is shown to serve again, not merely to answer /readyz.
    const upAnswers = answers.length;
    await eventually(
      async () =>
        answers.slice(upAnswers).some((a) => a.route === '/api/datasets/append' && a.status === 200) &&
        answers.slice(upAnswers).some((a) => a.route === '/api/commands/dispatch' && a.status === 200)
          ? true
          : undefined,
      RECOVERY_BOUND_MS,
      'appends and dispatches to succeed again',
    );
    stopping = true;
    await load;

    // Every answer was a success or a 503 in the envelope with Retry-After and the request id: never a
    // 500, never a hang, never a dropped connection.
    const success = new Set([200, 201]);
    const refused = answers.filter((a) => !success.has(a.status as number) && !a.afterUnavailable);
    expect(refused.length).toBeGreaterThan(0);
    const wrong = refused.filter((a) => {
      if (a.status !== 503) return true;
      const envelope = ErrorEnvelopeSchema.safeParse(a.body);
      return !envelope.success || envelope.data.error.code !== 'unavailable' || envelope.data.error.request_id !== a.headers!.get('x-request-id') || a.headers!.get('retry-after') !== '2';
    });
    expect(wrong.map((a) => `${a.route} ${a.status} ${JSON.stringify(a.body).slice(0, 300)}`)).toEqual([]);
    expect(refused.every((a) => a.at > downAt)).toBe(true);
    expect(grpc.code).toBe(14);
    expect(grpc.errorCode).toBe('unavailable');
    expect(grpc.requestId).toBeTruthy();

    // /readyz: ready before, `database: failed` (or timeout) during, ready after; /healthz 200 throughout.
    const down = readyz.filter((a) => a.status === 503);
    expect(down.length).toBeGreaterThan(0);
    for (const a of down) expect(['failed', 'timeout']).toContain(a.body.checks.database);
    expect(readyz.filter((a) => a.status !== 200 && a.status !== 503)).toEqual([]);
    expect(healthz.filter((a) => a.status !== 200)).toEqual([]);
    expect(recoveryMs).toBeLessThan(RECOVERY_BOUND_MS);

    // Every acknowledged append is stored.
    const table = `wide_${org.datasetId.replaceAll('-', '')}`;
    const stored = await eventually(async () => {
      try {
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)} where time = any(${appended}::timestamptz[])`.execute(f.database.db);
        return rows[0]!.n;
      } catch {
        return undefined; // the test's own idle connections died with the server; the pool reconnects
      }
    });
    expect(stored).toBe(appended.length);

    // Every acknowledged dispatch is delivered and acked.
    await eventually(
      async () => {
        const rows = await f.database.db.selectFrom('commands').select(['id', 'status']).where('id', 'in', dispatched).execute();
        return rows.length === dispatched.length && rows.every((r) => r.status === 'acked') ? true : undefined;
      },
      60_000,
      `${dispatched.length} dispatched commands to be acked`,
    );
    // An ack refused with 503 may have committed before its connection broke; its token is then spent,
    // and the retry answers 404. The command's state (acked, above) is the truth.
    expect(acks.filter((a) => a.status !== 200 && !(a.status === 404 && a.retried))).toEqual([]);

    // The process stayed up, and logged the outage as what it is, not as faults.
    expect(cloud.process.exitCode).toBeNull();
    expect(cloud.logs('unhandled error')).toEqual([]);
    expect(cloud.logs('unhandled gRPC error')).toEqual([]);
    const byRoute = (route: string, status: number) => answers.filter((a) => a.route === route && a.status === status).length;
    console.log(
      `postgres restart: down ${OUTAGE_MS} ms; appends ${byRoute('/api/datasets/append', 200)} acknowledged (${appended.length} rows, all stored), ` +
        `${byRoute('/api/datasets/append', 503)} refused 503; creates ${byRoute('/api/commands/create', 201)}/${byRoute('/api/commands/create', 503)}, ` +
        `dispatches ${byRoute('/api/commands/dispatch', 200)}/${byRoute('/api/commands/dispatch', 503)} (200/503), all ${dispatched.length} dispatched acked ` +
        `(${committedDespite503.length} of them had committed though answered 503, and answered 409 already queued on the retry); ` +
        `/readyz not ready ${down.length} times; ready ${recoveryMs} ms after the database started; slowest 503 answer ${Math.max(...refused.map((a) => a.ms))} ms`,
    );
  }, 150_000);
});
