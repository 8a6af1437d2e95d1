import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import type { SinkCounts, TelemetrySink } from '../telemetry/ingest/sink.ts';
import { parsePrometheusText, samplesOf, valueOf } from '../testing/prometheus-text.ts';
import { httpMetrics, UNMATCHED_ROUTE } from '../observability/http-metrics.ts';
import { countedSink } from '../telemetry/ingest/ingest-metrics.ts';
import { Metrics } from './metrics.ts';

async function scrape(metrics: Metrics) {
  return parsePrometheusText((await metrics.scrape()).body);
}

describe('Metrics', () => {
  it('labels HTTP requests with the matched route pattern, never the raw URL', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    const app = new Hono();
    app.use(httpMetrics(metrics));
    const sub = new Hono().get('/things/:id', (c) => c.json({ id: c.req.param('id') })).post('/things/create', (c) => c.json({}, 400));
    app.route('/api', sub);
    app.use('/api/*', async (_c, next) => next());
    app.notFound((c) => c.json({ error: 'nope' }, 404));

    for (const id of ['a', 'b', 'c']) expect((await app.request(`/api/things/${id}`)).status).toBe(200);
    expect((await app.request('/api/things/create', { method: 'POST' })).status).toBe(400);
    expect((await app.request('/api/unknown/1')).status).toBe(404);
    expect((await app.request('/api/unknown/2')).status).toBe(404);

    const samples = await scrape(metrics);
    const requests = samplesOf(samples, 'sortie_http_requests_total');
    expect(requests.map((s) => s.labels)).toEqual(
      expect.arrayContaining([
        { method: 'POST', route: '/api/things/create', status: '400' },
        { method: 'GET', route: '/api/things/:id', status: '200' },
        { method: 'GET', route: UNMATCHED_ROUTE, status: '404' },
      ]),
    );
    expect(requests).toHaveLength(3);
    expect(valueOf(samples, 'sortie_http_requests_total', { route: '/api/things/:id' })).toBe(3);
    expect(valueOf(samples, 'sortie_http_requests_total', { route: UNMATCHED_ROUTE })).toBe(2);
    expect(valueOf(samples, 'sortie_http_request_duration_seconds_count', { method: 'GET', route: '/api/things/:id' })).toBe(3);
    expect(samples.some((s) => Object.values(s.labels).some((v) => v.includes('/api/things/a') || v.includes('/api/unknown')))).toBe(false);
  });

  it('keeps each instance in its own registry', async () => {
    const one = new Metrics({ defaultMetrics: false });
    const two = new Metrics({ defaultMetrics: false });
    one.ack('acked');
    one.delivery('delivered', 0.05);
    expect(valueOf(await scrape(one), 'sortie_acks_total', { outcome: 'acked' })).toBe(1);
    expect(valueOf(await scrape(two), 'sortie_acks_total', { outcome: 'acked' })).toBe(0);
    expect(valueOf(await scrape(one), 'sortie_delivery_duration_seconds_count', { outcome: 'delivered' })).toBe(1);
  });

  it('reports a failing source as down and leaves its gauges out instead of repeating stale values', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    let fail = false;
    metrics.addSource('database', { pending: { name: 'test_pending', help: 'h' } }, async () => {
      if (fail) throw new Error('connection refused');
      return { pending: 7 };
    });
    let samples = await scrape(metrics);
    expect(valueOf(samples, 'test_pending')).toBe(7);
    expect(valueOf(samples, 'sortie_metrics_source_up', { source: 'database' })).toBe(1);
    fail = true;
    samples = await scrape(metrics);
    expect(valueOf(samples, 'test_pending')).toBeUndefined();
    expect(valueOf(samples, 'sortie_metrics_source_up', { source: 'database' })).toBe(0);
  });

  it('counts a sink once per write, from the differences of its totals', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    const totals: SinkCounts = { accepted: 0, written: 0, duplicates: 0, ignored: 0, ignoredChannelIds: [] };
    let staged = 0;
    const inner: TelemetrySink = {
      get staged() {
        return staged;
      },
      stage: async (source) => {
        const n = 'points' in source ? source.points.length : 0;
        staged += n;
        totals.ignored += 1;
      },
      flush: async () => {
        const points = staged;
        totals.written += points - 1;
        totals.duplicates += 1;
        staged = 0;
        return { points, rows: points };
      },
      counts: () => ({ ...totals }),
    };
    const sink = countedSink(inner, metrics, 'grpc', 'wide');
    const point = {} as never;
    await sink.stage({ points: [point, point, point] }, String);
    await sink.flush();
    await sink.stage({ points: [point, point] }, String);
    expect(sink.staged).toBe(2);
    await sink.flush();
    await sink.flush(); // nothing staged: no batch
    sink.counts();
    sink.counts(); // reading totals again adds nothing
    const samples = await scrape(metrics);
    expect(valueOf(samples, 'sortie_ingest_points_total', { transport: 'grpc', shape: 'wide', result: 'written' })).toBe(3);
    expect(valueOf(samples, 'sortie_ingest_points_total', { result: 'duplicate' })).toBe(3);
    expect(valueOf(samples, 'sortie_ingest_points_total', { result: 'ignored' })).toBe(2);
    expect(valueOf(samples, 'sortie_ingest_batches_total', { transport: 'grpc', shape: 'wide' })).toBe(2);
    // One duration per write that wrote something, as for the batch count.
    expect(valueOf(samples, 'sortie_ingest_batch_duration_seconds_count', { transport: 'grpc', shape: 'wide' })).toBe(2);
  });

  it('includes the process metrics under the sortie_ prefix', async () => {
    const samples = await scrape(new Metrics());
    expect(valueOf(samples, 'sortie_process_cpu_user_seconds_total')).toBeGreaterThanOrEqual(0);
  });
});
