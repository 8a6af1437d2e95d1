import { CommandTemplateSchema, ListCommandTemplatesResponseSchema } from '@sortie/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';
import type { Resolver } from '../net/url-guard.ts';
import { validateArgs } from './args-schema.ts';
import { findTemplate } from './queries.ts';
import { expectEnvelope } from '../testing/expect-envelope.ts';

const resolver: Resolver = async (hostname) => {
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
};

let t: TestService;
let org: TestOrg;
let otherOrg: TestOrg;

beforeAll(async () => {
  t = await startTestService({ resolver, env: { SORTIE_WEBHOOK_ALLOW_CIDRS: '' } });
  org = await t.createOrg('Templates Org');
  otherOrg = await t.createOrg('Other Org');
});
afterAll(() => t?.stop());

const create = (body: unknown, key = org.key) => t.call('POST', '/api/commands/templates/create', { key, body });
const update = (body: unknown, key = org.key) => t.call('POST', '/api/commands/templates/update', { key, body });
const list = (key = org.key) => t.call('GET', '/api/commands/templates/list', { key });

const takeoffSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['altitude'],
  properties: { altitude: { type: 'number', minimum: 1, maximum: 120 } },
};

describe('command templates', () => {
  it('creates a template with defaults and lists it', async () => {
    const response = await create({ key: 'nav.takeoff', argsSchema: takeoffSchema });
    expect(response.status).toBe(201);
    expect(CommandTemplateSchema.parse(response.body)).toEqual({
      key: 'nav.takeoff',
      description: '',
      category: '',
      destructive: false,
      argsSchema: takeoffSchema,
      createdAt: t.clock.now().toISOString(),
      updatedAt: t.clock.now().toISOString(),
    });

    const free = await create({ key: 'sys:reboot-2', description: 'Reboot the companion', category: 'system', destructive: true });
    expect(free.status).toBe(201);
    expect(free.body).toMatchObject({ argsSchema: null, destructive: true, category: 'system' });

    const listed = await list();
    expect(listed.status).toBe(200);
    const keys = ListCommandTemplatesResponseSchema.parse(listed.body).map((tpl) => tpl.key);
    expect(keys).toEqual(['nav.takeoff', 'sys:reboot-2']);
  });

  it('answers 409 conflict for a duplicate key in the same organization only', async () => {
    await create({ key: 'dup.key' });
    expectEnvelope(await create({ key: 'dup.key' }), 409, 'conflict');
    const elsewhere = await create({ key: 'dup.key' }, otherOrg.key);
    expect(elsewhere.status).toBe(201);
    const theirKeys = (await list(otherOrg.key)).body.map((tpl: { key: string }) => tpl.key);
    expect(theirKeys).toEqual(['dup.key']);
  });

  for (const key of ['', 'has space', 'slash/key', 'x'.repeat(65)]) {
    it(`refuses the key ${JSON.stringify(key.length > 10 ? `${key.slice(0, 5)}…(${key.length})` : key)} with 400 naming key`, async () => {
      const response = await create({ key });
      expectEnvelope(response, 400, 'invalid_request');
      expect(response.body.error.details).toEqual([expect.objectContaining({ field: 'key' })]);
    });
  }

  it('accepts a 64-character key', async () => {
    expect((await create({ key: 'k'.repeat(64) })).status).toBe(201);
  });

  it('refuses an invalid argsSchema at create with 400 naming the schema path', async () => {
    const response = await create({
      key: 'bad.schema',
      argsSchema: { type: 'object', properties: { altitude: { minimum: 0 }, name: { type: 'string', pattern: '(a+)+' } } },
    });
    expectEnvelope(response, 400, 'invalid_request');
    expect(response.body.error.details).toEqual([
      { field: 'argsSchema.properties.altitude.minimum', message: expect.any(String) },
      { field: 'argsSchema.properties.name.pattern', message: expect.any(String) },
    ]);
    expect(response.body.error.message).toContain('argsSchema.properties.altitude.minimum');
    expectEnvelope(await create({ key: 'bad.schema2', argsSchema: [] }), 400, 'invalid_request');
    expectEnvelope(await create({ key: 'bad.schema3', argsSchema: { type: 'string' } }), 400, 'invalid_request');
    expect((await list()).body.map((tpl: { key: string }) => tpl.key)).not.toContain('bad.schema');
  });

  it('updates by key: given fields change, others stay, null clears the schema', async () => {
    await create({ key: 'upd.me', description: 'before', category: 'nav', argsSchema: takeoffSchema });
    t.clock.advance(2_000);
    const response = await update({ key: 'upd.me', description: 'after', destructive: true });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      key: 'upd.me',
      description: 'after',
      category: 'nav',
      destructive: true,
      argsSchema: takeoffSchema,
      updatedAt: t.clock.now().toISOString(),
    });
    expect(response.body.createdAt).not.toBe(response.body.updatedAt);

    const cleared = await update({ key: 'upd.me', argsSchema: null });
    expect(cleared.body.argsSchema).toBeNull();
  });

  it('refuses an invalid argsSchema, an unknown field and an unknown key at update', async () => {
    await create({ key: 'upd.strict', argsSchema: takeoffSchema });
    const badSchema = await update({ key: 'upd.strict', argsSchema: { type: 'object', properties: { a: { $ref: '#/x' } } } });
    expectEnvelope(badSchema, 400, 'invalid_request');
    expect(badSchema.body.error.details).toEqual([expect.objectContaining({ field: 'argsSchema.properties.a.$ref' })]);
    const renamed = await update({ key: 'upd.strict', newKey: 'x' });
    expectEnvelope(renamed, 400, 'invalid_request');
    expect(renamed.body.error.message).toContain('newKey');
    // The failed updates changed nothing.
    const row = await findTemplate(t.service.ctx.db, org.organizationId, 'upd.strict');
    expect(row?.args_schema).toEqual(takeoffSchema);

    expectEnvelope(await update({ key: 'no.such.template', description: 'x' }), 404, 'not_found');
    // Another organization's template is invisible.
    await create({ key: 'mine.only' });
    expectEnvelope(await update({ key: 'mine.only', description: 'x' }, otherOrg.key), 404, 'not_found');
  });

  it('needs commands:read to list and commands:write to create or update', async () => {
    const { apiKey: readOnly } = await org.keyWith(['commands:read']);
    const { apiKey: noCommands } = await org.keyWith(['datasets:read'], { user: 'member' });
    for (const response of [await create({ key: 'scoped' }, readOnly), await update({ key: 'nav.takeoff' }, readOnly)]) {
      expectEnvelope(response, 403, 'insufficient_scope');
      expect(response.body.error.message).toContain('commands:write');
    }
    const denied = await list(noCommands);
    expectEnvelope(denied, 403, 'insufficient_scope');
    expect(denied.body.error.message).toContain('commands:read');
    expect((await list(readOnly)).status).toBe(200);
  });

  it('findTemplate and validateArgs give command create what it needs', async () => {
    await create({ key: 'nav.goto', argsSchema: takeoffSchema });
    const template = await findTemplate(t.service.ctx.db, org.organizationId, 'nav.goto');
    expect(template?.key).toBe('nav.goto');
    expect(validateArgs(template!, { altitude: 30 })).toEqual([]);
    expect(validateArgs(template!, { altitude: 300, yaw: 1 })).toEqual([
      { field: 'args.altitude', message: expect.stringMatching(/120/) },
      { field: 'args.yaw', message: 'is not an argument of this template' },
    ]);
    expect(await findTemplate(t.service.ctx.db, otherOrg.organizationId, 'nav.goto')).toBeUndefined();
    expect(await findTemplate(t.service.ctx.db, org.organizationId, 'NAV.GOTO')).toBeUndefined();
  });
});
