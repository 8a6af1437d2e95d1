import { describe, expect, it } from 'vitest';
import type { AppContext } from './context.ts';
import { createLogger } from './logger.ts';
import { Metrics } from './metrics.ts';
import { Readiness } from './readiness.ts';
import { operationsRoutes } from '../observability/routes.ts';

const logger = createLogger('silent');

function setUp() {
  let rounds = 0;
  const readiness = new Readiness(logger);
  readiness.set('database', async () => {
    rounds++;
  });
  const ctx = { readiness, metrics: new Metrics({ logger }) } as unknown as AppContext;
  return { readiness, app: operationsRoutes(ctx), rounds: () => rounds };
}

describe('readiness once shutdown has begun', () => {
  it('answers not ready with the reason and without a round trip', async () => {
    const { readiness, rounds } = setUp();
    expect(await readiness.check()).toEqual({ ready: true, checks: { database: 'ok' } });
    expect(rounds()).toBe(1);
    readiness.markShuttingDown();
    expect(await readiness.check()).toEqual({ ready: false, reason: 'shutting_down', checks: {} });
    expect(rounds()).toBe(1);
  });

  it('/readyz turns 503 shutting_down while /healthz stays 200', async () => {
    const { readiness, app } = setUp();
    expect((await app.request('/readyz')).status).toBe(200);
    readiness.markShuttingDown();
    const ready = await app.request('/readyz');
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({ status: 'not_ready', reason: 'shutting_down' });
    const health = await app.request('/healthz');
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
  });
});
