import { describe, expect, it } from 'vitest';
import { findPostmaster, type ProcReader } from './postgres-cpu.ts';

/** A /proc of two clusters, as a machine has after CI left its TimescaleDB cluster running. */
function machine(): ProcReader {
  const files: Record<string, string> = {
    '/proc/18948/cmdline': '/usr/lib/postgresql/15/bin/postgres\0-D\0/var/lib/postgresql/15/timescale\0',
    '/proc/18948/task/18948/children': '18949 18950',
    '/proc/18949/cmdline': 'postgres: 15/timescale: checkpointer ',
    '/proc/18950/cmdline': 'postgres: 15/timescale: postgres sortie_test_other 127.0.0.1(5000) idle',
    '/proc/2241/cmdline': '/usr/lib/postgresql/15/bin/postgres\0-D\0/var/lib/postgresql/15/main\0',
    '/proc/2241/task/2241/children': '2242 3001',
    '/proc/2242/cmdline': 'postgres: 15/main: checkpointer ',
    '/proc/3001/cmdline': 'postgres: 15/main: postgres sortie_test_bench 127.0.0.1(5001) idle',
    '/proc/4000/cmdline': 'node\0bench.ts\0',
  };
  return { pids: () => ['18948', '18949', '18950', '2241', '2242', '3001', '4000'], read: (path) => files[path] ?? '' };
}

describe('findPostmaster', () => {
  it('takes the cluster with a backend of the database, not the first pid /proc lists', () => {
    expect(findPostmaster('sortie_test_bench', machine())).toBe(2241);
    expect(findPostmaster('sortie_test_other', machine())).toBe(18948);
  });

  it('takes the first postmaster when no backend names the database, and fails when there is none', () => {
    expect(findPostmaster('sortie_test_nobody', machine())).toBe(18948);
    expect(() => findPostmaster('x', { pids: () => ['4000'], read: () => 'node\0' })).toThrow(/no PostgreSQL postmaster/);
  });
});
