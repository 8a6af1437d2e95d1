import pg from 'pg';
import { preloadsTimescale } from '../db/connect.ts';
import { TEST_ADMIN_URL } from './test-database.ts';

/**
 * The two PostgreSQL servers the tests use, each found by what it offers rather than assumed:
 * - the plain one (SORTIE_TEST_DATABASE_URL, 127.0.0.1:5432), which must not preload TimescaleDB;
 * - the TimescaleDB one (SORTIE_TEST_TIMESCALE_URL, 127.0.0.1:5433), which must preload it.
 * `bash scripts/timescale-cluster.sh` makes the second (CI runs it). A server that is missing or not
 * what its tests need fails them with a message saying so; only SORTIE_SKIP_TIMESCALE=1 skips the
 * TimescaleDB tests, and vitest counts them as skipped.
 */
export const TIMESCALE_ADMIN_URL = process.env.SORTIE_TEST_TIMESCALE_URL ?? 'postgres://postgres@127.0.0.1:5433/postgres';
export const SKIP_TIMESCALE = process.env.SORTIE_SKIP_TIMESCALE === '1';

const HOW_TO =
  'run `bash scripts/timescale-cluster.sh` (TimescaleDB built into this machine\'s PostgreSQL and a cluster preloading it on 127.0.0.1:5433), ' +
  'or point SORTIE_TEST_TIMESCALE_URL at one; SORTIE_SKIP_TIMESCALE=1 skips these tests';

export interface ServerOffer {
  /** The timescaledb version the server offers, if any. */
  offered: string | undefined;
  /** True when shared_preload_libraries names timescaledb. */
  preloaded: boolean;
}

/** What a server offers of TimescaleDB. */
export async function timescaleOffer(adminUrl: string): Promise<ServerOffer> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    const offer = await client.query<{ version: string | null; preload: string }>(
      `select (select default_version from pg_available_extensions where name = 'timescaledb') as version,
              current_setting('shared_preload_libraries') as preload`,
    );
    const row = offer.rows[0]!;
    return { offered: row.version ?? undefined, preloaded: preloadsTimescale(row.preload) };
  } finally {
    await client.end();
  }
}

/** The TimescaleDB server's admin URL and version; throws, saying how to get one, when there is none. */
export async function requireTimescaleServer(): Promise<{ adminUrl: string; version: string }> {
  let offer: ServerOffer;
  try {
    offer = await timescaleOffer(TIMESCALE_ADMIN_URL);
  } catch (error) {
    throw new Error(`the TimescaleDB tests need a server at ${TIMESCALE_ADMIN_URL} (${(error as Error).message}): ${HOW_TO}`);
  }
  if (!offer.offered || !offer.preloaded) {
    throw new Error(`the server at ${TIMESCALE_ADMIN_URL} ${offer.offered ? 'does not preload TimescaleDB' : 'does not offer TimescaleDB'}: ${HOW_TO}`);
  }
  return { adminUrl: TIMESCALE_ADMIN_URL, version: offer.offered };
}

/** The plain server's offer; throws when it preloads TimescaleDB (the plain-path tests would test nothing). */
export async function requirePlainServer(): Promise<ServerOffer> {
  const offer = await timescaleOffer(TEST_ADMIN_URL);
  if (offer.preloaded) {
    throw new Error(`the plain-path tests need a server that does not preload TimescaleDB; ${TEST_ADMIN_URL} does (set SORTIE_TEST_DATABASE_URL to another)`);
  }
  return offer;
}
