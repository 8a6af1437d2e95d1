import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHttpsReceiver, type TestReceiver } from '../testing/https-receiver.ts';
import { tableResolver } from '../testing/table-resolver.ts';
import { startTestService, type TestService } from '../testing/test-service.ts';
import { makeSelfSignedCertificate, type TestCertificate } from '../testing/tls.ts';

// The quick start's flow: `npm start` runs on the embedded database, and the admin CLI, a process of its
// own, makes the first organization and key meanwhile (the server runs the command: admin/socket.ts),
// then trusts a receiver on this machine, which the running server applies at once. Nothing restarts.
const CLI = fileURLToPath(new URL('./cli.ts', import.meta.url));
const REPO_ROOT = path.resolve(path.dirname(CLI), '../../..');

let t: TestService;
let dataDir: string;
let cert: TestCertificate;
let receiver: TestReceiver;

/** The admin CLI as an operator runs it, on the running server's data dir, from `cwd`. */
function admin(args: string[], options: { cwd?: string; dataDir?: string; databaseUrl?: string } = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('SORTIE_') && value !== undefined) env[name] = value;
  env.SORTIE_DATA_DIR = options.dataDir ?? dataDir;
  if (options.databaseUrl) env.SORTIE_DATABASE_URL = options.databaseUrl;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: options.cwd ?? REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function json(args: string[], options?: { cwd?: string; databaseUrl?: string }) {
  const out = await admin(args, options);
  expect(out.stderr).toBe('');
  expect(out.code).toBe(0);
  return JSON.parse(out.stdout);
}

beforeAll(async () => {
  cert = await makeSelfSignedCertificate(['localhost']);
  receiver = await startHttpsReceiver(cert);
  t = await startTestService({ embedded: true, resolver: tableResolver({ localhost: ['127.0.0.1'] }) });
  dataDir = t.service.ctx.config.dataDir;
});
afterAll(async () => {
  await t?.stop();
  await receiver?.close();
  await cert?.remove();
});

