import { execFile } from 'node:child_process';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './nats-server.ts';

const run = promisify(execFile);
const BIN = process.env.SORTIE_TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin';
/** PostgreSQL refuses to run as root; the tests run its tools as this user (`runuser -u postgres --`). */
const PG_USER = process.env.SORTIE_TEST_PG_USER ?? 'postgres';

/**
 * A PostgreSQL server of the test's own (initdb in a temp dir, its own port on loopback, trust auth),
 * so the test can stop and start it under load, or change what it preloads, without touching the
 * shared one.
 */
export interface PostgresInstance {
  /** Admin URL (user postgres, database postgres). */
  url: string;
  port: number;
  /** `immediate` is a crash as far as clients see: connections cut, recovery from WAL on the next start. */
  stop(mode: 'fast' | 'immediate'): Promise<void>;
  /** Start again; `preload` replaces the libraries given at creation (shared_preload_libraries). */
  start(options?: { preload?: readonly string[] }): Promise<void>;
  destroy(): Promise<void>;
}

async function asPostgres(bin: string, args: string[]): Promise<string> {
  const asRoot = process.getuid?.() === 0;
  const [file, argv] = asRoot ? ['runuser', ['-u', PG_USER, '--', path.join(BIN, bin), ...args]] : [path.join(BIN, bin), args];
  const { stdout } = await run(file, argv, { timeout: 60_000 });
  return stdout;
}

/** `preload`: shared_preload_libraries of the server (e.g. `['timescaledb']`); none by default. */
export async function startPostgresInstance(options: { preload?: readonly string[] } = {}): Promise<PostgresInstance> {
  const dir = await mkdtemp(path.join(tmpdir(), 'sortie-pg-'));
  if (process.getuid?.() === 0) {
    const { stdout } = await run('id', ['-u', PG_USER]);
    const { stdout: gid } = await run('id', ['-g', PG_USER]);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const data = path.join(dir, 'data');
  const port = await freePort();
  // --no-sync only for initdb's own files; the server runs with fsync on, as in production, so what it
  // acknowledged survives the `immediate` stop.
  await asPostgres('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions']);
  let preload = options.preload ?? [];
  const start = async (again: { preload?: readonly string[] } = {}) => {
    preload = again.preload ?? preload;
    const flags = [`-p ${port}`, `-k ${dir}`, '-c listen_addresses=127.0.0.1', '-c fsync=on', '-c max_connections=100'];
    if (preload.length > 0) flags.push(`-c shared_preload_libraries=${preload.join(',')}`, '-c timescaledb.telemetry_level=off');
    await asPostgres('pg_ctl', ['-D', data, '-o', flags.join(' '), '-l', path.join(dir, 'server.log'), '-w', '-t', '60', 'start']);
  };
  const stop = async (mode: 'fast' | 'immediate') => {
    await asPostgres('pg_ctl', ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']);
  };
  await start();
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    stop,
    start,
    destroy: async () => {
      await stop('immediate').catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}
