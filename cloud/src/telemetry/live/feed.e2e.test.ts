import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireDataset } from '../../datasets/queries.ts';
import { startTestService, type TestOrg, type TestService } from '../../testing/test-service.ts';
import type { Sample } from '../series/lttb.ts';
import { liveFeeds, READ_INTERVAL_MS, type FeedRows } from './feed.ts';
import { resolveFollowChannels } from './window.ts';

// A dataset's feed on the real service (real PostgreSQL, the in-process live bus), fed through the
// public append route: however fast batches are committed, its reads start READ_INTERVAL_MS apart, and
// together they hand over every committed sample once, in order.

let t: TestService;
let org: TestOrg;
let experimentId: string;
let datasetId: string;
const BASE = Date.parse('2026-11-27T10:00:00Z');

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg();
  experimentId = (await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'feed' } })).body.id;
  datasetId = (await t.call('POST', '/api/streams/register', { key: org.key, body: { experimentId, datasetName: 'rig', channels: [{ name: 'thrust' }] } })).body.datasetId;
}, 60_000);
afterAll(async () => {
  await t?.stop();
});

async function append(row: number, rows: number) {
  const body = { experimentId, datasetId, rows: Array.from({ length: rows }, (_, i) => ({ timestamp: new Date(BASE + (row + i) * 20).toISOString(), values: { thrust: row + i } })) };
  const r = await t.call('POST', '/api/datasets/append', { key: org.key, body });
  expect(r.status).toBe(200);
}

describe('DatasetFeed', () => {
  it('reads at most once per READ_INTERVAL_MS however often batches commit, and hands over every sample once', async () => {
    await append(0, 1);
    const ctx = t.service.ctx;
    const dataset = await requireDataset(ctx.db, org.organizationId, datasetId);
    const channels = await resolveFollowChannels(ctx.db, dataset, ['0']);
    const reads: Array<{ at: number; samples: Sample[] }> = [];
    const unsubscribe = await liveFeeds(ctx).subscribe(dataset, {
      channels,
      rows: (rows: FeedRows) => reads.push({ at: performance.now(), samples: rows.series.get('0') ?? [] }),
    });
    try {
      const placed = reads.length;
      const started = performance.now();
      // 40 commits back to back (one row each, as a 50 Hz rig sending every row).
      const committed = 40;
      for (let i = 1; i <= committed; i++) await append(i, 1);
      const deadline = Date.now() + 10_000;
      while (reads.flatMap((r) => r.samples).length < committed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));

      const got = reads.slice(placed);
      const values = got.flatMap((r) => r.samples.map((s) => s.v));
      expect(values).toEqual(Array.from({ length: committed }, (_, i) => i + 1));
      // Fewer reads than commits: reads start READ_INTERVAL_MS apart, so no more of them end in a span
      // than fit in it, plus the one that started before it (a timer may fire a millisecond early).
      expect(got.length).toBeLessThan(committed);
      expect(got.length).toBeLessThanOrEqual(Math.floor((got.at(-1)!.at - started) / (READ_INTERVAL_MS - 1)) + 1);
    } finally {
      unsubscribe();
    }
  });
});
