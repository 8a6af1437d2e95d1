import {
  DeleteWebhookResponseSchema,
  isWebhookSecret,
  ListWebhooksResponseSchema,
  WebhookEndpointWithSecretSchema,
} from '@sortie/contracts';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookEndpointRow } from '../db/schema.ts';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';
import { isDeliverable, listEnabledEndpoints, liveSecrets } from './endpoints.ts';
import { openSecret } from './secret-box.ts';
import type { Resolver } from '../net/url-guard.ts';
import { expectEnvelope } from '../testing/expect-envelope.ts';

// No real DNS: every name the tests use answers from this table.
const DNS: Record<string, string[]> = {
  'hooks.example.com': ['93.184.216.34'],
  'other.example.com': ['93.184.216.35', '2606:2800:220:1:248:1893:25c8:1946'],
  'internal.example.com': ['192.168.1.20'],
  // Only the second answer is private: every address must be checked, not only the first.
  'mixed.example.com': ['93.184.216.36', '10.0.0.7'],
};
const resolver: Resolver = async (hostname) => {
  const answers = DNS[hostname];
  if (!answers) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return answers.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

const HOUR = 3600;
let t: TestService;
let org: TestOrg;
let otherOrg: TestOrg;

beforeAll(async () => {
  t = await startTestService({ resolver, env: { SORTIE_WEBHOOK_ALLOW_CIDRS: '' } });
  org = await t.createOrg('Owner Org');
  otherOrg = await t.createOrg('Other Org');
});
afterAll(() => t?.stop());

async function create(body: unknown, key = org.key) {
  return t.call('POST', '/api/webhooks/create', { key, body });
}

async function createOk(label = 'receiver', url = 'https://hooks.example.com/sortie') {
  const response = await create({ label, url });
  expect(response.status).toBe(201);
  return WebhookEndpointWithSecretSchema.parse(response.body);
}

async function list(key = org.key) {
  const response = await t.call('GET', '/api/webhooks/list', { key });
  expect(response.status).toBe(200);
  return ListWebhooksResponseSchema.parse(response.body);
}

async function rotate(id: string, overlapSeconds: unknown, key = org.key) {
  return t.call('POST', '/api/webhooks/rotate', { key, body: { id, overlapSeconds } });
}

async function row(id: string): Promise<WebhookEndpointRow> {
  const found = await t.service.ctx.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst();
  if (!found) throw new Error(`no row ${id}`);
  return found;
}

const live = async (id: string) => liveSecrets(await row(id), t.service.ctx.secretKey, t.clock.now());

describe('POST /api/webhooks/create', () => {
  it('answers 201 with the record and a whsec_ secret, storing the normalised URL', async () => {
    const response = await create({ label: 'ground station', url: 'https://HOOKS.example.com:443/sortie/in?x=1' });
    expect(response.status).toBe(201);
    const body = WebhookEndpointWithSecretSchema.parse(response.body);
    expect(Object.keys(response.body).sort()).toEqual(
      ['consecutiveFailures', 'createdAt', 'disabledAt', 'disabledReason', 'id', 'label', 'lastAttempt', 'limitEvents', 'rotatingUntil', 'secret', 'updatedAt', 'url'],
    );
    // Limit events only when asked for: a receiver written for commands gets commands.
    expect(body.limitEvents).toBe(false);
    expect(isWebhookSecret(body.secret)).toBe(true);
    expect(body).toMatchObject({
      label: 'ground station',
      url: 'https://hooks.example.com/sortie/in?x=1',
      disabledAt: null,
      disabledReason: null,
      rotatingUntil: null,
      createdAt: t.clock.now().toISOString(),
      updatedAt: t.clock.now().toISOString(),
    });
    expect(await live(body.id)).toEqual([body.secret]);
  });

  it('stores the secret encrypted, bound to the endpoint id', async () => {
    const { id, secret } = await createOk();
    const result = await sql<{ secret_ciphertext: string; previous_secret_ciphertext: string | null }>`
      select secret_ciphertext, previous_secret_ciphertext from webhook_endpoints where id = ${id}
    `.execute(t.service.ctx.db);
    const stored = result.rows[0]!;
    expect(stored.secret_ciphertext).toMatch(/^v1\./);
    expect(stored.secret_ciphertext).not.toContain(secret);
    expect(stored.secret_ciphertext).not.toContain(secret.slice('whsec_'.length));
    expect(stored.previous_secret_ciphertext).toBeNull();
    expect(openSecret(stored.secret_ciphertext, t.service.ctx.secretKey, id)).toBe(secret);
    // The ciphertext does not open as another row's.
    expect(() => openSecret(stored.secret_ciphertext, t.service.ctx.secretKey, crypto.randomUUID())).toThrow();
  });

  it('issues a different secret to every endpoint', async () => {
    const a = await createOk();
    const b = await createOk();
    expect(a.secret).not.toBe(b.secret);
  });

  const badUrls: [string, string, RegExp][] = [
    ['scheme', 'http://hooks.example.com/sortie', /scheme must be https/],
    ['credentials', 'https://user:pw@hooks.example.com/sortie', /credentials/],
    ['fragment', 'https://hooks.example.com/sortie#top', /fragment/],
    ['port', 'https://hooks.example.com:80/sortie', /port 80/],
    ['unresolvable host', 'https://nowhere.example.com/', /nowhere\.example\.com.*could not be resolved/],
    ['not a URL', 'hooks.example.com/sortie', /not a valid absolute URL/],
  ];
  for (const [label, url, message] of badUrls) {
    it(`refuses a bad URL (${label}) with 400 invalid_request naming the url field`, async () => {
      const before = (await list()).length;
      const response = await create({ label: 'bad', url });
      expectEnvelope(response, 400, 'invalid_request');
      expect(response.body.error.message).toMatch(message);
      expect(response.body.error.details).toEqual([{ field: 'url', message: response.body.error.message }]);
      expect(await list()).toHaveLength(before);
    });
  }

  const privateUrls: [string, string, string, string][] = [
    ['a name resolving to a private address', 'https://internal.example.com/hook', 'internal.example.com', '192.168.1.20'],
    ['a name with one private address among public ones', 'https://mixed.example.com/hook', 'mixed.example.com', '10.0.0.7'],
    ['a loopback literal', 'https://127.0.0.1/hook', '127.0.0.1', '127.0.0.1'],
    ['a CGNAT literal on an allowed port', 'https://100.64.0.9:8443/hook', '100.64.0.9', '100.64.0.9'],
    ['an IPv6 link-local literal', 'https://[fe80::1]/hook', 'fe80::1', 'fe80::1'],
  ];
  for (const [label, url, host, address] of privateUrls) {
    it(`refuses ${label}, naming the host and the offending address`, async () => {
      const response = await create({ label: 'bad', url });
      expectEnvelope(response, 400, 'invalid_request');
      expect(response.body.error.message).toContain(host);
      expect(response.body.error.message).toContain(address);
      expect(response.body.error.details).toEqual([{ field: 'url', message: expect.stringContaining(address) }]);
    });
  }

  it('refuses a missing label or url with details naming the field', async () => {
    const response = await create({ url: 'https://hooks.example.com/' });
    expectEnvelope(response, 400, 'invalid_request');
    expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'label' })]);
    const noUrl = await create({ label: 'x' });
    expectEnvelope(noUrl, 400, 'invalid_request');
    expect(noUrl.body.error.details).toEqual([expect.objectContaining({ field: 'url' })]);
  });
});

