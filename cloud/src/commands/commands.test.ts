import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { writeCommandWebhooksEnabled } from './settings.ts';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';
import { generateAckToken } from '@sortie/contracts';
import { sha256HexSync } from '../crypto/node-crypto.ts';
import { mintAckToken, SPENT_TOKEN_KEPT_MS } from './ack-tokens.ts';
import { sweepTimedOut } from './sweeper.ts';
import { expectEnvelope } from '../testing/expect-envelope.ts';

let t: TestService;
let org: TestOrg;
let experimentId: string;
let datasetId: string;

async function addEndpoint(o: TestOrg, url = 'https://receiver.example/hook') {
  const id = crypto.randomUUID();
  await t.service.ctx.db
    .insertInto('webhook_endpoints')
    .values({ id, organization_id: o.organizationId, label: 'test', url, secret_ciphertext: 'unused-here', updated_at: new Date() })
    .execute();
  return id;
}

async function newDataset(o: TestOrg) {
  const exp = await t.call('POST', '/api/experiments/create', { key: o.key, body: { name: 'cmd test' } });
  const reg = await t.call('POST', '/api/streams/register', {
    key: o.key,
    body: { experimentId: exp.body.id, datasetName: `ds-${crypto.randomUUID()}`, channels: [{ name: 'x1' }] },
  });
  return { experimentId: exp.body.id as string, datasetId: reg.body.datasetId as string };
}

async function create(body: Record<string, unknown> = {}, key = org.key) {
  return t.call('POST', '/api/commands/create', {
    key,
    body: { experimentId, datasetId, commandText: 'ARM_MOTORS', args: { force: false }, relTime: 10, category: 'flight', ...body },
  });
}

async function arm(ttlSeconds = 600) {
  const r = await t.call('POST', '/api/datasets/arm', { key: org.key, body: { datasetId, ttlSeconds } });
  expect(r.status).toBe(200);
  return r;
}

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg();
  ({ experimentId, datasetId } = await newDataset(org));
  await addEndpoint(org);
});
afterAll(() => t?.stop());
beforeEach(async () => {
  await writeCommandWebhooksEnabled(t.service.ctx.db, true, new Date());
});

describe('create and list', () => {
  it('logs a command with every record field and sends nothing', async () => {
    const r = await create({ clientToken: `tok-${crypto.randomUUID()}` });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      commandText: 'ARM_MOTORS',
      args: { force: false },
      relTime: 10,
      category: 'flight',
      status: 'logged',
      issuedByName: '',
      issuedByEmail: '',
      queuedAt: null,
      ackDeadlineAt: null,
      deliveryAttempts: 0,
      duplicate: false,
    });
    const row = await t.service.ctx.db.selectFrom('commands').selectAll().where('id', '=', r.body.id).executeTakeFirstOrThrow();
    expect(row.issued_by_key_id).not.toBeNull();
    const jobs = await t.service.ctx.db.selectFrom('delivery_jobs').selectAll().where('command_id', '=', r.body.id).execute();
    expect(jobs).toHaveLength(0);
  });

  it('returns the row already written for a repeated clientToken, also under concurrency', async () => {
    const token = `tok-${crypto.randomUUID()}`;
    const results = await Promise.all(Array.from({ length: 10 }, () => create({ clientToken: token })));
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 200 && r.body.duplicate === true)).toHaveLength(9);
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
    const rows = await t.service.ctx.db.selectFrom('commands').select('id').where('client_token', '=', token).execute();
    expect(rows).toHaveLength(1);
  });

  it('lists by relTime, not by issue order, and includes retracted commands', async () => {
    const ds = await newDataset(org);
    const make = (relTime: number) =>
      t.call('POST', '/api/commands/create', { key: org.key, body: { ...ds, commandText: `C${relTime}`, args: {}, relTime } });
    const late = await make(30);
    await make(-5);
    await make(12.5);
    await t.call('POST', '/api/commands/retract', { key: org.key, body: { commandId: late.body.id, reason: 'typo' } });
    const list = await t.call('GET', `/api/commands/list?experimentId=${ds.experimentId}&datasetId=${ds.datasetId}`, { key: org.key });
    expect(list.status).toBe(200);
    expect(list.body.map((c: any) => c.relTime)).toEqual([-5, 12.5, 30]);
    expect(list.body[2].retractedAt).not.toBeNull();
    expect(list.body[2].retractedReason).toBe('typo');
  });

  it('400 for missing ids, 403 without the scope, 404 for another organization', async () => {
    const missing = await t.call('POST', '/api/commands/create', { key: org.key, body: { commandText: 'X', relTime: 1 } });
    expectEnvelope(missing, 400, 'invalid_request');
    expect(missing.body.error.details.map((d: any) => d.field)).toEqual(expect.arrayContaining(['experimentId', 'datasetId']));
    const listMissing = await t.call('GET', '/api/commands/list', { key: org.key });
    expectEnvelope(listMissing, 400, 'invalid_request');

    const readOnly = (await org.keyWith(['commands:read'])).apiKey;
    expectEnvelope(await create({}, readOnly), 403, 'insufficient_scope');
    const writeOnly = (await org.keyWith(['commands:write'])).apiKey;
    const denied = await t.call('GET', `/api/commands/list?experimentId=${experimentId}&datasetId=${datasetId}`, { key: writeOnly });
    expectEnvelope(denied, 403, 'insufficient_scope');
    expect(denied.body.error.message).toContain('commands:read');

    const other = await t.createOrg('Other');
    expectEnvelope(await create({}, other.key), 404, 'not_found');
    const mine = await create();
    const theirs = await t.call('POST', '/api/commands/dispatch', { key: other.key, body: { commandId: mine.body.id, ackTimeoutSeconds: 30 } });
    expectEnvelope(theirs, 404, 'not_found');
  });
});

