import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueApiKey, keyChangesSeen, revokeApiKey } from './api-keys.ts';
import { KEY_LISTENER_APPLICATION } from './http-key-cache.ts';
import { createOrganization } from './organizations.ts';
import { startChildCloudFixture, type ChildCloudFixture } from '../testing/child-cloud-fixture.ts';
import { eventually } from '../testing/delivery-fixture.ts';
import { startServiceChild, type ServiceChild } from '../testing/service-child.ts';

/**
 * HTTP key checks are cached by each cloud process and dropped at the commit that changes a key
 * (http-key-cache.ts, migration 0008). Two processes on one Postgres: a revoke by a third party (this
 * test's own connection, as the admin CLI would) is refused on the very next request on both, also
 * after their listening connections were cut and came back.
 */
describe('a revoked API key on two cloud processes', () => {
  let f: ChildCloudFixture;
  let a: ServiceChild;
  let b: ServiceChild;
  let organizationId: string;

  beforeAll(async () => {
    f = await startChildCloudFixture();
    [a, b] = [await startServiceChild(f.env()), await startServiceChild(f.env())];
    ({ organizationId } = await createOrganization(f.database.db, 'revocation'));
  }, 60_000);
  afterAll(async () => {
    for (const child of [a, b]) child?.process.kill('SIGTERM');
    await Promise.all([a?.exited, b?.exited]);
    await f?.close();
  });

  const status = async (child: ServiceChild, key: string) =>
    (await fetch(`${child.url}/api/experiments/list`, { headers: { 'x-api-key': key } })).status;
  const newKey = async () => {
    const issued = await issueApiKey(f.database.db, { organizationId, scopes: ['datasets:read'] });
    // Used twice on each process: from the second request on it is answered from the cache, if caching.
    for (const child of [a, b]) for (let i = 0; i < 2; i++) expect(await status(child, issued.apiKey)).toBe(200);
    return issued;
  };
  /**
   * Revoke the way no cache hears of: in a session whose triggers are off (session_replication_role),
   * so the change is not announced. Only a process that is not caching notices it.
   */
  const revokeUnannounced = (keyId: string) =>
    f.database.db.transaction().execute(async (tx) => {
      await sql`set local session_replication_role = replica`.execute(tx);
      await tx.updateTable('api_keys').set({ revoked_at: new Date() }).where('id', '=', keyId).execute();
    });
  const listeners = async () =>
    (
      await sql<{ pid: number }>`
        select pid from pg_stat_activity where application_name = ${KEY_LISTENER_APPLICATION} and datname = current_database()
      `.execute(f.database.db)
    ).rows;

  it('is cached: a change nobody announces goes unnoticed (the test below is not passing by asking the database)', async () => {
    const { apiKey, keyId } = await newKey();
    await revokeUnannounced(keyId);
    expect([await status(a, apiKey), await status(b, apiKey)]).toEqual([200, 200]);
  });

  it('is refused on the next request on both processes after a revoke', async () => {
    for (let round = 0; round < 5; round++) {
      const { apiKey, keyId } = await newKey();
      expect(await revokeApiKey(f.database.db, keyId, new Date())).toBe(true);
      // Alternate which process is asked first.
      const [first, second] = round % 2 === 0 ? [a, b] : [b, a];
      expect([await status(first, apiKey), await status(second, apiKey)]).toEqual([401, 401]);
    }
  });

  it('a change of scopes or expiry takes effect on the next request too', async () => {
    const scoped = await newKey();
    // Changed by hand, as an operator would: keyChangesSeen makes it take effect on the next request.
    await f.database.db.updateTable('api_keys').set({ scopes: ['commands:read'] }).where('id', '=', scoped.keyId).execute();
    expect(await keyChangesSeen(f.database.db)).toBe(true);
    expect([await status(a, scoped.apiKey), await status(b, scoped.apiKey)]).toEqual([403, 403]);
    const expiring = await newKey();
    await f.database.db.updateTable('api_keys').set({ expires_at: new Date(Date.now() - 1000) }).where('id', '=', expiring.keyId).execute();
    expect(await keyChangesSeen(f.database.db)).toBe(true);
    expect([await status(b, expiring.apiKey), await status(a, expiring.apiKey)]).toEqual([401, 401]);
  });

  it('while the listening connections are cut nothing is cached, and after they are back a revoke is refused at once again', async () => {
    const before = await newKey();
    expect(await listeners()).toHaveLength(2);
    // Waits (up to 5 s) until each backend is gone, so its connection is closed when this returns.
    await sql`
      select pg_terminate_backend(pid, 5000) from pg_stat_activity
      where application_name = ${KEY_LISTENER_APPLICATION} and datname = current_database()
    `.execute(f.database.db);
    // Lost: every cached check was dropped with the connection (and none is kept until it is back), so
    // even a revoke nobody announces is refused on the next request.
    await revokeUnannounced(before.keyId);
    const during = [await status(a, before.apiKey), await status(b, before.apiKey)];
    expect(during).toEqual([401, 401]);

    // Back: both listen again (new backends), and caching resumed (an unannounced revoke is not seen).
    await eventually(async () => ((await listeners()).length === 2 ? true : undefined), 10_000, 'both processes listening again');
    await eventually(
      async () => {
        const probe = await issueApiKey(f.database.db, { organizationId, scopes: ['datasets:read'] });
        for (const child of [a, b]) for (let i = 0; i < 2; i++) await status(child, probe.apiKey);
        await revokeUnannounced(probe.keyId);
        return (await status(a, probe.apiKey)) === 200 && (await status(b, probe.apiKey)) === 200 ? true : undefined;
      },
      10_000,
      'both processes caching again',
    );
    const after = await newKey();
    expect(await revokeApiKey(f.database.db, after.keyId, new Date())).toBe(true);
    expect([await status(a, after.apiKey), await status(b, after.apiKey)]).toEqual([401, 401]);
  }, 30_000);
});
