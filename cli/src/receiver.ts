/**
 * `npm run receiver`: the example webhook receiver on this machine, in one step.
 *
 *   npm run -s receiver -- setup   makes a self-signed certificate in <data dir>/receiver (once) and prints
 *                                  the admin command that has Sortie trust it (loopback addresses and this
 *                                  certificate), applied by a running server at once, no restart;
 *   npm run receiver               the same certificate, then registers https://localhost:<port>/ as a
 *                                  webhook endpoint of the key's organization (or reuses it), and receives:
 *                                  verify, journal, answer 2xx, act once per command, ack.
 *
 * Sortie only delivers to https and refuses loopback addresses unless the operator allows them, which is
 * why a receiver on a laptop needs the operator's `webhook-trust` (or, read at start-up only, the server
 * settings SORTIE_WEBHOOK_ALLOW_CIDRS and SORTIE_WEBHOOK_CA_FILE).
 * The endpoint's secret is shown once by Sortie; the receiver keeps it in <data dir>/receiver/secret
 * (mode 0600) and rotates the endpoint to get a new one when that file is gone.
 *
 * Options (flag, then environment): --url / SORTIE_URL (http://localhost:8080), --key / SORTIE_API_KEY
 * (webhooks:read and webhooks:write), --port / RECEIVER_PORT (8443), --data-dir / SORTIE_DATA_DIR
 * (.sortie-data). Exit codes: 0 stopped by a signal, 1 failure, 2 bad usage.
 */
import { execFile } from 'node:child_process';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { createSortieClient, SortieApiError } from '@sortie/client';
import { createWebhookReceiver, serveReceiver } from '@sortie/contracts/examples/webhook-receiver';

const LABEL = 'local receiver (npm run receiver)';

export interface ReceiverFiles {
  dir: string;
  cert: string;
  key: string;
  secret: string;
  journal: string;
}

export function receiverFiles(dataDir: string): ReceiverFiles {
  const dir = path.resolve(dataDir, 'receiver');
  return {
    dir,
    cert: path.join(dir, 'cert.pem'),
    key: path.join(dir, 'key.pem'),
    secret: path.join(dir, 'secret'),
    journal: path.join(dir, 'journal.jsonl'),
  };
}

/**
 * A self-signed certificate for localhost, 127.0.0.1 and ::1, made once with the openssl CLI (Node has no
 * X.509 issuing API). It is its own CA, so the server trusts exactly it (webhook-trust --ca-file).
 */
export async function ensureCertificate(files: ReceiverFiles): Promise<void> {
  if (existsSync(files.cert) && existsSync(files.key)) return;
  await mkdir(files.dir, { recursive: true, mode: 0o700 });
  await promisify(execFile)('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', files.key, '-out', files.cert, '-days', '825', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1',
    '-addext', 'basicConstraints=critical,CA:TRUE',
  ]);
  await chmod(files.key, 0o600);
}

/**
 * The operator's command that has Sortie deliver to a receiver on this machine: loopback allowed and
 * this certificate trusted, stored as a deployment setting a running server applies at once.
 */
export function trustCommand(files: ReceiverFiles): string {
  return `npm run -s admin -- webhook-trust add --allow-cidrs 127.0.0.1/32,::1/128 --ca-file ${shellWord(files.cert)}\n`;
}

