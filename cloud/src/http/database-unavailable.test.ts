import { Hono } from 'hono';
import { ErrorEnvelopeSchema } from '@sortie/contracts';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from '../db/errors.ts';
import { createLogger } from '../platform/logger.ts';
import { freePort } from '../testing/nats-server.ts';
import { TEST_ADMIN_URL } from '../testing/test-database.ts';
import type { AppEnv } from './app-env.ts';
import { renderThrown } from './render-error.ts';
import { requestId } from './request-id.ts';

/** The error node-postgres really raises for a query against `connect` (no stand-ins: the driver's own words and codes). */
async function errorOf(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error('expected the query to fail');
}

describe('a database that is not there is told apart from a bad query', () => {
  it('nothing listening (refused), a connection the server terminated, and a query error', async () => {
    const port = await freePort();
    const refused = await errorOf(async () => {
      const pool = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres`, max: 1 });
      try {
        await pool.query('select 1');
      } finally {
        await pool.end();
      }
    });
    expect(isDatabaseUnavailable(refused)).toBe(true);

    // A server that ends the session under a query (pg_terminate_backend is what a fast shutdown does
    // to every session: SQLSTATE 57P01 admin_shutdown).
    const victim = new pg.Client({ connectionString: TEST_ADMIN_URL });
    victim.on('error', () => {});
    await victim.connect();
    const pid = (await victim.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
    const admin = new pg.Client({ connectionString: TEST_ADMIN_URL });
    await admin.connect();
    // The rejection is caught at once: it arrives while the test still awaits the terminate.
    const sleeping = errorOf(() => victim.query('select pg_sleep(10)'));
    await new Promise((r) => setTimeout(r, 200));
    await admin.query('select pg_terminate_backend($1)', [pid]);
    const terminated = await sleeping;
    expect((terminated as { code?: string }).code).toBe('57P01');
    expect(isDatabaseUnavailable(terminated)).toBe(true);
    // The same client afterwards: not queryable, still the database's absence.
    const after = await errorOf(() => victim.query('select 1'));
    expect(isDatabaseUnavailable(after)).toBe(true);

    const bad = await errorOf(() => admin.query('select * from no_such_table'));
    expect(isDatabaseUnavailable(bad)).toBe(false);
    const violation = await errorOf(() => admin.query("select 'x'::int"));
    expect(isDatabaseUnavailable(violation)).toBe(false);
    await admin.end();
    await victim.end().catch(() => {});
    expect(isDatabaseUnavailable(new Error('boom'))).toBe(false);
    expect(isDatabaseUnavailable(new Error('wrapped', { cause: refused }))).toBe(true);
  });

  it('answers 503 unavailable in the envelope with Retry-After and the request id; other faults stay 500', async () => {
    const port = await freePort();
    const pool = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres`, max: 1 });
    const app = new Hono<AppEnv>();
    app.use('*', requestId);
    app.get('/db', async (c) => c.json((await pool.query('select 1')).rows));
    app.get('/bug', () => {
      throw new TypeError('x is undefined');
    });
    app.onError((error, c) => renderThrown(c, error, createLogger('silent')));

    const down = await app.request('/db');
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toBe('2');
    const body = ErrorEnvelopeSchema.parse(await down.json());
    expect(body.error.code).toBe('unavailable');
    expect(body.error.request_id).toBe(down.headers.get('x-request-id'));
    expect(body.error.message).not.toMatch(/ECONNREFUSED|127\.0\.0\.1/);

    const bug = await app.request('/bug');
    expect(bug.status).toBe(500);
    expect(ErrorEnvelopeSchema.parse(await bug.json()).error.code).toBe('internal_error');
    await pool.end();
  });
});