describe('templates at create', () => {
  it('validates args against the template schema and takes its category', async () => {
    const tpl = await t.call('POST', '/api/commands/templates/create', {
      key: org.key,
      body: {
        key: 'takeoff',
        category: 'flight',
        destructive: true,
        argsSchema: { type: 'object', properties: { altitude: { type: 'number', minimum: 1 } }, required: ['altitude'] },
      },
    });
    expect(tpl.status).toBe(201);
    const bad = await create({ templateKey: 'takeoff', category: '', args: { altitude: 0 } });
    expectEnvelope(bad, 400, 'invalid_request');
    expect(bad.body.error.details[0].field).toBe('args.altitude');
    const good = await create({ templateKey: 'takeoff', category: '', args: { altitude: 20 } });
    expect(good.status).toBe(201);
    expect(good.body).toMatchObject({ templateKey: 'takeoff', category: 'flight' });
    const unknown = await create({ templateKey: 'nope' });
    expectEnvelope(unknown, 400, 'invalid_request');
    expect(unknown.body.error.details[0].field).toBe('templateKey');
  });
});

describe('arming', () => {
  it('arms with an expiry that the controllable clock runs out', async () => {
    const ds = await newDataset(org);
    const r = await t.call('POST', '/api/datasets/arm', { key: org.key, body: { datasetId: ds.datasetId, ttlSeconds: 60, reason: 'test card 4' } });
    expect(r.body).toMatchObject({ armed: true, reason: 'test card 4' });
    expect(r.body.armedBy.keyId).toBeTruthy();
    t.clock.advance(59_000);
    expect((await t.call('GET', `/api/datasets/arming?datasetId=${ds.datasetId}`, { key: org.key })).body.armed).toBe(true);
    t.clock.advance(2_000);
    expect((await t.call('GET', `/api/datasets/arming?datasetId=${ds.datasetId}`, { key: org.key })).body.armed).toBe(false);
  });

  it('disarms, and bounds the ttl', async () => {
    const ds = await newDataset(org);
    await t.call('POST', '/api/datasets/arm', { key: org.key, body: { datasetId: ds.datasetId, ttlSeconds: 60 } });
    const d = await t.call('POST', '/api/datasets/disarm', { key: org.key, body: { datasetId: ds.datasetId } });
    expect(d.body).toMatchObject({ armed: false });
    expect(d.body.disarmedAt).not.toBeNull();
    const tooLong = await t.call('POST', '/api/datasets/arm', { key: org.key, body: { datasetId: ds.datasetId, ttlSeconds: 10 ** 6 } });
    expectEnvelope(tooLong, 400, 'invalid_request');
    expect(tooLong.body.error.details[0].field).toBe('ttlSeconds');
  });
});

