import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../db/connect.ts';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.ts';
import { startTestService, type TestService } from '../testing/test-service.ts';
import { AdminError, runAdminCommand } from './commands.ts';
import { expectEnvelope } from '../testing/expect-envelope.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const CLI = fileURLToPath(new URL('./cli.ts', import.meta.url));
const REPO_ROOT = path.resolve(path.dirname(CLI), '../../..');

let t: TestService;
let db: Db;

/** The admin command with the service's clock, so expiries line up with what HTTP checks. */
const admin = (argv: string[], now: () => Date = () => t.clock.now()) => runAdminCommand(db, argv, now) as Promise<any>;

async function adminError(argv: string[]): Promise<AdminError> {
  const error = await admin(argv).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AdminError);
  return error as AdminError;
}

beforeAll(async () => {
  t = await startTestService();
  db = t.service.ctx.db;
});
afterAll(() => t?.stop());

describe('create-org and create-user', () => {
  it('create-org returns the organization and its first owner', async () => {
    const result = await admin(['create-org', '--name', 'Acme Test Range']);
    expect(result).toEqual({ organizationId: expect.stringMatching(UUID), ownerUserId: expect.stringMatching(UUID) });
    const org = await db.selectFrom('organizations').selectAll().where('id', '=', result.organizationId).executeTakeFirstOrThrow();
    expect(org.name).toBe('Acme Test Range');
    const owner = await db.selectFrom('users').selectAll().where('id', '=', result.ownerUserId).executeTakeFirstOrThrow();
    expect(owner).toMatchObject({ organization_id: result.organizationId, role: 'owner' });
  });

  it('create-org without --name is invalid_request', async () => {
    expect((await adminError(['create-org'])).code).toBe('invalid_request');
  });

  it('create-user adds a member with name and email', async () => {
    const { organizationId } = await admin(['create-org', '--name', 'Users Org']);
    const result = await admin(['create-user', '--org', organizationId, '--role', 'member', '--name', 'Ada', '--email', 'ada@example.test']);
    expect(result).toEqual({ userId: expect.stringMatching(UUID) });
    const user = await db.selectFrom('users').selectAll().where('id', '=', result.userId).executeTakeFirstOrThrow();
    expect(user).toMatchObject({ organization_id: organizationId, role: 'member', name: 'Ada', email: 'ada@example.test' });
  });

  it('create-user refuses an unknown role, a non-UUID org and an unknown org', async () => {
    const { organizationId } = await admin(['create-org', '--name', 'Roles Org']);
    expect((await adminError(['create-user', '--org', organizationId, '--role', 'admin'])).code).toBe('invalid_request');
    expect((await adminError(['create-user', '--org', 'not-a-uuid', '--role', 'member'])).code).toBe('invalid_request');
    expect((await adminError(['create-user', '--org', crypto.randomUUID(), '--role', 'member'])).code).toBe('not_found');
  });
});

describe('create-key', () => {
  it('returns an sk_ key that authenticates over HTTP with exactly the given scopes', async () => {
    const { organizationId } = await admin(['create-org', '--name', 'Keys Org']);
    const issued = await admin(['create-key', '--org', organizationId, '--scopes', 'datasets:read,telemetry:write']);
    expect(issued.apiKey).toMatch(/^sk_[A-Za-z0-9_-]{43}$/);
    expect(issued.keyId).toMatch(UUID);
    expect(issued.scopes).toEqual(['datasets:read', 'telemetry:write']);
    expect(issued.expiresAt).toBeNull();

    // datasets:read: granted.
    const list = await t.call('GET', '/api/experiments/list', { key: issued.apiKey });
    expect(list.status).toBe(200);
    expect(list.body).toEqual([]);
    // telemetry:write: granted, so the request gets as far as body validation.
    const append = await t.call('POST', '/api/datasets/append', { key: issued.apiKey, body: {} });
    expectEnvelope(append, 400, 'invalid_request');
    // datasets:write: not granted.
    const create = await t.call('POST', '/api/experiments/create', { key: issued.apiKey, body: { name: 'nope' } });
    expectEnvelope(create, 403, 'insufficient_scope');
    expect(create.body.error.message).toContain('datasets:write');
  });

  it('refuses webhooks:write for a member and for a key with no --user (forbidden)', async () => {
    const { organizationId } = await admin(['create-org', '--name', 'Webhook Org']);
    const { userId } = await admin(['create-user', '--org', organizationId, '--role', 'member']);
    const member = await adminError(['create-key', '--org', organizationId, '--scopes', 'datasets:read,webhooks:write', '--user', userId]);
    expect(member.code).toBe('forbidden');
    expect(member.message).toContain('webhooks:write');
    const nobody = await adminError(['create-key', '--org', organizationId, '--scopes', 'webhooks:write']);
    expect(nobody.code).toBe('forbidden');
    const readOnly = await adminError(['create-key', '--org', organizationId, '--scopes', 'webhooks:read']);
    expect(readOnly.code).toBe('forbidden');
    const keys = await db.selectFrom('api_keys').select('id').where('organization_id', '=', organizationId).execute();
    expect(keys).toEqual([]);
  });

  it('issues webhooks:write for an owner', async () => {
    const { organizationId, ownerUserId } = await admin(['create-org', '--name', 'Owner Org']);
    const issued = await admin(['create-key', '--org', organizationId, '--scopes', 'webhooks:read,webhooks:write', '--user', ownerUserId]);
    expect(issued.apiKey).toMatch(/^sk_/);
    expect(issued.scopes).toEqual(['webhooks:read', 'webhooks:write']);
    const row = await db.selectFrom('api_keys').selectAll().where('id', '=', issued.keyId).executeTakeFirstOrThrow();
    expect(row.user_id).toBe(ownerUserId);
    expect(row.scopes).toEqual(['webhooks:read', 'webhooks:write']);
    // Only the hash is stored.
    expect(row.key_hash).not.toContain(issued.apiKey);
  });

  it('refuses an unknown scope, an empty scope list, an unknown org and a user of another org', async () => {
    const { organizationId } = await admin(['create-org', '--name', 'Scope Org']);
    const unknown = await adminError(['create-key', '--org', organizationId, '--scopes', 'datasets:read,datasets:delete']);
    expect(unknown.code).toBe('invalid_request');
    expect(unknown.message).toContain('datasets:delete');
    expect((await adminError(['create-key', '--org', organizationId, '--scopes', ','])).code).toBe('invalid_request');
    expect((await adminError(['create-key', '--org', crypto.randomUUID(), '--scopes', 'datasets:read'])).code).toBe('not_found');
    const other = await admin(['create-org', '--name', 'Other Org']);
    const foreign = await adminError(['create-key', '--org', organizationId, '--scopes', 'datasets:read', '--user', other.ownerUserId]);
    expect(foreign.code).toBe('not_found');
    expect((await adminError(['create-key', '--org', organizationId, '--scopes', 'datasets:read', '--expires-in', 'soon'])).code).toBe(
      'invalid_request',
    );
  });
});

