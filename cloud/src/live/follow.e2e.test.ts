import { createSortieClient, SortieApiError, type FollowAnswer } from '@sortie/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { liveFeeds } from '../telemetry/follow.ts';
import { follow } from './follow.ts';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';

// Follow on the real service (real PostgreSQL, the in-process live bus), over Connect on the HTTP port
// with the typed client, as the console and the CLI use it. What each test appends is committed
// through the public API; what the follower sees is read back from storage.

let t: TestService;
let org: TestOrg;
let experimentId: string;
let datasetId: string;
const BASE = Date.parse('2026-11-27T10:00:00Z');

async function append(fromS: number, toS: number, hz: number, value: (s: number) => number = Math.sin) {
  const rows = [];
  for (let i = Math.round(fromS * hz); i < Math.round(toS * hz); i++) {
    const s = i / hz;
    rows.push({ timestamp: new Date(BASE + s * 1000).toISOString(), values: { roll: value(s), pitch: -value(s) } });
  }
  const r = await t.call('POST', '/api/datasets/append', { key: org.key, body: { experimentId, datasetId, rows } });
  expect(r.status).toBe(200);
}

/** Reads updates from a follow stream into a list, until stopped. */
function collect(stream: AsyncIterable<FollowAnswer>) {
  const updates: FollowAnswer[] = [];
  let failure: unknown;
  const done = (async () => {
    try {
      for await (const u of stream) updates.push(u);
    } catch (error) {
      failure = error;
    }
  })();
  return { updates, done, get failure() { return failure; } };
}

async function until<T>(what: string, probe: () => T | undefined, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const found = probe();
    if (found !== undefined && found !== false) return found;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg();
  experimentId = (await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'live' } })).body.id;
  datasetId = (await t.call('POST', '/api/streams/register', { key: org.key, body: { experimentId, datasetName: 'stand', channels: [{ name: 'roll' }, { name: 'pitch' }] } })).body.datasetId;
  await append(0, 30, 50);
}, 60_000);
afterAll(async () => {
  await t?.stop();
});

const client = () => createSortieClient({ baseUrl: t.url, apiKey: org.key });

