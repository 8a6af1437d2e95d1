import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../auth/organizations.ts';
import { registerStream } from '../datasets/register-stream.ts';
import { wideTableName } from '../datasets/wide-table.ts';
import type { AppContext } from '../platform/context.ts';
import { ensureMessageTables } from '../telemetry/narrow/message-tables.ts';
import { startChildCloudFixture, type ChildCloudFixture } from '../testing/child-cloud-fixture.ts';
import { startPostgresInstance, type PostgresInstance } from '../testing/postgres-instance.ts';
import { startServiceChild, type ServiceChild } from '../testing/service-child.ts';
import { requireTimescaleServer, SKIP_TIMESCALE, timescaleOffer } from '../testing/timescale-server.ts';
import { migrateToLatest } from './connect.ts';

// Start-up on a real TimescaleDB (the server scripts/timescale-cluster.sh makes): replicas starting at
// once on one database all become ready, one of them doing each step; and a server that offers
// TimescaleDB without preloading it gives one clear line, never a stack.

const REPLICAS = 4;
const MAIN = fileURLToPath(new URL('../main.ts', import.meta.url));

async function startReplicas(f: ChildCloudFixture): Promise<ServiceChild[]> {
  return Promise.all(Array.from({ length: REPLICAS }, () => startServiceChild(f.env({ SORTIE_LOG_LEVEL: 'info' }))));
}

async function stopAll(children: readonly ServiceChild[]): Promise<void> {
  for (const child of children) child.process.kill('SIGTERM');
  await Promise.all(children.map((c) => c.exited));
}

/** How many of the replicas logged `msg`. */
const loggedBy = (children: readonly ServiceChild[], msg: string) => children.filter((c) => c.logs(msg).length > 0).length;