describe('dispatch', () => {
  it('checks the preconditions in the spec order, leaving the command logged', async () => {
    const ds = await newDataset(org);
    const other = await t.createOrg('No endpoints');
    const dsOther = await newDataset(other);
    const cmd = await t.call('POST', '/api/commands/create', { key: other.key, body: { ...dsOther, commandText: 'X', relTime: 0 } });
    const dispatch = () => t.call('POST', '/api/commands/dispatch', { key: other.key, body: { commandId: cmd.body.id, ackTimeoutSeconds: 30 } });

    // (1) kill switch off beats everything else
    await writeCommandWebhooksEnabled(t.service.ctx.db, false, new Date());
    let r = await dispatch();
    expectEnvelope(r, 409, 'conflict');
    expect(r.body.error.message).toMatch(/disabled on this deployment/);
    await writeCommandWebhooksEnabled(t.service.ctx.db, true, new Date());
    // (2) not armed
    r = await dispatch();
    expectEnvelope(r, 409, 'conflict');
    expect(r.body.error.message).toMatch(/not armed/);
    // expired arming
    await t.call('POST', '/api/datasets/arm', { key: other.key, body: { datasetId: dsOther.datasetId, ttlSeconds: 10 } });
    t.clock.advance(11_000);
    r = await dispatch();
    expect(r.body.error.message).toMatch(/arming expired/);
    // (3) no endpoint
    await t.call('POST', '/api/datasets/arm', { key: other.key, body: { datasetId: dsOther.datasetId, ttlSeconds: 600 } });
    r = await dispatch();
    expectEnvelope(r, 409, 'conflict');
    expect(r.body.error.message).toMatch(/no enabled webhook endpoint/);
    const row = await t.service.ctx.db.selectFrom('commands').selectAll().where('id', '=', cmd.body.id).executeTakeFirstOrThrow();
    expect(row.status).toBe('logged');
    expect(row.queued_at).toBeNull();
    expect(ds).toBeTruthy();
  });

  it('queues, sets the deadline, writes one job per enabled endpoint and lists them', async () => {
    const second = await addEndpoint(org, 'https://second.example/hook');
    const disabled = await addEndpoint(org, 'https://disabled.example/hook');
    await t.service.ctx.db.updateTable('webhook_endpoints').set({ disabled_at: new Date() }).where('id', '=', disabled).execute();
    await arm();
    const cmd = await create();
    const r = await t.call('POST', '/api/commands/dispatch', { key: org.key, body: { commandId: cmd.body.id, ackTimeoutSeconds: 45 } });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('queued');
    expect(new Date(r.body.ackDeadline).getTime()).toBe(t.clock.now().getTime() + 45_000);
    expect(r.body.endpoints.map((e: any) => e.id)).toContain(second);
    expect(r.body.endpoints.map((e: any) => e.id)).not.toContain(disabled);
    const jobs = await t.service.ctx.db.selectFrom('delivery_jobs').selectAll().where('command_id', '=', cmd.body.id).execute();
    expect(jobs).toHaveLength(r.body.endpoints.length);
    await t.service.ctx.db.updateTable('webhook_endpoints').set({ deleted_at: new Date() }).where('id', '=', second).execute();
  });

  it('of 20 racing dispatches exactly one wins and one set of jobs is written', async () => {
    await arm();
    const cmd = await create();
    const results = await Promise.all(
      Array.from({ length: 20 }, () => t.call('POST', '/api/commands/dispatch', { key: org.key, body: { commandId: cmd.body.id, ackTimeoutSeconds: 30 } })),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    const losers = results.filter((r) => r.status === 409);
    expect(losers).toHaveLength(19);
    for (const l of losers) expect(l.body.error.message).toMatch(/already queued/);
    const endpoints = results.find((r) => r.status === 200)!.body.endpoints.length;
    const jobs = await t.service.ctx.db.selectFrom('delivery_jobs').selectAll().where('command_id', '=', cmd.body.id).execute();
    expect(jobs).toHaveLength(endpoints);
  });

  it('refuses a retracted command and an out-of-range timeout', async () => {
    await arm();
    const cmd = await create();
    const bad = await t.call('POST', '/api/commands/dispatch', { key: org.key, body: { commandId: cmd.body.id, ackTimeoutSeconds: 0 } });
    expectEnvelope(bad, 400, 'invalid_request');
    expect(bad.body.error.details[0].field).toBe('ackTimeoutSeconds');
    const big = await t.call('POST', '/api/commands/dispatch', { key: org.key, body: { commandId: cmd.body.id, ackTimeoutSeconds: 3601 } });
    expectEnvelope(big, 400, 'invalid_request');
    await t.call('POST', '/api/commands/retract', { key: org.key, body: { commandId: cmd.body.id } });
    const r = await t.call('POST', '/api/commands/dispatch', { key: org.key, body: { commandId: cmd.body.id, ackTimeoutSeconds: 30 } });
    expectEnvelope(r, 409, 'conflict');
    expect(r.body.error.message).toMatch(/retracted/);
  });
});

describe('ack', () => {
  async function queued(timeout = 60) {
    await arm();
    const cmd = await create();
    const d = await t.call('POST', '/api/commands/dispatch', { key: org.key, body: { commandId: cmd.body.id, ackTimeoutSeconds: timeout } });
    expect(d.status).toBe(200);
    const deadline = new Date(d.body.ackDeadline);
    return { id: cmd.body.id as string, deadline, token: () => mintAckToken(t.service.ctx.secretKey, cmd.body.id, deadline) };
  }
  const ack = (commandId: string, token: string, state = 'acked', extra: Record<string, unknown> = {}) =>
    t.call('POST', '/api/commands/ack', {
      headers: { authorization: `Bearer ${token}` },
      body: { commandId, state, vehicleTime: '2026-11-22T10:00:01Z', detail: 'done', ...extra },
    });

  it('records the first valid ack, and the same token again is 404', async () => {
    const c = await queued();
    const token = c.token();
    const r = await ack(c.id, token, 'acked', { payload: { altitude: 12 } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ commandId: c.id, status: 'acked', duplicate: false });
    const list = await t.call('GET', `/api/commands/list?experimentId=${experimentId}&datasetId=${datasetId}`, { key: org.key });
    const rec = list.body.find((x: any) => x.id === c.id);
    expect(rec).toMatchObject({ status: 'acked', statusDetail: 'done', vehicleTime: '2026-11-22T10:00:01.000Z', ackPayload: { altitude: 12 } });
    expect(rec.ackedAt).not.toBeNull();
    expectEnvelope(await ack(c.id, token), 404, 'not_found');
  });

  it('another token reporting the same state is a duplicate; the opposite state is 409', async () => {
    const c = await queued();
    await ack(c.id, c.token(), 'nacked');
    const again = await ack(c.id, c.token(), 'nacked');
    expect(again.status).toBe(200);
    expect(again.body.duplicate).toBe(true);
    expectEnvelope(await ack(c.id, c.token(), 'acked'), 409, 'conflict');
  });

  it('wrong, missing, other-command and expired tokens are 404, never 401', async () => {
    const c = await queued(30);
    const d = await queued(30);
    expectEnvelope(await ack(c.id, 'cak_' + 'A'.repeat(43)), 404, 'not_found');
    expectEnvelope(await ack(c.id, 'garbage'), 404, 'not_found');
    const noHeader = await t.call('POST', '/api/commands/ack', { body: { commandId: c.id, state: 'acked' } });
    expectEnvelope(noHeader, 404, 'not_found');
    expectEnvelope(await ack(c.id, d.token()), 404, 'not_found');
    const late = c.token();
    t.clock.advance(31_000);
    expectEnvelope(await ack(c.id, late), 404, 'not_found');
  });

  it('nothing is stored for a token until it is spent; then its hash, once', async () => {
    const c = await queued();
    const tokens = () => t.service.ctx.db.selectFrom('ack_tokens').select(['token_hash', 'used_at']).where('command_id', '=', c.id).execute();
    expect(await tokens()).toEqual([]);
    const token = c.token();
    expect((await ack(c.id, token)).status).toBe(200);
    const stored = await tokens();
    expect(stored).toEqual([{ token_hash: sha256HexSync(token), used_at: expect.any(Date) }]);
  });

  it('a token made for another deadline of the same command is 404', async () => {
    const c = await queued();
    expectEnvelope(await ack(c.id, mintAckToken(t.service.ctx.secretKey, c.id, new Date(c.deadline.getTime() + 1000))), 404, 'not_found');
    expect((await ack(c.id, c.token())).status).toBe(200);
  });

  // Deliveries made before tokens proved themselves carry tokens stored as hashes; a receiver may ack
  // them after the upgrade, until their deadline.
  it('a token stored as a hash when it was minted is accepted once, until its deadline', async () => {
    const c = await queued();
    const stored = () => {
      const token = generateAckToken();
      return t.service.ctx.db
        .insertInto('ack_tokens')
        .values({ token_hash: sha256HexSync(token), command_id: c.id, expires_at: c.deadline })
        .execute()
        .then(() => token);
    };
    const token = await stored();
    expect((await ack(c.id, token)).status).toBe(200);
    expectEnvelope(await ack(c.id, token), 404, 'not_found');
    const late = await stored();
    t.clock.advance(61_000);
    expectEnvelope(await ack(c.id, late), 404, 'not_found');
  });

  it('the sweeper deletes token rows an hour past their deadline, and only those', async () => {
    const c = await queued();
    const now = t.clock.now().getTime();
    const rows = { old: now - SPENT_TOKEN_KEPT_MS - 1000, recent: now - SPENT_TOKEN_KEPT_MS + 60_000, live: now + 60_000 };
    for (const [hash, at] of Object.entries(rows)) {
      await t.service.ctx.db.insertInto('ack_tokens').values({ token_hash: `${c.id}-${hash}`, command_id: c.id, expires_at: new Date(at), used_at: t.clock.now() }).execute();
    }
    await sweepTimedOut(t.service.ctx);
    const left = await t.service.ctx.db.selectFrom('ack_tokens').select('token_hash').where('command_id', '=', c.id).orderBy('token_hash').execute();
    expect(left.map((r) => r.token_hash)).toEqual([`${c.id}-live`, `${c.id}-recent`]);
  });

  it('more than 10 attempts per command per minute are 429 with Retry-After', async () => {
    const c = await queued();
    for (let i = 0; i < 10; i++) expect((await ack(c.id, 'cak_' + 'B'.repeat(43))).status).toBe(404);
    const limited = await ack(c.id, c.token());
    expectEnvelope(limited, 429, 'rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    t.clock.advance(61_000);
    // The deadline (60 s) has passed too, so the token is now expired: back to 404, not 429.
    expect((await ack(c.id, c.token())).status).toBe(404);
  });
});

describe('timeouts', () => {
  it('moves queued commands past their deadline to timed_out, once, with racing sweepers', async () => {
    await arm();
    const cmd = await create();
    await t.call('POST', '/api/commands/dispatch', { key: org.key, body: { commandId: cmd.body.id, ackTimeoutSeconds: 5 } });
    expect(await sweepTimedOut(t.service.ctx)).not.toContain(cmd.body.id);
    t.clock.advance(5_001);
    const swept = await Promise.all([sweepTimedOut(t.service.ctx), sweepTimedOut(t.service.ctx), sweepTimedOut(t.service.ctx)]);
    expect(swept.flat().filter((id) => id === cmd.body.id)).toHaveLength(1);
    const row = await t.service.ctx.db.selectFrom('commands').select('status').where('id', '=', cmd.body.id).executeTakeFirstOrThrow();
    expect(row.status).toBe('timed_out');
  });
});
