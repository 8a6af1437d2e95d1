import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { TelemetryService } from '@sortie/contracts';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, newScenario, startDeliveryFixture, verifiedBody, type DeliveryFixture, type Scenario } from '../testing/delivery-fixture.ts';
import { parsePrometheusText, samplesOf, valueOf, type PromSample } from '../testing/prometheus-text.ts';

/**
 * /metrics after real traffic on the real service (Postgres + JetStream): API calls with a 400 and a
 * 404, an HTTP append, a gRPC Submit, and a dispatch delivered to a real HTTPS receiver and acked.
 */

let f: DeliveryFixture;
let s: Scenario;
beforeAll(async () => {
  f = await startDeliveryFixture();
  s = await newScenario(f);
});
afterAll(async () => {
  await s?.close();
  await f?.stop();
});

async function scrape(): Promise<{ samples: PromSample[]; contentType: string | null }> {
  const response = await fetch(`${f.t.url}/metrics`);
  expect(response.status).toBe(200);
  return { samples: parsePrometheusText(await response.text()), contentType: response.headers.get('content-type') };
}

/** `after - before` of one series (a missing series counts as 0 before, and fails after). */
function grew(before: PromSample[], after: PromSample[], name: string, labels: Record<string, string>): number {
  const now = valueOf(after, name, labels);
  expect(now, `${name} ${JSON.stringify(labels)} exists`).toBeDefined();
  return now! - (valueOf(before, name, labels) ?? 0);
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i;

describe('/metrics after traffic', () => {
  it('counts requests by route pattern, ingest by transport and result, deliveries and acks by outcome', async () => {
    const { t } = f;
    const before = (await scrape()).samples;

    // API calls: one 400 (invalid body), one 404 with no route, one 404 on a route with a UUID in the query.
    expect((await t.call('POST', '/api/experiments/create', { key: s.org.key, body: { nope: 1 } })).status).toBe(400);
    expect((await t.call('GET', `/api/nowhere/${crypto.randomUUID()}`, { key: s.org.key })).status).toBe(404);
    const missing = await t.call('GET', `/api/commands/list?datasetId=${crypto.randomUUID()}&experimentId=${s.experimentId}`, { key: s.org.key });
    expect(missing.status).toBe(404);

    // HTTP append: 3 values written, 1 addressed by a channel UUID (ignored).
    const ignoredKey = crypto.randomUUID();
    const append = await t.call('POST', '/api/datasets/append', {
      key: s.org.key,
      body: {
        experimentId: s.experimentId,
        datasetId: s.datasetId,
        rows: [
          { timestamp: '2026-04-01T00:00:00.000Z', values: { alt: 1 } },
          { timestamp: '2026-04-01T00:00:00.010Z', values: { alt: 2, [ignoredKey]: 9 } },
          { timestamp: '2026-04-01T00:00:00.020Z', values: { ch_0: 3 } },
        ],
      },
    });
    expect(append.status).toBe(200);
    expect(append.body).toMatchObject({ valuesWritten: 3, ignoredKeys: [ignoredKey] });

    // gRPC Submit: 5 points written, 1 ignored, one bulk write.
    const client = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
    const seconds = BigInt(Date.UTC(2026, 3, 2) / 1000);
    const points = Array.from({ length: 5 }, (_, i) => ({
      channelId: '0',
      timestamp: { seconds, nanos: i * 1_000_000 },
      type: { case: 'double' as const, value: i },
    }));
    points.push({ channelId: crypto.randomUUID(), timestamp: { seconds, nanos: 9_000_000 }, type: { case: 'double', value: 0 } });
    const submitted = await client.submit({ experimentId: s.experimentId, datasetId: s.datasetId, points }, { headers: { 'x-api-key': s.org.key } });
    expect(submitted.written).toBe(5n);
    expect(submitted.ignored).toBe(1n);

    // Dispatch → delivery → a bad ack (404) → the real ack.
    const commandId = await s.dispatch();
    const [request] = await s.receiver.waitForRequests(1);
    const body = await verifiedBody(request!, s.secret);
    const ackPath = new URL(body.ack.url).pathname;
    const bad = await t.call('POST', ackPath, { headers: { authorization: 'Bearer cak_wrong' }, body: { commandId, state: 'acked' } });
    expect(bad.status).toBe(404);
    const acked = await t.call('POST', ackPath, { headers: { authorization: `Bearer ${body.ack.token}` }, body: { commandId, state: 'acked' } });
    expect(acked.status).toBe(200);
    await eventually(async () => {
      const job = await t.service.ctx.db.selectFrom('delivery_jobs').select('state').where('command_id', '=', commandId).executeTakeFirst();
      return job?.state === 'delivered' ? true : undefined;
    });

    const { samples: after, contentType } = await scrape();
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);

    // HTTP: patterns, never raw URLs.
    expect(grew(before, after, 'sortie_http_requests_total', { method: 'POST', route: '/api/experiments/create', status: '400' })).toBe(1);
    expect(grew(before, after, 'sortie_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
    expect(grew(before, after, 'sortie_http_requests_total', { method: 'GET', route: '/api/commands/list', status: '404' })).toBe(1);
    expect(grew(before, after, 'sortie_http_requests_total', { method: 'POST', route: '/api/datasets/append', status: '200' })).toBe(1);
    expect(grew(before, after, 'sortie_http_requests_total', { method: 'POST', route: '/api/commands/dispatch', status: '200' })).toBe(1);
    expect(grew(before, after, 'sortie_http_requests_total', { method: 'POST', route: '/api/commands/ack', status: '404' })).toBe(1);
    expect(grew(before, after, 'sortie_http_requests_total', { method: 'POST', route: '/api/commands/ack', status: '200' })).toBe(1);
    expect(grew(before, after, 'sortie_http_request_duration_seconds_count', { method: 'POST', route: '/api/datasets/append' })).toBe(1);
    expect(samplesOf(after, 'sortie_http_request_duration_seconds_bucket', { route: '/api/datasets/append', le: '+Inf' })).toHaveLength(1);
    const routes = new Set(samplesOf(after, 'sortie_http_requests_total').map((x) => x.labels.route!));
    for (const route of routes) expect(route === 'unmatched' || route.startsWith('/'), route).toBe(true);
    expect([...routes].filter((r) => UUID.test(r) || r.includes('?') || r.includes('nowhere'))).toEqual([]);

    // Ingest: exactly what was written and ignored, one batch per bulk write.
    expect(grew(before, after, 'sortie_ingest_points_total', { transport: 'http', shape: 'wide', result: 'written' })).toBe(3);
    expect(grew(before, after, 'sortie_ingest_points_total', { transport: 'http', shape: 'wide', result: 'ignored' })).toBe(1);
    expect(grew(before, after, 'sortie_ingest_batches_total', { transport: 'http', shape: 'wide' })).toBe(1);
    expect(grew(before, after, 'sortie_ingest_points_total', { transport: 'grpc', shape: 'wide', result: 'written' })).toBe(5);
    expect(grew(before, after, 'sortie_ingest_points_total', { transport: 'grpc', shape: 'wide', result: 'ignored' })).toBe(1);
    expect(grew(before, after, 'sortie_ingest_batches_total', { transport: 'grpc', shape: 'wide' })).toBe(1);

    // Delivery and acks.
    expect(grew(before, after, 'sortie_deliveries_total', { outcome: 'delivered' })).toBeGreaterThanOrEqual(1);
    expect(grew(before, after, 'sortie_deliveries_total', { outcome: 'failed' })).toBe(0);
    expect(grew(before, after, 'sortie_delivery_duration_seconds_count', { outcome: 'delivered' })).toBeGreaterThanOrEqual(1);
    expect(grew(before, after, 'sortie_acks_total', { outcome: 'acked' })).toBe(1);
    expect(grew(before, after, 'sortie_acks_total', { outcome: 'rejected' })).toBe(1);
    expect(grew(before, after, 'sortie_acks_total', { outcome: 'nacked' })).toBe(0);

    // Backlog gauges, read at scrape time: nothing left to deliver.
    expect(valueOf(after, 'sortie_metrics_source_up', { source: 'database' })).toBe(1);
    expect(valueOf(after, 'sortie_metrics_source_up', { source: 'nats' })).toBe(1);
    expect(valueOf(after, 'sortie_delivery_jobs_pending')).toBe(0);
    expect(valueOf(after, 'sortie_delivery_queue_lag_seconds')).toBe(0);
    expect(valueOf(after, 'sortie_delivery_nats_num_pending')).toBe(0);
    // The worker acks the message just after recording the attempt, so JetStream may lag a moment.
    await eventually(async () => (valueOf((await scrape()).samples, 'sortie_delivery_nats_num_ack_pending') === 0 ? true : undefined), 5000, 'num_ack_pending 0');
  });

  it('reports the outbox backlog and the age of the oldest due job nobody is attempting', async () => {
    const db = f.t.service.ctx.db;
    const commandId = await s.dispatch();
    await s.receiver.waitForRequests(2);
    const job = await eventually(async () => {
      const row = await db.selectFrom('delivery_jobs').select(['id', 'state']).where('command_id', '=', commandId).executeTakeFirst();
      return row?.state === 'delivered' ? row : undefined;
    });
    // A job due 30 s ago that no message will bring to a worker (its message was acked): a stuck queue.
    await sql`update delivery_jobs set state = 'pending', finished_at = null, leased_until = null, next_attempt_at = now() - interval '30 seconds' where id = ${job.id}`.execute(db);
    try {
      const { samples } = await scrape();
      expect(valueOf(samples, 'sortie_delivery_jobs_pending')).toBe(1);
      expect(valueOf(samples, 'sortie_delivery_queue_lag_seconds')).toBeGreaterThanOrEqual(30);
      expect(valueOf(samples, 'sortie_delivery_queue_lag_seconds')).toBeLessThan(60);

      // Leased by a worker: still pending, but no longer waiting for one.
      await sql`update delivery_jobs set leased_until = now() + interval '1 minute' where id = ${job.id}`.execute(db);
      const leased = (await scrape()).samples;
      expect(valueOf(leased, 'sortie_delivery_jobs_pending')).toBe(1);
      expect(valueOf(leased, 'sortie_delivery_queue_lag_seconds')).toBe(0);
    } finally {
      await sql`update delivery_jobs set state = 'delivered', finished_at = now(), leased_until = null, next_attempt_at = null where id = ${job.id}`.execute(db);
    }
  });
});
