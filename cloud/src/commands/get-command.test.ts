import { CommandRecordSchema } from '@sortie/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detailFields, expectEnvelope } from '../testing/expect-envelope.ts';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';

// GET /api/commands/get: one command by id, for following its status without knowing its dataset.

let t: TestService;
let org: TestOrg;
let other: TestOrg;

async function newDataset(o: TestOrg) {
  const exp = await t.call('POST', '/api/experiments/create', { key: o.key, body: { name: 'get test' } });
  const reg = await t.call('POST', '/api/streams/register', {
    key: o.key,
    body: { experimentId: exp.body.id, datasetName: `ds-${crypto.randomUUID()}`, channels: [{ name: 'x1' }] },
  });
  return { experimentId: exp.body.id as string, datasetId: reg.body.datasetId as string };
}

async function create(o: TestOrg, ds: { experimentId: string; datasetId: string }, commandText: string, relTime: number) {
  const r = await t.call('POST', '/api/commands/create', {
    key: o.key,
    body: { ...ds, commandText, args: { altitude: 30 }, relTime, category: 'flight', description: 'climb' },
  });
  expect(r.status).toBe(201);
  return r.body.id as string;
}

const get = (commandId: string, key = org.key) => t.call('GET', `/api/commands/get?commandId=${encodeURIComponent(commandId)}`, { key });

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg();
  other = await t.createOrg('Other');
});
afterAll(() => t?.stop());

describe('GET /api/commands/get', () => {
  it("answers the command's record exactly as the dataset's list has it, among several datasets", async () => {
    const first = await newDataset(org);
    const second = await newDataset(org);
    await create(org, first, 'TAKEOFF', 1);
    const id = await create(org, second, 'CLIMB', 5);
    await create(org, second, 'LAND', 9);

    const r = await get(id);
    expect(r.status).toBe(200);
    expect(CommandRecordSchema.strict().parse(r.body)).toEqual(r.body);
    const list = await t.call('GET', `/api/commands/list?experimentId=${second.experimentId}&datasetId=${second.datasetId}`, { key: org.key });
    expect(r.body).toEqual(list.body.find((c: { id: string }) => c.id === id));
    expect(r.body).toMatchObject({ id, ...second, commandText: 'CLIMB', args: { altitude: 30 }, relTime: 5, status: 'logged', retractedAt: null });
  });

  it('follows a change of the command: a retracted one is still answered, with retractedAt set', async () => {
    const id = await create(org, await newDataset(org), 'HOVER', 2);
    const retracted = await t.call('POST', '/api/commands/retract', { key: org.key, body: { commandId: id, reason: 'wrong altitude' } });
    expect(retracted.status).toBe(200);
    const r = await get(id);
    expect(r.status).toBe(200);
    expect(r.body).toEqual(retracted.body);
    expect(r.body.retractedReason).toBe('wrong altitude');
    expect(r.body.retractedAt).not.toBeNull();
  });

  it("another organization's command is 404 not_found, the same answer as an id that does not exist", async () => {
    const mine = await create(org, await newDataset(org), 'MINE', 1);
    const theirs = await create(other, await newDataset(other), 'THEIRS', 1);

    const crossed = await get(mine, other.key);
    expectEnvelope(crossed, 404, 'not_found');
    const crossedBack = await get(theirs, org.key);
    expectEnvelope(crossedBack, 404, 'not_found');
    const missingId = crypto.randomUUID();
    const missing = await get(missingId);
    expectEnvelope(missing, 404, 'not_found');
    // Nothing in the answer tells "someone else's" from "nobody's" but the id the caller sent.
    expect(crossed.body.error.message).toBe(`no command ${mine}`);
    expect(missing.body.error.message).toBe(`no command ${missingId}`);
    expect(crossed.body.error.details).toEqual(missing.body.error.details);

    // Each organization still reads its own.
    expect((await get(mine, org.key)).body.commandText).toBe('MINE');
    expect((await get(theirs, other.key)).body.commandText).toBe('THEIRS');
  });

  it('400 naming commandId for a missing or malformed id; 401 without a key; 403 without commands:read', async () => {
    const absent = await t.call('GET', '/api/commands/get', { key: org.key });
    expectEnvelope(absent, 400, 'invalid_request');
    expect(detailFields(absent)).toEqual(['commandId']);
    const malformed = await get('not-a-uuid');
    expectEnvelope(malformed, 400, 'invalid_request');
    expect(detailFields(malformed)).toEqual(['commandId']);

    const id = await create(org, await newDataset(org), 'SCOPED', 1);
    expectEnvelope(await t.call('GET', `/api/commands/get?commandId=${id}`), 401, 'unauthorized');
    const writeOnly = (await org.keyWith(['commands:write'])).apiKey;
    const denied = await get(id, writeOnly);
    expectEnvelope(denied, 403, 'insufficient_scope');
    expect(denied.body.error.message).toContain('commands:read');
    const readOnly = (await org.keyWith(['commands:read'])).apiKey;
    expect((await get(id, readOnly)).status).toBe(200);
  });
});
