import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startupBanner } from './banner.ts';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.ts';

/**
 * `npm start` on a terminal prints where things are; piped, it prints JSON log lines only. main.ts is
 * run as a child on the real PostgreSQL, once under a pseudo-terminal (util-linux `script`) and once
 * with stdout piped.
 */
const MAIN = path.join(import.meta.dirname, '..', 'main.ts');
let database: TestDatabase;
let dataDir: string;

beforeAll(async () => {
  database = await createTestDatabase();
  dataDir = await mkdtemp(path.join(tmpdir(), 'sortie-banner-'));
});
afterAll(async () => {
  await database?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

/** Run main.ts until `done` says its output is complete, then stop it with SIGTERM; the output. */
function runMain(tty: boolean, done: (out: string) => boolean): Promise<string> {
  const env = {
    ...process.env,
    SORTIE_DATABASE_URL: database.url,
    SORTIE_DATA_DIR: dataDir,
    SORTIE_HTTP_PORT: '0',
    SORTIE_GRPC_PORT: '0',
    SORTIE_SECRET_KEY: Buffer.alloc(32, 9).toString('base64'),
    SORTIE_LOG_LEVEL: 'info',
  };
  const child = tty
    ? spawn('script', ['-qfec', `${JSON.stringify(process.execPath)} ${JSON.stringify(MAIN)}`, '/dev/null'], { env, stdio: ['pipe', 'pipe', 'inherit'] })
    : spawn(process.execPath, [MAIN], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  let stopping = false;
  // Once `script` has gone, a write to its terminal fails; nothing more is sent after the one Ctrl-C.
  child.stdin?.on('error', () => {});
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no complete output within 60 s:\n${out}`));
    }, 60_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      // Under `script` the signal goes to the whole process group of the terminal it made.
      if (stopping || !done(out)) return;
      stopping = true;
      if (tty) child.stdin!.write('\u0003');
      else child.kill('SIGTERM');
    });
    child.on('exit', () => {
      clearTimeout(timer);
      resolve(out);
    });
  });
}

const listening = (out: string) => /"msg":"gRPC \(gRPC, gRPC-Web, Connect\) listening"/.test(out) && /Ctrl-C stops it/.test(out);

describe('the start-up banner', () => {
  it('on a terminal: the console, docs and gRPC addresses the server really bound', async () => {
    const out = (await runMain(true, listening)).replaceAll('\r\n', '\n');
    const http = /"url":"http:\/\/127\.0\.0\.1:(\d+)"[^\n]*HTTP API listening/.exec(out)?.[1];
    const grpc = /"url":"http:\/\/127\.0\.0\.1:(\d+)"[^\n]*gRPC \(gRPC/.exec(out)?.[1];
    expect(http, out).toBeDefined();
    expect(out).toContain(`  Console    http://127.0.0.1:${http}/\n`);
    expect(out).toContain(`  API docs   http://127.0.0.1:${http}/docs\n`);
    expect(out).toContain(`  gRPC       127.0.0.1:${grpc}  (TelemetryService; Query and Submit also at http://127.0.0.1:${http}/api/rpc)\n`);
    expect(out).toContain('  Database   PostgreSQL (SORTIE_DATABASE_URL)\n');
  }, 90_000);

  it('piped: JSON log lines only', async () => {
    const out = await runMain(false, (o) => /gRPC \(gRPC, gRPC-Web, Connect\) listening/.test(o));
    const lines = out.split('\n').filter((l) => l.trim() !== '');
    expect(lines.length).toBeGreaterThan(2);
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    expect(out).not.toContain('Sortie is running');
  }, 90_000);

  it('names a wildcard bind as localhost, the embedded database and its folder, and a public URL that differs', () => {
    const text = startupBanner({ httpHost: '0.0.0.0', httpPort: 8080, grpcHost: '::1', grpcPort: 50051, publicUrl: 'https://sortie.example', database: 'pglite', dataDir: '.sortie-data' });
    expect(text).toContain('  Console    http://localhost:8080/\n');
    expect(text).toContain('  gRPC       [::1]:50051 ');
    expect(text).toContain('  Public URL https://sortie.example\n');
    expect(text).toContain('  Database   embedded (PGlite) in .sortie-data\n');
    expect(startupBanner({ httpHost: '0.0.0.0', httpPort: 8080, grpcHost: '127.0.0.1', grpcPort: 1, publicUrl: 'http://localhost:8080', database: 'postgres', dataDir: 'x' })).not.toContain('Public URL');
  });
});

// `script` is util-linux; without it the terminal case cannot run here.
if (spawnSync('script', ['--version']).status !== 0) throw new Error('util-linux `script` is needed to give main.ts a terminal in this test');