describe('GET /api/webhooks/list', () => {
  it('lists the organization’s endpoints without any secret, disabled ones included', async () => {
    const a = await createOk('list-a');
    const disabled = await createOk('list-disabled');
    await t.service.ctx.db
      .updateTable('webhook_endpoints')
      .set({ disabled_at: t.clock.now(), disabled_reason: 'last 20 attempts failed' })
      .where('id', '=', disabled.id)
      .execute();

    const response = await t.call('GET', '/api/webhooks/list', { key: org.key });
    expect(response.status).toBe(200);
    const text = JSON.stringify(response.body);
    expect(text).not.toContain(a.secret);
    expect(text).not.toContain('whsec_');
    for (const record of response.body) expect(record).not.toHaveProperty('secret');

    const records = ListWebhooksResponseSchema.parse(response.body);
    expect(records.find((r) => r.id === a.id)).toMatchObject({ label: 'list-a', disabledAt: null });
    expect(records.find((r) => r.id === disabled.id)).toMatchObject({
      disabledAt: t.clock.now().toISOString(),
      disabledReason: 'last 20 attempts failed',
    });

    // Dispatch fans out only to enabled endpoints.
    const enabled = await listEnabledEndpoints(t.service.ctx.db, org.organizationId);
    expect(enabled.map((r) => r.id)).toContain(a.id);
    expect(enabled.map((r) => r.id)).not.toContain(disabled.id);
    expect(isDeliverable(await row(disabled.id))).toBe(false);
  });

  it('never shows another organization’s endpoints', async () => {
    const mine = await createOk('org-a-only');
    const theirs = await list(otherOrg.key);
    expect(theirs.map((r) => r.id)).not.toContain(mine.id);
    expect((await listEnabledEndpoints(t.service.ctx.db, otherOrg.organizationId)).map((r) => r.id)).not.toContain(mine.id);
  });
});

