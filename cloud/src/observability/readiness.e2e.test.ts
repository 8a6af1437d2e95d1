import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNatsServer, uniqueNatsNamespace, type TestNatsServer } from '../testing/nats-server.ts';
import { parsePrometheusText, valueOf } from '../testing/prometheus-text.ts';
import { startTcpProxy, type TcpProxy } from '../testing/tcp-proxy.ts';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.ts';
import { startTestService, type TestService } from '../testing/test-service.ts';
import { eventually } from '../testing/delivery-fixture.ts';

/**
 * /healthz, /readyz and /metrics while a dependency goes away. This service reaches Postgres through a
 * TCP proxy the test can cut and its own nats-server the test can stop, so the shared servers other
 * test files use are never disturbed.
 */

async function get(t: TestService, path: string) {
  const response = await fetch(t.url + path);
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, json: () => JSON.parse(text) };
}

describe('with Postgres and NATS', () => {
  let database: TestDatabase;
  let proxy: TcpProxy;
  let nats: TestNatsServer;
  let t: TestService;

  beforeAll(async () => {
    database = await createTestDatabase();
    const direct = new URL(database.url);
    proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
    const proxied = new URL(database.url);
    proxied.port = String(proxy.port);
    nats = await startNatsServer();
    t = await startTestService({
      env: { SORTIE_DATABASE_URL: proxied.toString(), SORTIE_NATS_URL: nats.url, SORTIE_NATS_NAMESPACE: uniqueNatsNamespace() },
    });
  });
  afterAll(async () => {
    await t?.stop();
    await nats?.destroy();
    await proxy?.stop();
    await database?.drop();
  });

  it('answers alive and ready without an API key while both are up', async () => {
    const health = await get(t, '/healthz');
    expect(health.status).toBe(200);
    expect(health.json()).toEqual({ status: 'ok' });
    expect(health.headers.get('x-request-id')).toMatch(/^req_/);
    const ready = await get(t, '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.json()).toEqual({ status: 'ready', checks: { database: 'ok', nats: 'ok' } });
  });

  it('is not ready, naming the database, while Postgres is unreachable; alive and scrapeable all along; ready again after', async () => {
    await proxy.stop();
    try {
      const ready = await get(t, '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.json()).toEqual({ status: 'not_ready', checks: { database: 'failed', nats: 'ok' } });
      expect((await get(t, '/healthz')).status).toBe(200);

      const metrics = await get(t, '/metrics');
      expect(metrics.status).toBe(200);
      const samples = parsePrometheusText(metrics.text);
      expect(valueOf(samples, 'sortie_metrics_source_up', { source: 'database' })).toBe(0);
      expect(valueOf(samples, 'sortie_metrics_source_up', { source: 'nats' })).toBe(1);
      // Left out rather than stale.
      expect(valueOf(samples, 'sortie_delivery_jobs_pending')).toBeUndefined();
      expect(valueOf(samples, 'sortie_delivery_queue_lag_seconds')).toBeUndefined();
      expect(valueOf(samples, 'sortie_delivery_nats_num_pending')).toBe(0);
      expect(valueOf(samples, 'sortie_http_requests_total', { route: '/readyz', status: '503' })).toBe(1);
    } finally {
      await proxy.start();
    }
    await eventually(async () => ((await get(t, '/readyz')).status === 200 ? true : undefined), 10_000, 'ready again');
    const samples = parsePrometheusText((await get(t, '/metrics')).text);
    expect(valueOf(samples, 'sortie_delivery_jobs_pending')).toBe(0);
  });

  it('is not ready, naming nats, while NATS is down; the scrape still answers', async () => {
    await nats.stop();
    try {
      const ready = await get(t, '/readyz');
      expect(ready.status).toBe(503);
      const body = ready.json();
      expect(body.status).toBe('not_ready');
      expect(body.checks.database).toBe('ok');
      expect(['failed', 'timeout']).toContain(body.checks.nats);

      const metrics = await get(t, '/metrics');
      expect(metrics.status).toBe(200);
      const samples = parsePrometheusText(metrics.text);
      expect(valueOf(samples, 'sortie_metrics_source_up', { source: 'nats' })).toBe(0);
      expect(valueOf(samples, 'sortie_metrics_source_up', { source: 'database' })).toBe(1);
      expect(valueOf(samples, 'sortie_delivery_nats_num_pending')).toBeUndefined();
      expect(valueOf(samples, 'sortie_delivery_jobs_pending')).toBe(0);
    } finally {
      await nats.start();
    }
    await eventually(async () => ((await get(t, '/readyz')).status === 200 ? true : undefined), 15_000, 'ready again');
  });
});

describe('embedded (PGlite, in-process queue)', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ embedded: true });
  });
  afterAll(() => t?.stop());

  it('is ready with NATS not configured, and reads the outbox backlog from PGlite', async () => {
    const ready = await get(t, '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.json()).toEqual({ status: 'ready', checks: { database: 'ok', nats: 'not_configured' } });
    const samples = parsePrometheusText((await get(t, '/metrics')).text);
    expect(valueOf(samples, 'sortie_metrics_source_up', { source: 'database' })).toBe(1);
    expect(valueOf(samples, 'sortie_metrics_source_up', { source: 'nats' })).toBeUndefined();
    expect(valueOf(samples, 'sortie_delivery_jobs_pending')).toBe(0);
    expect(valueOf(samples, 'sortie_delivery_queue_lag_seconds')).toBe(0);
  });
});
