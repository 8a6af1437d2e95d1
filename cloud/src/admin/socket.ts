import { chmodSync, rmSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import path from 'node:path';
import type { AppContext } from '../platform/context.ts';
import { AdminError, runAdminCommand } from './commands.ts';

/**
 * The admin CLI's way into a running embedded server. PGlite is one process's database, so while
 * `npm start` runs on .sortie-data no other process may open it, and the admin CLI used to refuse: the
 * quick start had to stop the server to make its first key. Now the server listens on a Unix socket in
 * its data dir and runs the admin command there, on its own database, and the CLI prints the answer as
 * if it had run it itself. Who may connect is who may open the socket file: its owner (mode 0600), the
 * same user who could open the database files beside it. Against PostgreSQL the CLI opens the database
 * itself and no socket is made.
 *
 * One request per connection: a JSON line `{"argv": [...]}`; one JSON line back, `{"result": …}` or
 * `{"error": {"code", "message"}}`, as the CLI prints them.
 */
const SOCKET_FILE = 'admin.sock';
/** sun_path holds 108 bytes on Linux (104 on macOS) with its NUL; a longer path cannot be bound. */
const MAX_SOCKET_PATH = 103;
const MAX_REQUEST_BYTES = 64 * 1024;

export function adminSocketPath(dataDir: string): string {
  return path.resolve(dataDir, SOCKET_FILE);
}

export interface AdminSocket {
  close(): Promise<void>;
}

/** Listens in the data dir; undefined (with a warning) where the path cannot be a socket. */
export async function serveAdminSocket(ctx: AppContext): Promise<AdminSocket | undefined> {
  const file = adminSocketPath(ctx.config.dataDir);
  if (Buffer.byteLength(file) > MAX_SOCKET_PATH) {
    ctx.logger.warn({ file }, 'admin commands cannot reach this server: its data dir path is too long for a Unix socket; stop it to run them');
    return undefined;
  }
  // A socket file left by a server that died is in the way; this process holds the data dir now.
  rmSync(file, { force: true });
  const running = new Set<Promise<void>>();
  const server: Server = createServer((socket) => {
    const done = answer(ctx, socket).finally(() => running.delete(done));
    running.add(done);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(file, () => {
      server.off('error', reject);
      resolve();
    });
  });
  chmodSync(file, 0o600);
  server.on('error', (error) => ctx.logger.warn({ err: error }, 'admin socket failed'));
  return {
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.all(running);
      rmSync(file, { force: true });
    },
  };
}

async function answer(ctx: AppContext, socket: Socket): Promise<void> {
  socket.on('error', () => {});
  let text = '';
  const line = await new Promise<string | undefined>((resolve) => {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
      const end = text.indexOf('\n');
      if (end >= 0) resolve(text.slice(0, end));
      else if (text.length > MAX_REQUEST_BYTES) resolve(undefined);
    });
    socket.on('end', () => resolve(undefined));
    socket.on('close', () => resolve(undefined));
  });
  let reply: unknown;
  try {
    const request = line === undefined ? undefined : (JSON.parse(line) as { argv?: unknown });
    const argv = request?.argv;
    if (!Array.isArray(argv) || !argv.every((a): a is string => typeof a === 'string')) {
      throw new AdminError('invalid_request', 'expected one JSON line {"argv": [...]}');
    }
    ctx.logger.info({ command: argv[0] }, 'admin command from the admin CLI');
    reply = { result: await runAdminCommand(ctx.db, argv, () => ctx.clock.now()) };
  } catch (error) {
    if (error instanceof AdminError) reply = { error: { code: error.code, message: error.message } };
    else if (error instanceof SyntaxError) reply = { error: { code: 'invalid_request', message: 'expected one JSON line {"argv": [...]}' } };
    else {
      ctx.logger.error({ err: error }, 'admin command failed');
      reply = { error: { code: 'internal_error', message: (error as Error).message } };
    }
  }
  socket.end(`${JSON.stringify(reply)}\n`);
}

/**
 * Runs an admin command in the server holding the data dir. Resolves with what the command answered;
 * an error it answered is thrown as AdminError; a server that does not answer (an older one, or one
 * whose data dir path is too long) is undefined.
 */
export async function callAdminSocket(dataDir: string, argv: readonly string[]): Promise<{ result: unknown } | undefined> {
  const file = adminSocketPath(dataDir);
  const reply = await new Promise<string | undefined>((resolve, reject) => {
    const socket = connect(file);
    let text = '';
    socket.setEncoding('utf8');
    socket.on('connect', () => socket.write(`${JSON.stringify({ argv })}\n`));
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('end', () => resolve(text));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' || error.code === 'ECONNREFUSED') resolve(undefined);
      else reject(error);
    });
  });
  if (reply === undefined) return undefined;
  const parsed = JSON.parse(reply) as { result?: unknown; error?: { code: string; message: string } };
  if (parsed.error) throw new AdminError(parsed.error.code, parsed.error.message);
  return { result: parsed.result };
}