describe('scopes and ownership', () => {
  it('answers 403 insufficient_scope naming webhooks:write to a read-only key', async () => {
    const { apiKey } = await org.keyWith(['webhooks:read']);
    const { id } = await createOk();
    for (const [path, body] of [
      ['/api/webhooks/create', { label: 'x', url: 'https://hooks.example.com/' }],
      ['/api/webhooks/rotate', { id, overlapSeconds: 0 }],
      ['/api/webhooks/delete', { id }],
    ] as const) {
      const response = await t.call('POST', path, { key: apiKey, body });
      expectEnvelope(response, 403, 'insufficient_scope');
      expect(response.body.error.message).toContain('webhooks:write');
    }
    expect(await live(id)).toHaveLength(1);
    expect(isDeliverable(await row(id))).toBe(true);
  });

  it('answers 403 insufficient_scope naming webhooks:read to a key without it', async () => {
    const { apiKey } = await org.keyWith(['webhooks:write', 'commands:read'], { user: 'owner' });
    const response = await t.call('GET', '/api/webhooks/list', { key: apiKey });
    expectEnvelope(response, 403, 'insufficient_scope');
    expect(response.body.error.message).toContain('webhooks:read');
  });

  it('answers 401 unauthorized without a key', async () => {
    expectEnvelope(await t.call('GET', '/api/webhooks/list'), 401, 'unauthorized');
  });

  it('answers 404 not_found for another organization’s endpoint, and leaves it untouched', async () => {
    const mine = await createOk();
    const rotated = await rotate(mine.id, 0, otherOrg.key);
    expectEnvelope(rotated, 404, 'not_found');
    const deleted = await t.call('POST', '/api/webhooks/delete', { key: otherOrg.key, body: { id: mine.id } });
    expectEnvelope(deleted, 404, 'not_found');
    expect(await live(mine.id)).toEqual([mine.secret]);
    expect(isDeliverable(await row(mine.id))).toBe(true);
  });

  it('answers 404 not_found for an unknown id', async () => {
    const id = crypto.randomUUID();
    expectEnvelope(await rotate(id, 0), 404, 'not_found');
    expectEnvelope(await t.call('POST', '/api/webhooks/delete', { key: org.key, body: { id } }), 404, 'not_found');
  });

  it('answers 400 for an id that is not a UUID', async () => {
    const response = await rotate('not-a-uuid', 0);
    expectEnvelope(response, 400, 'invalid_request');
    expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'id' })]);
  });
});

