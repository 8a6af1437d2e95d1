import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectEnvelope } from '../testing/expect-envelope.ts';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';

let t: TestService;
let org: TestOrg;
let experimentId: string;

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg();
  const experiment = await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'wide limit' } });
  experimentId = experiment.body.id;
});
afterAll(() => t?.stop());

const register = (from: number, count: number) =>
  t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId, datasetName: 'very-wide', channels: Array.from({ length: count }, (_, i) => ({ name: `c${from + i}` })) },
  });

describe("a wide dataset at PostgreSQL's column limit", () => {
  it('widens up to 1,599 channels, then refuses with 409 naming the limit before any DDL', async () => {
    expect((await register(0, 1000)).status).toBe(201);
    const full = await register(1000, 599);
    expect(full.status).toBe(200);
    expect(full.body.channels).toHaveLength(1599);

    const over = await register(1599, 1);
    expectEnvelope(over, 409, 'conflict');
    expect(over.body.error.message).toMatch(/at most 1599 .*1600 columns per table/);
    expect(over.body.error.details).toEqual([{ field: 'channels', message: 'at most 1599 channels per wide dataset' }]);

    // Nothing of the refused call stayed: the same list again is still a no-op.
    const again = await register(1000, 599);
    expect(again.status).toBe(200);
    expect(again.body.addedColumns).toEqual([]);
    expect(again.body.channels).toHaveLength(1599);
  });
});