describe('the admin CLI while the embedded server runs', () => {
  it('makes the first organization and key, which work at once; a revoke takes effect at once', async () => {
    const org = await json(['create-org', '--name', 'Acme Flight Test']);
    const key = await json(['create-key', '--org', org.organizationId, '--user', org.ownerUserId, '--scopes', 'datasets:read,webhooks:read,webhooks:write']);
    expect(key.apiKey).toMatch(/^sk_/);
    expect((await t.call('GET', '/api/experiments/list', { key: key.apiKey })).status).toBe(200);
    const listed = await json(['list-orgs']);
    expect(listed).toContainEqual(expect.objectContaining({ organizationId: org.organizationId, name: 'Acme Flight Test', activeKeys: 1 }));

    await json(['revoke-key', '--id', key.keyId]);
    expect((await t.call('GET', '/api/experiments/list', { key: key.apiKey })).status).toBe(401);
  });

  it("answers the command's own refusal as the CLI always did: JSON on stderr, exit 2", async () => {
    const out = await admin(['create-user', '--org', '00000000-0000-4000-8000-000000000000', '--role', 'owner']);
    expect(out.code).toBe(2);
    expect(out.stdout).toBe('');
    expect(JSON.parse(out.stderr).error).toEqual({ code: 'not_found', message: 'no organization 00000000-0000-4000-8000-000000000000' });
  });

  it('trusts a receiver on this machine (loopback and its certificate) with no restart, and forgets it on clear', async () => {
    const org = await json(['create-org', '--name', 'Laptop']);
    const { apiKey } = await json(['create-key', '--org', org.organizationId, '--user', org.ownerUserId, '--scopes', 'webhooks:read,webhooks:write']);
    const url = `https://localhost:${receiver.port}/`;
    const create = () => t.call('POST', '/api/webhooks/create', { key: apiKey, body: { label: 'laptop', url } });

    // Loopback is refused until the operator allows it (the server started with no SORTIE_WEBHOOK_ALLOW_CIDRS).
    expect((await create()).status).toBe(400);

    // A relative --ca-file is read from where the operator typed it, not from the server's folder.
    const trusted = await json(['webhook-trust', 'add', '--allow-cidrs', '127.0.0.1/32,::1', '--ca-file', 'cert.pem'], { cwd: path.dirname(cert.certFile) });
    expect(trusted).toEqual({
      allowCidrs: ['127.0.0.1/32', '::1/128'],
      caCertificates: [{ subject: 'CN=localhost', fingerprint256: expect.stringMatching(/^[0-9A-F:]{95}$/), validTo: expect.any(String) }],
    });
    // Adding it again changes nothing, so the receiver's setup may be run twice.
    expect(await json(['webhook-trust', 'add', '--allow-cidrs', '127.0.0.1/32', '--ca-file', cert.certFile])).toEqual(trusted);
    expect(await json(['webhook-trust', 'status'])).toEqual(trusted);

    const created = await create();
    expect(created.status).toBe(201);
    const endpointId = (created.body as { id: string }).id;
    // A signed ping reaches the receiver: the new CA is in the TLS context the delivery engine uses now.
    const ping = await t.call('POST', '/api/webhooks/test', { key: apiKey, body: { endpointId } });
    expect(ping.status, JSON.stringify(ping.body)).toBe(200);
    expect(ping.body).toMatchObject({ statusCode: 200 });
    expect(receiver.requests.at(-1)?.headers['content-type']).toMatch(/json/);

    expect(await json(['webhook-trust', 'clear'])).toEqual({ allowCidrs: [], caCertificates: [] });
    expect((await t.call('POST', '/api/webhooks/test', { key: apiKey, body: { endpointId } })).body).toMatchObject({ statusCode: 0 });
  });

  it('refuses a CIDR with host bits or a file that is no certificate, naming the flag, and stores nothing', async () => {
    const cidr = await admin(['webhook-trust', 'add', '--allow-cidrs', '10.0.0.1/8']);
    expect(cidr.code).toBe(2);
    expect(JSON.parse(cidr.stderr).error.message).toMatch(/^--allow-cidrs: invalid entry "10.0.0.1\/8": host bits are set/);
    const notPem = path.join(dataDir, 'not-a-cert.pem');
    await writeFile(notPem, 'hello\n');
    const ca = await admin(['webhook-trust', 'add', '--ca-file', notPem]);
    expect(ca.code).toBe(2);
    expect(JSON.parse(ca.stderr).error.message).toContain(`--ca-file ${notPem}: no PEM certificate`);
    expect(await json(['webhook-trust', 'status'])).toEqual({ allowCidrs: [], caCertificates: [] });
  });
});

describe('a server that holds the data dir but does not answer', () => {
  let holder: ChildProcess | undefined;
  let lonely: string | undefined;
  afterAll(async () => {
    holder?.kill('SIGKILL');
    if (lonely) await rm(lonely, { recursive: true, force: true });
  });

  it('is named, with what to do, and the database is left alone', async () => {
    lonely = await mkdtemp(path.join(tmpdir(), 'sortie-admin-'));
    holder = spawn('sleep', ['60']);
    await writeFile(path.join(lonely, 'cloud.pid'), String(holder.pid));
    const out = await admin(['list-orgs'], { dataDir: lonely });
    expect(out.code).toBe(2);
    const error = JSON.parse(out.stderr).error;
    expect(error.code).toBe('conflict');
    expect(error.message).toContain(`in use by a running Sortie (pid ${holder.pid}) that does not answer`);
    expect(error.message).toContain('stop it, run the admin command, then start it again');
  });
});

describe('against PostgreSQL', () => {
  let pg: TestService | undefined;
  afterAll(() => pg?.stop());

  it('a running server applies the trust the admin CLI stored from its own process, within seconds', async () => {
    pg = await startTestService({ resolver: tableResolver({ localhost: ['127.0.0.1'] }) });
    const org = await pg.createOrg('replica');
    const { apiKey } = await org.keyWith(['webhooks:read', 'webhooks:write']);
    const create = () => pg!.call('POST', '/api/webhooks/create', { key: apiKey, body: { label: 'laptop', url: `https://localhost:${receiver.port}/` } });
    expect((await create()).status).toBe(400);
    await json(['webhook-trust', 'add', '--allow-cidrs', '127.0.0.1/32', '--ca-file', cert.certFile], { databaseUrl: pg.service.ctx.config.databaseUrl! });
    const deadline = Date.now() + 8_000;
    let status = 400;
    while (status !== 201 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      status = (await create()).status;
    }
    expect(status).toBe(201);
  });
});