describe('Follow', () => {
  it('opens with the window\'s downsampled series, then carries each committed batch within the budget', async () => {
    const abort = new AbortController();
    const s = collect(client().telemetry.follow({ datasetId, channelIds: ['0', '1'], windowMs: 10_000, maxPointsPerWindow: 90 }, { signal: abort.signal }));
    const first = await until('the opening update', () => s.updates[0]);
    expect(first.reset).toBe(true);
    expect(first.series.map((x) => x.channelId)).toEqual(['0', '1']);
    // The last 10 s of 30 s at 50 Hz: 500 samples, downsampled to at most 90.
    expect(first.series[0]!.rawPoints).toBe(501);
    expect(first.series[0]!.points.length).toBeLessThanOrEqual(90);
    expect(Date.parse(first.head!)).toBe(BASE + 29_980);
    expect(Date.parse(first.series[0]!.points[0]!.timestamp!)).toBeGreaterThanOrEqual(BASE + 19_980);

    // 20 s more, in 1 s batches as a stream commits them.
    for (let sec = 30; sec < 50; sec++) await append(sec, sec + 1, 50);
    await until('the last batch', () => s.updates.some((u) => u.head && Date.parse(u.head) === BASE + 49_980) || undefined);
    abort.abort();
    await s.done;
    expect(s.failure).toBeUndefined();
    const later = s.updates.slice(1);
    expect(later.every((u) => !u.reset)).toBe(true);
    const points = later.flatMap((u) => u.series[0]!.points.map((p) => Date.parse(p.timestamp!)));
    // Every batch's samples, in time order, nothing from the opening window again.
    expect(points[0]).toBeGreaterThan(BASE + 29_980);
    for (let i = 1; i < points.length; i++) expect(points[i]).toBeGreaterThan(points[i - 1]!);
    // The budget holds over any 10 s of what was sent, and every raw sample is accounted for.
    for (const p of points) expect(points.filter((q) => q >= p && q < p + 10_000).length).toBeLessThanOrEqual(90);
    expect(later.reduce((n, u) => n + u.series[0]!.rawPoints, 0)).toBe(1000);
    // The extremes of each slice survive: the series' maximum over the 20 s is among the samples.
    const values = later.flatMap((u) => u.series[0]!.points.map((p) => p.value));
    expect(Math.max(...values)).toBeCloseTo(1, 2);
  });

  it('carries events as they are stored and command status as it changes', async () => {
    const abort = new AbortController();
    const s = collect(client().telemetry.follow({ datasetId, channelIds: [] }, { signal: abort.signal }));
    const first = await until('the opening update', () => s.updates[0]);
    expect(first.series).toEqual([]);
    const posted = await t.call('POST', '/api/datasets/events', {
      key: org.key,
      body: { experimentId, datasetId, events: [{ timestamp: new Date(BASE + 40_000).toISOString(), kind: 'LINK_LOSS', message: 'radio', data: { rssi: -97 } }] },
    });
    expect(posted.status).toBe(201);
    const event = await until('the event', () => s.updates.flatMap((u) => u.events).find((e) => e.kind === 'LINK_LOSS'));
    expect(event).toMatchObject({ id: posted.body.events[0].id, message: 'radio', data: { rssi: -97 } });
    expect(Date.parse(event.time!)).toBe(BASE + 40_000);

    const command = await t.call('POST', '/api/commands/create', { key: org.key, body: { experimentId, datasetId, commandText: 'ARM', relTime: 3 } });
    expect(command.status).toBe(201);
    const seen = await until('the logged command', () => s.updates.flatMap((u) => u.commands).find((c) => c.id === command.body.id));
    expect(seen).toMatchObject({ status: 'logged', commandText: 'ARM' });
    abort.abort();
    await s.done;
  });

  it('ends the server\'s side when the follower goes away: its feed closes', async () => {
    const abort = new AbortController();
    const s = collect(client().telemetry.follow({ datasetId, channelIds: ['0'] }, { signal: abort.signal }));
    await until('the opening update', () => s.updates[0]);
    const feeds = liveFeeds(t.service.ctx);
    expect(feeds.size).toBe(1);
    abort.abort();
    await s.done;
    await until('the feed to close', () => feeds.size === 0 || undefined);
  });

  it('a follower that stops reading is never buffered for: past a window\'s budget it is reset from storage', async () => {
    const abort = new AbortController();
    const stream = follow(t.service.ctx, { organizationId: org.organizationId, datasetId, experimentId: '', channelIds: ['0'], windowMs: 10_000, budget: 30, commands: false }, abort.signal);
    const opening = await stream.next();
    expect(opening.value).toMatchObject({ reset: true, dropped: 0 });
    // A minute of data while the reader takes nothing: far more than 30 samples per 10 s.
    for (let sec = 50; sec < 110; sec += 5) await append(sec, sec + 5, 50);
    await new Promise((r) => setTimeout(r, 300));
    const next = (await stream.next()).value!;
    expect(next.reset).toBe(true);
    expect(next.dropped).toBe(1);
    // The window afresh: the newest 10 s, within the budget.
    expect(next.head).toBe(BASE * 1000 + 109_980_000);
    expect(next.series[0]!.samples.t.length).toBeLessThanOrEqual(30);
    expect(next.series[0]!.samples.t[0]).toBeGreaterThanOrEqual(BASE * 1000 + 99_980_000);
    abort.abort();
    await stream.return(undefined);
  });

  it('ends every stream UNAVAILABLE when the service shuts down, so clients follow again elsewhere', async () => {
    const other = await startTestService();
    try {
      const o = await other.createOrg();
      const exp = (await other.call('POST', '/api/experiments/create', { key: o.key, body: { name: 'x' } })).body.id;
      const ds = (await other.call('POST', '/api/streams/register', { key: o.key, body: { experimentId: exp, datasetName: 'stand', channels: [{ name: 'thrust' }] } })).body.datasetId;
      const s = collect(createSortieClient({ baseUrl: other.url, apiKey: o.key }).telemetry.follow({ datasetId: ds, channelIds: ['0'] }));
      await until('the opening update', () => s.updates[0]);
      const stopping = other.stop();
      await s.done;
      expect(s.failure).toBeInstanceOf(SortieApiError);
      expect(s.failure).toMatchObject({ code: 'unavailable', status: 503 });
      await stopping;
    } finally {
      await other.stop().catch(() => {});
    }
  });

  it('answers a channel the dataset lacks as Query does, in the envelope\'s code', async () => {
    const stream = client().telemetry.follow({ datasetId, channelIds: ['7'] });
    const error = await (async () => {
      try {
        for await (const _ of stream) return undefined;
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(SortieApiError);
    expect(error).toMatchObject({ code: 'not_found', status: 404 });
    expect((error as Error).message).toContain('channel_ids[0]');
  });

  it('refuses a window out of range, naming the field', async () => {
    const error = await (async () => {
      try {
        for await (const _ of client().telemetry.follow({ datasetId, channelIds: ['0'], windowMs: 10 })) return undefined;
      } catch (e) {
        return e;
      }
    })();
    expect(error).toMatchObject({ code: 'invalid_request' });
    expect((error as Error).message).toContain('window_ms');
  });

  it('needs telemetry:read', async () => {
    const { apiKey } = await org.keyWith(['datasets:read']);
    const error = await (async () => {
      try {
        for await (const _ of createSortieClient({ baseUrl: t.url, apiKey }).telemetry.follow({ datasetId, channelIds: ['0'] })) return undefined;
      } catch (e) {
        return e;
      }
    })();
    expect(error).toMatchObject({ code: 'insufficient_scope' });
  });
});