describe('revoke-key', () => {
  it('makes HTTP answer 401 at once, even when the server clock is behind the admin clock', async () => {
    const { organizationId } = await admin(['create-org', '--name', 'Revoke Org']);
    const issued = await admin(['create-key', '--org', organizationId, '--scopes', 'datasets:read']);
    expect((await t.call('GET', '/api/experiments/list', { key: issued.apiKey })).status).toBe(200);

    // The operator's machine runs a minute ahead of the server: revocation must not wait for the server to catch up.
    t.clock.set(new Date(Date.now() - 60_000));
    const result = await admin(['revoke-key', '--id', issued.keyId], () => new Date());
    expect(result).toEqual({ keyId: issued.keyId, revoked: true });
    const response = await t.call('GET', '/api/experiments/list', { key: issued.apiKey });
    expectEnvelope(response, 401, 'unauthorized');

    // Revoking again is harmless; an unknown id is not_found.
    expect(await admin(['revoke-key', '--id', issued.keyId])).toEqual({ keyId: issued.keyId, revoked: true });
    expect((await adminError(['revoke-key', '--id', crypto.randomUUID()])).code).toBe('not_found');
    expect((await adminError(['revoke-key', '--id', 'nope'])).code).toBe('invalid_request');
  });
});

describe('create-key --expires-in', () => {
  it('sets an expiry that HTTP enforces on the service clock', async () => {
    const { organizationId } = await admin(['create-org', '--name', 'Expiry Org']);
    const start = t.clock.now();
    const issued = await admin(['create-key', '--org', organizationId, '--scopes', 'datasets:read', '--expires-in', '1h']);
    expect(issued.expiresAt).toBe(new Date(start.getTime() + 3_600_000).toISOString());
    expect((await t.call('GET', '/api/experiments/list', { key: issued.apiKey })).status).toBe(200);

    t.clock.advance(2 * 3_600_000);
    const response = await t.call('GET', '/api/experiments/list', { key: issued.apiKey });
    expectEnvelope(response, 401, 'unauthorized');
  });
});

describe('command-webhooks', () => {
  it('round-trips on, off and status', async () => {
    expect(await admin(['command-webhooks', 'status'])).toEqual({ commandWebhooks: 'off' });
    expect(await admin(['command-webhooks', 'on'])).toEqual({ commandWebhooks: 'on' });
    expect(await admin(['command-webhooks', 'status'])).toEqual({ commandWebhooks: 'on' });
    expect(await admin(['command-webhooks', 'on'])).toEqual({ commandWebhooks: 'on' });
    expect(await admin(['command-webhooks', 'off'])).toEqual({ commandWebhooks: 'off' });
    expect(await admin(['command-webhooks', 'status'])).toEqual({ commandWebhooks: 'off' });
    expect((await adminError(['command-webhooks', 'maybe'])).code).toBe('invalid_request');
    expect((await adminError(['command-webhooks'])).code).toBe('invalid_request');
  });

  it('rejects an unknown command', async () => {
    const error = await adminError(['drop-everything']);
    expect(error.code).toBe('invalid_request');
    expect(error.message).toContain('drop-everything');
  });
});