/** A path as one shell word: as it is when plain, else single-quoted. */
function shellWord(text: string): string {
  return /^[\w./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

/** What `setup` prints: shell comments saying what comes next (harmless under eval), then the command. */
export function setupText(files: ReceiverFiles, url: string): string {
  return (
    `# A webhook receiver on this machine, with its certificate in ${files.dir}.\n` +
    `# Sortie delivers to it once its operator trusts it (loopback addresses and this certificate); a running\n` +
    `# server applies that at once. Then \`npm run receiver\` registers ${url} as a webhook endpoint of the\n` +
    `# key's organization (as \`npx sortie webhooks create ${url}\` would) and acks each command it is sent.\n` +
    trustCommand(files)
  );
}

/** The endpoint for this receiver's URL and its secret: reused, rotated when the secret was lost, or created. */
export async function registerEndpoint(
  client: ReturnType<typeof createSortieClient>,
  url: string,
  files: ReceiverFiles,
): Promise<{ id: string; secret: string; how: 'reused' | 'rotated' | 'created' }> {
  const existing = (await client.webhooks.list()).find((e) => e.url === url && e.disabledAt === null);
  const stored = existsSync(files.secret) ? (await readFile(files.secret, 'utf8')).trim() : '';
  if (existing && stored) return { id: existing.id, secret: stored, how: 'reused' };
  const endpoint = existing
    ? await client.webhooks.rotate({ id: existing.id, overlapSeconds: 0 })
    : await client.webhooks.create({ label: LABEL, url });
  await writeFile(files.secret, `${endpoint.secret}\n`, { mode: 0o600 });
  return { id: endpoint.id, secret: endpoint.secret, how: existing ? 'rotated' : 'created' };
}

async function main(argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        url: { type: 'string' },
        key: { type: 'string' },
        'api-key': { type: 'string' },
        port: { type: 'string' },
        'data-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    process.stderr.write(`receiver: ${(error as Error).message}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write('usage: npm run receiver [-- setup] [--url URL] [--key KEY] [--port N] [--data-dir DIR]\n');
    return 0;
  }
  const files = receiverFiles(values['data-dir'] ?? env.SORTIE_DATA_DIR ?? '.sortie-data');
  const port = Number(values.port ?? env.RECEIVER_PORT ?? 8443);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    process.stderr.write(`receiver: --port must be a port number, not "${values.port ?? env.RECEIVER_PORT}"\n`);
    return 2;
  }
  const url = `https://localhost:${port}/`;
  if (positionals[0] === 'setup') {
    await ensureCertificate(files);
    process.stdout.write(setupText(files, url));
    return 0;
  }
  if (positionals.length > 0) {
    process.stderr.write(`receiver: unknown command "${positionals[0]}" (only "setup")\n`);
    return 2;
  }
  const apiKey = values.key ?? values['api-key'] ?? env.SORTIE_API_KEY;
  if (!apiKey) {
    process.stderr.write('receiver: set SORTIE_API_KEY (or --key) to a key with webhooks:read and webhooks:write\n');
    return 2;
  }
  await ensureCertificate(files);
  const client = createSortieClient({ baseUrl: values.url ?? env.SORTIE_URL ?? 'http://localhost:8080', apiKey });
  let endpoint;
  try {
    endpoint = await registerEndpoint(client, url, files);
  } catch (error) {
    if (error instanceof SortieApiError && error.code === 'invalid_request') {
      process.stderr.write(
        `receiver: Sortie refused ${url} (${error.message}). Have its operator trust this receiver (no restart needed):\n${trustCommand(files)}`,
      );
      return 1;
    }
    throw error;
  }
  const receiver = await createWebhookReceiver({
    secrets: [endpoint.secret],
    journalPath: files.journal,
    act: async (command) => {
      process.stdout.write(`receiver: acting on command ${command.id}: ${command.commandText} ${JSON.stringify(command.args ?? {})}\n`);
      return { state: 'acked', detail: 'done by the local receiver', vehicleTime: new Date().toISOString() };
    },
    onError: (error) => process.stderr.write(`receiver: ${(error as Error).message}\n`),
  });
  const tls = { cert: await readFile(files.cert, 'utf8'), key: await readFile(files.key, 'utf8') };
  const server = serveReceiver(receiver, tls);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    await receiver.close();
    const busy = (error as NodeJS.ErrnoException).code === 'EADDRINUSE';
    process.stderr.write(`receiver: ${busy ? `port ${port} is in use (another receiver?); pick another with --port or RECEIVER_PORT` : (error as Error).message}\n`);
    return 1;
  }
  process.stdout.write(`receiver: ${url} is webhook endpoint ${endpoint.id} (${endpoint.how}); waiting for commands (Ctrl-C stops)\n`);
  await new Promise<void>((resolve) => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => resolve());
  });
  server.close();
  await receiver.close();
  return 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main(process.argv.slice(2), process.env).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`receiver: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
