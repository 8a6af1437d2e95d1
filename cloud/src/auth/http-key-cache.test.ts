import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';
import { revokeApiKey } from './api-keys.ts';

/**
 * The embedded (PGlite) service caches HTTP key checks too, with no connection to listen on: the process
 * is the database's only user, and api-keys.ts tells its caches of every change it makes. (Two
 * processes on Postgres: key-revocation.e2e.test.ts.)
 */
describe('HTTP key checks on the embedded database', () => {
  let t: TestService;
  let org: TestOrg;
  beforeAll(async () => {
    t = await startTestService({ embedded: true });
    org = await t.createOrg();
  });
  afterAll(() => t?.stop());

  const list = (key: string) => t.call('GET', '/api/experiments/list', { key });

  it('are cached: a change made behind the code that announces changes goes unnoticed', async () => {
    const { apiKey, keyId } = await org.keyWith(['datasets:read']);
    expect((await list(apiKey)).status).toBe(200);
    await t.service.ctx.db.updateTable('api_keys').set({ revoked_at: t.clock.now() }).where('id', '=', keyId).execute();
    expect((await list(apiKey)).status).toBe(200);
  });

  it('a revoke is refused on the next request', async () => {
    const { apiKey, keyId } = await org.keyWith(['datasets:read']);
    expect((await list(apiKey)).status).toBe(200);
    expect((await list(apiKey)).status).toBe(200);
    expect(await revokeApiKey(t.service.ctx.db, keyId, t.clock.now())).toBe(true);
    expect((await list(apiKey)).status).toBe(401);
  });

  it('an expiry passing is refused on the next request, cached or not', async () => {
    const { apiKey } = await org.keyWith(['datasets:read'], { expiresAt: new Date(t.clock.now().getTime() + 1000) });
    expect((await list(apiKey)).status).toBe(200);
    t.clock.advance(1000);
    expect((await list(apiKey)).status).toBe(401);
  });
});