describe('list-orgs, list-users, list-keys', () => {
  it('lists what create-org, create-user and create-key made, keys by prefix and state, never the key', async () => {
    const { organizationId, ownerUserId } = await admin(['create-org', '--name', 'Listed Org']);
    const { userId } = await admin(['create-user', '--org', organizationId, '--role', 'member', '--name', 'Grace', '--email', 'grace@example.test']);
    const live = await admin(['create-key', '--org', organizationId, '--scopes', 'datasets:read']);
    const expiring = await admin(['create-key', '--org', organizationId, '--scopes', 'telemetry:read', '--user', userId, '--expires-in', '1h']);
    const revoked = await admin(['create-key', '--org', organizationId, '--scopes', 'datasets:write']);
    await admin(['revoke-key', '--id', revoked.keyId]);

    const orgs = await admin(['list-orgs']);
    expect(orgs.find((o: { organizationId: string }) => o.organizationId === organizationId)).toEqual({
      organizationId,
      name: 'Listed Org',
      createdAt: expect.stringMatching(/Z$/),
      users: 2,
      activeKeys: 2,
    });
    // Two hours on, the expiring key no longer counts.
    const later = () => new Date(t.clock.now().getTime() + 2 * 3600_000);
    const orgsLater = await admin(['list-orgs'], later);
    expect(orgsLater.find((o: { organizationId: string }) => o.organizationId === organizationId).activeKeys).toBe(1);

    const users = await admin(['list-users', '--org', organizationId]);
    expect(users.map((u: { userId: string; role: string; name: string }) => [u.userId, u.role, u.name])).toEqual([
      [ownerUserId, 'owner', expect.any(String)],
      [userId, 'member', 'Grace'],
    ]);
    expect((await admin(['list-users'])).length).toBeGreaterThanOrEqual(2);

    const keys = await admin(['list-keys', '--org', organizationId], later);
    expect(keys.map((k: { keyId: string; state: string; scopes: string[]; userId: string | null }) => [k.keyId, k.state, k.scopes, k.userId])).toEqual([
      [live.keyId, 'active', ['datasets:read'], null],
      [expiring.keyId, 'expired', ['telemetry:read'], userId],
      [revoked.keyId, 'revoked', ['datasets:write'], null],
    ]);
    for (const key of keys) {
      expect(live.apiKey.startsWith(key.prefix) || expiring.apiKey.startsWith(key.prefix) || revoked.apiKey.startsWith(key.prefix)).toBe(true);
      expect(JSON.stringify(key)).not.toContain(live.apiKey);
    }
  });

  it('refuses a non-UUID or unknown --org', async () => {
    expect((await adminError(['list-keys', '--org', 'acme'])).code).toBe('invalid_request');
    expect((await adminError(['list-users', '--org', '00000000-0000-4000-8000-000000000000'])).code).toBe('not_found');
  });
});

describe('the CLI as a process', () => {
  let cliDb: TestDatabase;

  beforeAll(async () => {
    cliDb = await createTestDatabase();
  });
  afterAll(() => cliDb?.drop());

  function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('SORTIE_') && value !== undefined) env[name] = value;
    env.SORTIE_DATABASE_URL = cliDb.url;
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [CLI, ...args], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk) => (stdout += chunk));
      child.stderr.on('data', (chunk) => (stderr += chunk));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  }

  it('create-org prints JSON on stdout and writes to the configured database', async () => {
    const { code, stdout, stderr } = await runCli(['create-org', '--name', 'CLI Org']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const result = JSON.parse(stdout);
    expect(result).toEqual({ organizationId: expect.stringMatching(UUID), ownerUserId: expect.stringMatching(UUID) });

    const client = new pg.Client({ connectionString: cliDb.url });
    await client.connect();
    try {
      const rows = await client.query('select name from organizations where id = $1', [result.organizationId]);
      expect(rows.rows).toEqual([{ name: 'CLI Org' }]);
    } finally {
      await client.end();
    }
  });

  it('a bad command exits non-zero with a JSON error on stderr', async () => {
    const { code, stdout, stderr } = await runCli(['frobnicate']);
    expect(code).not.toBe(0);
    expect(stdout).toBe('');
    const parsed = JSON.parse(stderr);
    expect(parsed.error.code).toBe('invalid_request');
    expect(parsed.error.message).toContain('frobnicate');
  });

  it('a forbidden key request exits with its own code', async () => {
    const org = JSON.parse((await runCli(['create-org', '--name', 'CLI Forbidden'])).stdout);
    const { code, stdout, stderr } = await runCli(['create-key', '--org', org.organizationId, '--scopes', 'webhooks:write']);
    expect(code).toBe(3);
    expect(stdout).toBe('');
    expect(JSON.parse(stderr).error.code).toBe('forbidden');
  });

  it('list-orgs prints a JSON array an operator can search for a lost organization id', async () => {
    const org = JSON.parse((await runCli(['create-org', '--name', 'CLI Lost Org'])).stdout);
    const { code, stdout } = await runCli(['list-orgs']);
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toContainEqual(expect.objectContaining({ organizationId: org.organizationId, name: 'CLI Lost Org' }));
  });
});
