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
 * that ended stay in PostgreSQL's memory (db/prepared-shapes.ts); a new connection every
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
      // No JIT compilation. Every statement of ours is short (a batch insert, a keyset page, a bounded
      // read of rollups or raw rows), so JIT can only cost: it compiles when the planner's estimate is
      // large, and estimates are worst exactly where the data is cheapest to read. On TimescaleDB a
      // compressed chunk that autovacuum has not analysed is estimated at a thousand times its batches,
      // and an export page of a compressed flight took 470 ms, 240 ms of it compiling, instead of
      // 3 ms: a whole export 28 times slower than before compression (docs/PERFORMANCE.md).
      options: '-c jit=off',
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
 * What start-up found of TimescaleDB, and so which path the cloud takes (docs/decisions/0007-timescale.md):
 * - `in-use`: the server offers a supported version and preloads it; the extension exists in this database.
 * - `absent`: the server does not offer it (plain PostgreSQL, PGlite).
 * - `too-old`: offered below TIMESCALE_MIN_VERSION; plain tables, with a warning.
 * - `not-preloaded`: offered, but `shared_preload_libraries` lacks it and this database has never used
 *   it; plain tables, with a warning naming the fix. The next start-up with it preloaded converts the
 *   tables written meanwhile, so nothing is lost by starting.
 */
export type TimescaleState =
  | { path: 'in-use'; version: string }
  | { path: 'absent' }
  | { path: 'too-old'; version: string }
  | { path: 'not-preloaded'; version: string };

/** Why the cloud refuses to start on this database; main.ts prints the message alone (exit 2), never a stack. */
export class DatabaseStartupError extends Error {
  override name = 'DatabaseStartupError';
}

/** The one fix for an installed-but-not-loaded TimescaleDB, as an operator reads it in a log line. */
export const PRELOAD_FIX =
  "add timescaledb to shared_preload_libraries in postgresql.conf (shared_preload_libraries = 'timescaledb') and restart PostgreSQL";

/** Whether a `shared_preload_libraries` value names TimescaleDB (a list, each name maybe quoted). */
export function preloadsTimescale(setting: string): boolean {
  return setting.split(',').some((library) => /^\s*"?timescaledb"?\s*$/.test(library));
}

/**
 * TimescaleDB is used when present (compose runs it) and never required (dev machines may run plain
 * Postgres). We create the extension only when the server offers it in a version we support and loads
 * it (db/timescale.ts). A database that already uses the extension on a server that no longer preloads
 * it cannot be served at all (its hypertables refuse writes, its compressed chunks look empty without
 * the library): that is a DatabaseStartupError naming the fix. Run under the start-up lock
 * (withStartupLock), so replicas starting together create the extension once.
 */
export async function detectTimescale(handle: DatabaseHandle): Promise<TimescaleState> {
  if (handle.kind !== 'postgres') return { path: 'absent' };
  const offered = await sql<{ default_version: string; installed_version: string | null; preload: string }>`
    select default_version, installed_version, current_setting('shared_preload_libraries') as preload
    from pg_available_extensions where name = 'timescaledb'
  `.execute(handle.db);
  const row = offered.rows[0];
  if (row === undefined) return { path: 'absent' };
  const preloaded = preloadsTimescale(row.preload);
  if (row.installed_version !== null) {
    if (!preloaded) {
      throw new DatabaseStartupError(
        `this database uses TimescaleDB ${row.installed_version}, but the PostgreSQL server does not load it: ${PRELOAD_FIX}. ` +
          'Sortie does not start, because without the library its hypertables cannot be written and their compressed data cannot be read.',
      );
    }
    // A version too old for our statements but already in use is still read and written as tables.
    if (!timescaleVersionSupported(row.installed_version)) return { path: 'too-old', version: row.installed_version };
    return { path: 'in-use', version: row.installed_version };
  }
  if (!timescaleVersionSupported(row.default_version)) return { path: 'too-old', version: row.default_version };
  if (!preloaded) return { path: 'not-preloaded', version: row.default_version };
  await sql.raw(CREATE_EXTENSION_SQL).execute(handle.db);
  const created = await sql<{ version: string }>`select extversion as version from pg_extension where extname = 'timescaledb'`.execute(handle.db);
  return { path: 'in-use', version: created.rows[0]!.version };
}

/**
 * Run start-up's schema work (migrations, layout moves, the extension) while holding a session-level
 * advisory lock on a connection of its own, so replicas starting together on one database take turns:
 * the first does each step, the others find it done. `create extension if not exists` and
 * `create_hypertable(if_not_exists)` are not safe against a concurrent twin (a unique violation on
 * pg_extension), and the layout moves copy data. PGlite belongs to one process (embedded-lock.ts).
 */
export async function withStartupLock<T>(handle: DatabaseHandle, work: () => Promise<T>): Promise<T> {
  if (!handle.pool) return work();
  const client = await handle.pool.connect();
  let broken = false;
  try {
    await client.query(STARTUP_LOCK_SQL);
    return await work();
  } finally {
    // Unlocking fails only on a broken connection, whose session (and lock) ends with it.
    await client.query(STARTUP_UNLOCK_SQL).catch(() => (broken = true));
    client.release(broken);
  }
}

const STARTUP_LOCK_KEY = "hashtext('sortie.startup')";
const STARTUP_LOCK_SQL = `select pg_advisory_lock(${STARTUP_LOCK_KEY})`;
const STARTUP_UNLOCK_SQL = `select pg_advisory_unlock(${STARTUP_LOCK_KEY})`;