describe.skipIf(SKIP_TIMESCALE)('replicas starting together on one TimescaleDB database', () => {
  let adminUrl: string;
  beforeAll(async () => {
    ({ adminUrl } = await requireTimescaleServer());
  });

  it(`${REPLICAS} replicas on a fresh database: all ready, the extension and the migrations made once`, async () => {
    const f = await startChildCloudFixture({ adminUrl });
    try {
      const children = await startReplicas(f);
      try {
        for (const child of children) expect(child.logs('database ready')).toEqual([expect.objectContaining({ database: 'postgres', timescale: true })]);
        expect(loggedBy(children, 'migrations applied')).toBe(1);
        const extension = await sql<{ n: number }>`select count(*)::int as n from pg_extension where extname = 'timescaledb'`.execute(f.database.db);
        expect(extension.rows[0]!.n).toBe(1);
        // Every replica serves: each answers readiness and a request that needs the database.
        for (const child of children) expect((await fetch(`${child.url}/readyz`)).status).toBe(200);
      } finally {
        await stopAll(children);
      }
    } finally {
      await f.close();
    }
  });

  it(`${REPLICAS} replicas on tables written before TimescaleDB: one converts each table, every table gets its hypertable and one compression policy`, async () => {
    const f = await startChildCloudFixture({ adminUrl });
    try {
      // The database as a cloud without TimescaleDB left it: migrated, a wide dataset with rows and a
      // narrow message table, all plain tables (the fixture's handle has `timescale` false).
      const db = f.database.db;
      await migrateToLatest(db);
      const { organizationId } = await createOrganization(db, 'before');
      const experimentId = crypto.randomUUID();
      await db.insertInto('experiments').values({ id: experimentId, organization_id: organizationId, name: 'e', description: '' }).execute();
      const ctx = { db, database: f.database, clock: { now: () => new Date() } } as unknown as AppContext;
      const wide = await registerStream(ctx, organizationId, { experimentId, datasetName: 'wide', storageShape: 'wide', channels: [{ name: 'alt', unit: 'm', dataType: 'double' }] } as Parameters<typeof registerStream>[2]);
      const wideTable = wideTableName(wide.datasetId);
      await sql.raw(`insert into ${wideTable} (time, ch_0) select t, extract(epoch from t) from generate_series('2026-01-01'::timestamptz, '2026-01-01 03:00', '1 second') t`).execute(db);
      const narrow = await registerStream(ctx, organizationId, {
        experimentId,
        datasetName: 'narrow',
        storageShape: 'narrow',
        codec: 'mavlink',
        dialect: 'ardupilotmega',
        format: 'mavlink-raw-v1',
      } as Parameters<typeof registerStream>[2]);
      const known = new Map();
      await ensureMessageTables(db, narrow.datasetId, known, new Map([[30, new Set(['mavlink.ATTITUDE.roll'])]]), false);
      const narrowTable = known.get(30)!.table as string;

      const children = await startReplicas(f);
      try {
        for (const child of children) expect(child.logs('database ready')).toEqual([expect.objectContaining({ timescale: true })]);
        expect(loggedBy(children, 'migrations applied')).toBe(0);
        expect(loggedBy(children, 'wide tables moved to hypertables with compression')).toBe(1);
        expect(loggedBy(children, 'narrow message tables moved to hypertables with compression')).toBe(1);
        const hypertables = await sql<{ hypertable_name: string; compression_enabled: boolean; num_chunks: number }>`
          select hypertable_name, compression_enabled, (select count(*)::int from show_chunks(format('%I', hypertable_name)::regclass)) as num_chunks
          from timescaledb_information.hypertables order by hypertable_name`.execute(db);
        expect(hypertables.rows).toEqual(
          [
            { hypertable_name: narrowTable, compression_enabled: true, num_chunks: 0 },
            // migrate_data moved the three hours of rows into 1-hour chunks.
            { hypertable_name: wideTable, compression_enabled: true, num_chunks: 4 },
          ].sort((a, b) => a.hypertable_name.localeCompare(b.hypertable_name)),
        );
        const rows = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(wideTable)}`.execute(db);
        expect(rows.rows[0]!.n).toBe(3 * 3600 + 1);
        const policies = await sql<{ hypertable_name: string; n: number }>`
          select hypertable_name, count(*)::int as n from timescaledb_information.jobs where proc_name = 'policy_compression' group by 1 order by 1`.execute(db);
        expect(policies.rows.map((r) => r.n)).toEqual([1, 1]);
      } finally {
        await stopAll(children);
      }
    } finally {
      await f.close();
    }
  });
});

/** `node cloud/src/main.ts` as an operator runs it: its exit (or null while it runs), stdout and stderr. */
async function runMain(env: Record<string, string>, until: RegExp): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [MAIN], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => {
    child.once('exit', (c) => resolve(c));
    const poll = setInterval(() => {
      if (until.test(stdout)) {
        clearInterval(poll);
        resolve(null);
      }
    }, 50);
    child.once('exit', () => clearInterval(poll));
  });
  if (code === null) {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
  return { code, stdout, stderr };
}

describe('TimescaleDB installed but not preloaded', () => {
  let instance: PostgresInstance;
  let f: ChildCloudFixture;
  beforeAll(async () => {
    // A server of the test's own from this machine's PostgreSQL, which offers TimescaleDB once
    // scripts/timescale-cluster.sh has built it; started without preloading it.
    instance = await startPostgresInstance();
    const offer = await timescaleOffer(instance.url);
    if (!offer.offered) throw new Error("this machine's PostgreSQL does not offer TimescaleDB: run `bash scripts/timescale-cluster.sh`");
    expect(offer.preloaded).toBe(false);
    f = await startChildCloudFixture({ adminUrl: instance.url });
  }, 120_000);
  afterAll(async () => {
    await f?.close();
    await instance?.destroy();
  });

  it('a database that never used it: Sortie starts on plain tables, with one warning that names the fix', async () => {
    const run = await runMain(f.env({ SORTIE_LOG_LEVEL: 'info' }), /"HTTP API listening"/);
    expect(run.code).toBeNull();
    const logs = run.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, any>);
    const warnings = logs.filter((l) => /TimescaleDB/.test(l.msg));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.level).toBe(40);
    expect(warnings[0]!.msg).toMatch(/not preloaded, so Sortie uses plain tables: add timescaledb to shared_preload_libraries .* and restart PostgreSQL/);
    expect(logs.find((l) => l.msg === 'database ready')).toMatchObject({ timescale: false });
    expect(run.stdout + run.stderr).not.toMatch(/^\s+at /m);
  });

  it('a database that uses it: Sortie refuses to start with one line naming the fix, exit 2, no stack', async () => {
    // The database used TimescaleDB while the server preloaded it; then the server was restarted without.
    const url = new URL(instance.url);
    url.pathname = '/used_timescale';
    await instance.stop('fast');
    await instance.start({ preload: ['timescaledb'] });
    const admin = new pg.Client({ connectionString: instance.url });
    await admin.connect();
    await admin.query('create database used_timescale');
    await admin.end();
    const used = new pg.Client({ connectionString: url.toString() });
    await used.connect();
    await used.query('create extension timescaledb');
    await used.end();
    await instance.stop('fast');
    await instance.start({ preload: [] });

    const run = await runMain(f.env({ SORTIE_DATABASE_URL: url.toString(), SORTIE_LOG_LEVEL: 'info' }), /"HTTP API listening"/);
    expect(run.code).toBe(2);
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^sortie: this database uses TimescaleDB [\d.]+, but the PostgreSQL server does not load it: add timescaledb to shared_preload_libraries/);
    expect(run.stdout + run.stderr).not.toMatch(/^\s+at /m);
  }, 120_000);
});