describe('POST /api/webhooks/rotate', () => {
  it('with an overlap keeps the old secret live until rotatingUntil, then only the new one', async () => {
    const created = await createOk();
    t.clock.advance(5_000);
    const rotatedAt = t.clock.now();
    const response = await rotate(created.id, HOUR);
    expect(response.status).toBe(200);
    const body = WebhookEndpointWithSecretSchema.parse(response.body);
    const until = new Date(rotatedAt.getTime() + HOUR * 1000).toISOString();
    expect(isWebhookSecret(body.secret)).toBe(true);
    expect(body.secret).not.toBe(created.secret);
    expect(body).toMatchObject({ id: created.id, rotatingUntil: until, updatedAt: rotatedAt.toISOString(), createdAt: created.createdAt });
    expect((await list()).find((r) => r.id === created.id)?.rotatingUntil).toBe(until);

    expect(await live(created.id)).toEqual([body.secret, created.secret]);
    t.clock.advance(HOUR * 1000 - 1);
    expect(await live(created.id)).toEqual([body.secret, created.secret]);
    t.clock.advance(1);
    expect(await live(created.id)).toEqual([body.secret]);
    expect((await list()).find((r) => r.id === created.id)?.rotatingUntil).toBeNull();
  });

  it('with overlapSeconds 0 cuts over immediately', async () => {
    const created = await createOk();
    const response = await rotate(created.id, 0);
    expect(response.status).toBe(200);
    const body = WebhookEndpointWithSecretSchema.parse(response.body);
    expect(body.rotatingUntil).toBeNull();
    expect(await live(created.id)).toEqual([body.secret]);
    const stored = await row(created.id);
    expect(stored.previous_secret_ciphertext).toBeNull();
    expect(stored.rotating_until).toBeNull();
  });

  it('a cutover during an open overlap window ends the window', async () => {
    const created = await createOk();
    await rotate(created.id, HOUR);
    const cut = WebhookEndpointWithSecretSchema.parse((await rotate(created.id, 0)).body);
    expect(cut.rotatingUntil).toBeNull();
    expect(await live(created.id)).toEqual([cut.secret]);
  });

  it('chaining a second rotation inside the window drops the oldest secret', async () => {
    const created = await createOk();
    const first = WebhookEndpointWithSecretSchema.parse((await rotate(created.id, HOUR)).body);
    t.clock.advance(60_000);
    const second = WebhookEndpointWithSecretSchema.parse((await rotate(created.id, HOUR)).body);
    const secrets = await live(created.id);
    expect(secrets).toEqual([second.secret, first.secret]);
    expect(secrets).not.toContain(created.secret);
    // The new window runs from the second rotation.
    expect(second.rotatingUntil).toBe(new Date(t.clock.now().getTime() + HOUR * 1000).toISOString());
  });

  it('accepts the 7-day ceiling', async () => {
    const created = await createOk();
    const response = await rotate(created.id, 604_800);
    expect(response.status).toBe(200);
    expect(response.body.rotatingUntil).toBe(new Date(t.clock.now().getTime() + 604_800_000).toISOString());
  });

  for (const bad of [-1, 604_801, 1.5, '60', null, undefined]) {
    it(`refuses overlapSeconds ${JSON.stringify(bad) ?? 'missing'} with details naming overlapSeconds`, async () => {
      const created = await createOk();
      const response = await rotate(created.id, bad);
      expectEnvelope(response, 400, 'invalid_request');
      expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'overlapSeconds' })]);
      expect(await live(created.id)).toEqual([created.secret]);
    });
  }
});

describe('POST /api/webhooks/delete', () => {
  it('soft-deletes: gone from list and dispatch, rotate and a second delete are 404', async () => {
    const created = await createOk('to-delete');
    t.clock.advance(1_000);
    const response = await t.call('POST', '/api/webhooks/delete', { key: org.key, body: { id: created.id } });
    expect(response.status).toBe(200);
    expect(DeleteWebhookResponseSchema.parse(response.body)).toEqual({ id: created.id, deleted: true });

    expect((await list()).map((r) => r.id)).not.toContain(created.id);
    expect((await listEnabledEndpoints(t.service.ctx.db, org.organizationId)).map((r) => r.id)).not.toContain(created.id);

    // The row stays for delivery history; the delivery engine sees it deleted.
    const stored = await row(created.id);
    expect(stored.deleted_at?.toISOString()).toBe(t.clock.now().toISOString());
    expect(isDeliverable(stored)).toBe(false);

    expectEnvelope(await rotate(created.id, 0), 404, 'not_found');
    expectEnvelope(await t.call('POST', '/api/webhooks/delete', { key: org.key, body: { id: created.id } }), 404, 'not_found');
  });
});
