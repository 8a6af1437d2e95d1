import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PGliteDialect, PostgresDialect, sql } from 'kysely';
import { Migrator } from 'kysely/migration';
import pg from 'pg';
import { migrationProvider } from './migrations/index.ts';
import type { Database } from './schema.ts';
import { CREATE_EXTENSION_SQL, timescaleVersionSupported } from './timescale.ts';

// int8 (counts, sums) arrives as text by default; our counts fit in a double comfortably.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export type Db = Kysely<Database>;

/** How long opening one pooled connection to PostgreSQL may take. */
export const CONNECT_TIMEOUT_MS = 5000;

/**
 * How long a pooled connection lives before the pool replaces it (at its next release). Prepared
 * statements live as long as their connection, so this bounds how long the plans of a MAVLink stream
 * that ended stay in PostgreSQL's memory (telemetry/narrow/prepared-shapes.ts); a new connection every
 * five minutes costs nothing measurable.
 */
export const POOL_CONNECTION_LIFETIME_S = 300;

export interface DatabaseHandle {
  db: Db;
  /** 'postgres' for a server, 'pglite' for the embedded default. */
  kind: 'postgres' | 'pglite';
  /** The pg pool, for paths Kysely does not cover (COPY). Absent on PGlite. */
  pool?: pg.Pool;
  /** True when the TimescaleDB extension is installed in this database. */
  timescale: boolean;
  close(): Promise<void>;
}

export async function openDatabase(options: {
  url?: string;
  dataDir: string;
  poolSize?: number;
  /** An idle connection failed (Postgres restarted, an admin terminated it); the pool replaces it. */
  onPoolError?: (error: Error) => void;
}): Promise<DatabaseHandle> {
  if (options.url) {
    const pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize ?? 20,
      // A server that accepts the TCP connection but never answers (stopping, overloaded, a half-open
      // network path) fails the request after this long (503 unavailable) instead of holding it.
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      maxLifetimeSeconds: POOL_CONNECTION_LIFETIME_S,
      // A connection once opened stays until its lifetime ends, idle or not. Closed after 10 s idle (the
      // default), the pool shrank to what a steady load keeps busy, and the next stall — a slow commit, a
      // busy core — met a queue of requests that each opened a connection (a backend forked, the hot
      // statements prepared and planned anew) while the queue grew: dispatch p99 at 200/s went from
      // 24 ms with the connections kept to 79–348 ms without (docs/PERFORMANCE.md).
      idleTimeoutMillis: 0,
      // Notice a peer that vanished without closing (a failed-over host): the kernel probes idle sockets.
      keepAlive: true,
    });
    // Without a listener, node treats the pool's 'error' as fatal: one Postgres restart would kill the process.
    pool.on('error', (error) => options.onPoolError?.(error));
    // The pool listens only to idle clients. A connection dying under a checked-out client (a query in
    // flight, which rejects with the same error for its caller to handle) would otherwise emit an
    // unhandled 'error' and take the process down; idle ones are still reported through the pool above.
    pool.on('connect', (client) => client.on('error', () => {}));
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, kind: 'postgres', pool, timescale: false, close: () => db.destroy() };
  }
  const dir = path.resolve(options.dataDir, 'pg');
  await mkdir(dir, { recursive: true });
  const pglite = await PGlite.create(dir);
  const db = new Kysely<Database>({ dialect: new PGliteDialect({ pglite }) });
  return {
    db,
    kind: 'pglite',
    timescale: false,
    close: async () => {
      await db.destroy();
      if (!pglite.closed) await pglite.close();
    },
  };
}

/** Run every pending migration; throws with the failing migration's name. */
export async function migrateToLatest(db: Db): Promise<string[]> {
  const migrator = new Migrator({ db, provider: migrationProvider });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error) {
    throw new Error(`migration ${failed?.migrationName ?? '(unknown)'} failed: ${String((error as Error).message ?? error)}`, { cause: error });
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/**
 * TimescaleDB is used when present (compose runs it) and never required (dev and CI run plain Postgres).
 * We create the extension only when the server offers it in a version we support (db/timescale.ts);
 * an older one is reported through `onUnsupported` and the database is used as plain PostgreSQL.
 */
export async function detectTimescale(handle: DatabaseHandle, onUnsupported?: (version: string) => void): Promise<boolean> {
  if (handle.kind !== 'postgres') return false;
  const offered = await sql<{ version: string }>`
    select coalesce(installed_version, default_version) as version from pg_available_extensions where name = 'timescaledb'
  `.execute(handle.db);
  const version = offered.rows[0]?.version;
  if (version === undefined) return false;
  if (!timescaleVersionSupported(version)) {
    onUnsupported?.(version);
    return false;
  }
  await sql.raw(CREATE_EXTENSION_SQL).execute(handle.db);
  return true;
}
