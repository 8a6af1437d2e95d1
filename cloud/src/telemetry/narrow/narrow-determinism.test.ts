import fc from 'fast-check';
import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatasetRow } from '../../db/schema.ts';
import { startTestService, type TestOrg, type TestService } from '../../testing/test-service.ts';
import type { TelemetrySink } from '../ingest/sink.ts';
import { fixtureFrames, fixturePoints, framePoint, type FixtureFrame, type PointInit } from './fixture-frames.ts';
import { replayFrames } from './long-flight.ts';
import { openNarrowSink } from './narrow-sink.ts';
import { px4CaptureFrames, px4LikeStream } from './px4-fixture.ts';
import { queryNarrow } from './query.ts';
import { readStoredSamples } from './stored-samples.ts';
import { samplesOf } from '../series/series.ts';
import { create } from '@bufbuild/protobuf';
import { TelemetryPointSchema } from '@sortie/contracts';

// The same frames give the same stored rows and the same aligned series whatever the batch split, the
// redeliveries, or the agent restarts in between (docs/decisions/0006-narrow-mavlink.md, boot sessions).

let t: TestService;
let org: TestOrg;
let experimentId: string;

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg();
  experimentId = (await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'determinism' } })).body.id;
});
afterAll(() => t?.stop());

let registered = 0;
async function newDataset(): Promise<DatasetRow> {
  const response = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId, datasetName: `d${registered++}`, storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' },
  });
  expect(response.status).toBeLessThan(300);
  return t.service.ctx.db.selectFrom('datasets').selectAll().where('id', '=', response.body.datasetId).executeTakeFirstOrThrow();
}

/**
 * One upload step: send points [from, to) through connection `via` (0–2: up to three writers of the
 * dataset, each with its own cache, interleaved as an agent's reconnects leave them), first restarting
 * that connection (a fresh sink, no cached sessions) when `restart`. A `pipelined` step is staged and
 * flushed while that connection's last write still runs, as StreamSubmit does (its write prepared from
 * what the last one will leave). A step that only sends again frames already stored runs beside the
 * other connections' writes, so a write prepared that way often finds the dataset moved on and must be
 * redone; every other step waits for them, so frames are first stored in frame_seq order (a frame
 * first stored after later ones joins the session its frame_seq range holds: decision 0006).
 */
interface Step {
  from: number;
  to: number;
  restart: boolean;
  via?: number;
  pipelined?: boolean;
}

async function upload(points: readonly PointInit[], steps: readonly Step[]): Promise<DatasetRow> {
  const dataset = await newDataset();
  const messages = points.map((p) => create(TelemetryPointSchema, p));
  const sinks: Array<TelemetrySink | undefined> = [];
  const running: Array<Promise<unknown> | undefined> = [];
  /** Every frame before this one is stored. */
  let stored = 0;
  for (const step of steps) {
    const via = step.via ?? 0;
    if (step.to > stored) await Promise.all(running.filter((_, u) => u !== via));
    if (!step.pipelined || step.restart) await running[via];
    if (!sinks[via] || step.restart) sinks[via] = await openNarrowSink(t.service.ctx, dataset);
    await sinks[via]!.stage({ points: messages.slice(step.from, step.to) }, (i) => `points[${i}]`);
    const before = running[via];
    running[via] = sinks[via]!.flush().then(() => {
      if (step.from <= stored) stored = Math.max(stored, step.to);
    });
    await before;
  }
  await Promise.all(running);
  return dataset;
}

const SIGNALS = ['mavlink.ATTITUDE.roll', 'mavlink.ATTITUDE.time_boot_ms', 'mavlink.HEARTBEAT.custom_mode'];

/** Everything a client can see of the upload: every stored sample, the sessions, and aligned series. */
async function snapshot(dataset: DatasetRow): Promise<string> {
  const db = t.service.ctx.db;
  const samples = await readStoredSamples(db, dataset.id);
  const sessions = await sql`
    select boot_session, compid, first_frame_seq::text, gps_offset_us::text, agent_offset_us::text, first_received_us::text, last_received_us::text
    from narrow_boot_sessions where dataset_id = ${dataset.id}::uuid order by boot_session`.execute(db);
  // Per signal, so one a capture lacks (NOT_FOUND) still compares as that error.
  const series = await Promise.all(
    SIGNALS.map((name) =>
      queryNarrow(db, { datasetId: dataset.id, channelIds: [name], from: undefined, to: undefined, maxPoints: 1_000_000 }).catch((error: Error) => error.message),
    ),
  );
  return JSON.stringify({ samples, sessions: sessions.rows, series });
}

/**
 * Random plans: cut the frames into in-order batches; after some batches redeliver a random range of
 * what was already sent (an agent resending after a lost ack), and restart the agent before some.
 */
function plans(n: number, hot: readonly number[]) {
  // Cuts anywhere, and often within a few frames of where a decision falls (a reboot and its confirmations).
  const anywhere = fc.integer({ min: 1, max: n - 1 });
  const near = hot.length === 0 ? anywhere : fc.tuple(fc.constantFrom(...hot), fc.integer({ min: -3, max: 4 })).map(([h, d]) => Math.min(n - 1, Math.max(1, h + d)));
  const cut = fc.uniqueArray(fc.oneof(anywhere, near), { maxLength: 12 }).map((cuts) => [0, ...cuts.sort((a, b) => a - b), n]);
  return fc
    .tuple(
      cut,
      fc.array(fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true }), fc.boolean(), fc.boolean(), fc.integer({ min: 0, max: 2 }), fc.boolean()), {
        minLength: 13,
        maxLength: 13,
      }),
    )
    .map(([bounds, extras]) => {
      const steps: Step[] = [];
      for (let i = 0; i + 1 < bounds.length; i++) {
        const [a, b, redeliver, restart, via, pipelined] = extras[i]!;
        steps.push({ from: bounds[i]!, to: bounds[i + 1]!, restart, via, pipelined });
        if (redeliver) {
          const end = bounds[i + 1]!;
          const x = Math.floor(a * end);
          const y = Math.floor(b * end);
          if (x !== y) steps.push({ from: Math.min(x, y), to: Math.max(x, y), restart: false, via: (via + 1) % 3 });
        }
      }
      return steps;
    });
}

const CASES: Array<{ name: string; frames: () => FixtureFrame[]; hot: () => number[]; runs: number }> = [
  { name: 'PX4-like stream with a reboot', frames: () => px4LikeStream().frames, hot: () => [px4LikeStream().rebootAt], runs: 15 },
  { name: 'real PX4 capture (node-mavlink example)', frames: () => px4CaptureFrames(), hot: () => [], runs: 8 },
  { name: 'ardupilot-v2.mavlink', frames: () => fixtureFrames('ardupilot-v2.mavlink'), hot: () => [], runs: 8 },
  { name: 'arduplane-sitl-vtol.tlog', frames: () => fixtureFrames('arduplane-sitl-vtol.tlog'), hot: () => [], runs: 3 },
];

// First in the file: the prepared shapes of a process are capped (narrow-writer.ts), and the property
// tests below make many datasets, each with shapes of its own.
describe('on PostgreSQL a stream\'s steady-state write runs prepared', () => {
  it('a stream runs one prepared statement, planned once per connection, whatever each batch\'s message mix', async () => {
    // A pool of one connection, so the prepared statements it lists are the ones the sink used.
    const ctx = t.service.ctx;
    const pool = new pg.Pool({ connectionString: (ctx.database.pool!.options as { connectionString: string }).connectionString, max: 1 });
    try {
      const sink = await openNarrowSink({ ...ctx, database: { ...ctx.database, pool } }, await newDataset());
      // Three passes over the same 3,000 frames as one continuous flight, in 500-frame batches whose
      // message mixes differ: the first pass meets every table and signal (the transaction), the next two
      // only append.
      const frames = fixtureFrames('arduplane-sitl-vtol.tlog').slice(0, 3000);
      const span = frames.at(-1)!.receivedUs - frames[0]!.receivedUs + 100_000;
      for (let pass = 0; pass < 3; pass++) {
        const points = replayFrames(frames, pass, span).map((f, i) => create(TelemetryPointSchema, framePoint(f.bytes, f.receivedUs, pass * 3000 + i + 1)));
        for (let i = 0; i < points.length; i += 500) {
          await sink.stage({ points: points.slice(i, i + 500) }, (j) => `points[${j}]`);
          await sink.flush();
        }
      }
      const mixes = new Set<string>();
      for (let i = 0; i < 3000; i += 500) mixes.add([...new Set(frames.slice(i, i + 500).map((f) => f.frame.msgid))].sort().join(','));
      expect(mixes.size).toBeGreaterThan(1);
      const prepared = await pool.query<{ name: string; runs: number }>(
        "select name, (generic_plans + custom_plans)::int as runs from pg_prepared_statements where name like 'sortie_narrow_%'",
      );
      // Every batch inserts into every table of the dataset (an empty array where it has no rows), so
      // one shape serves them all: named when seen the second time, then only executed. Passes 2 and 3
      // are twelve batches on the fast path; at most one of them is that shape's first sighting.
      expect(prepared.rows).toHaveLength(1);
      expect(prepared.rows[0]!.runs).toBeGreaterThanOrEqual(11);
    } finally {
      await pool.end();
    }
  });
});

describe('uploads of random splits and redeliveries store the same rows and answer the same series', () => {
  for (const c of CASES) {
    it(c.name, { timeout: 240_000 }, async () => {
      const points = fixturePoints(c.frames());
      const reference = await snapshot(await upload(points, [{ from: 0, to: points.length, restart: false }]));
      await fc.assert(
        fc.asyncProperty(plans(points.length, c.hot()), async (steps) => {
          expect(await snapshot(await upload(points, steps))).toBe(reference);
        }),
        { numRuns: c.runs, seed: 14 },
      );
    });
  }
});

describe('one session per real boot', () => {
  it('the PX4-like stream: HOME_POSITION\'s event time opens no session, the reboot opens one, every sample returned in order', async () => {
    const stream = px4LikeStream();
    const dataset = await upload(fixturePoints(stream.frames), [{ from: 0, to: stream.frames.length, restart: false }]);
    const samples = await readStoredSamples(t.service.ctx.db, dataset.id);
    for (const s of samples) expect(s.bootSession).toBe(s.frameSeq <= stream.rebootAt ? 1 : 2);
    // HOME_POSITION rows are on the receive time; time_usec stays a value of its signal.
    const home = samples.filter((s) => s.signal === 'mavlink.HOME_POSITION.time_usec');
    expect(home.length).toBeGreaterThan(0);
    expect(home.every((s) => s.timeSource === 'agent' && s.bootUs === null)).toBe(true);
    expect(new Set(home.filter((s) => s.bootSession === 1).map((s) => s.value))).toEqual(new Set([6_332_000]));

    const [roll] = await queryNarrow(t.service.ctx.db, { datasetId: dataset.id, channelIds: ['mavlink.ATTITUDE.roll'], from: undefined, to: undefined, maxPoints: 100_000 });
    expect(samplesOf(roll!.samples)).toHaveLength(stream.attitudes[0] + stream.attitudes[1]);
    expect(roll!.rawPoints).toBe(stream.attitudes[0] + stream.attitudes[1]);
    const times = samplesOf(roll!.samples).map((s) => s.t);
    for (let i = 1; i < times.length; i++) expect(times[i]!).toBeGreaterThan(times[i - 1]!);
    // Each boot is on the agent's clock: the first sample of each boot near when it was received.
    const firstAfter = stream.frames[stream.rebootAt]!.receivedUs;
    expect(Math.abs(times[0]! - stream.frames[0]!.receivedUs)).toBeLessThan(5_000);
    expect(Math.abs(times[stream.attitudes[0]]! - firstAfter)).toBeLessThan(5_000);
  });

  it('the real PX4 capture: one session, all 505 ATTITUDE.roll samples in order', async () => {
    const frames = px4CaptureFrames();
    const dataset = await upload(fixturePoints(frames), [{ from: 0, to: frames.length, restart: false }]);
    const sessions = await sql<{ n: number }>`select count(*)::int as n from narrow_boot_sessions where dataset_id = ${dataset.id}::uuid`.execute(t.service.ctx.db);
    expect(sessions.rows[0]!.n).toBe(1);
    const [roll] = await queryNarrow(t.service.ctx.db, { datasetId: dataset.id, channelIds: ['mavlink.ATTITUDE.roll'], from: undefined, to: undefined, maxPoints: 100_000 });
    expect(samplesOf(roll!.samples)).toHaveLength(505);
    const times = samplesOf(roll!.samples).map((s) => s.t);
    for (let i = 1; i < times.length; i++) expect(times[i]!).toBeGreaterThanOrEqual(times[i - 1]!);
  });

  for (const capture of ['arduplane-sitl-vtol.tlog', 'ardupilot-v2.mavlink', 'px4-mixed-v1v2-junk.bin']) {
    it(`${capture}: one session, every ATTITUDE.roll sample returned in aligned order`, async () => {
      const frames = fixtureFrames(capture);
      const dataset = await upload(fixturePoints(frames), [{ from: 0, to: frames.length, restart: false }]);
      const sessions = await sql<{ n: number }>`select count(*)::int as n from narrow_boot_sessions where dataset_id = ${dataset.id}::uuid`.execute(t.service.ctx.db);
      expect(sessions.rows[0]!.n).toBe(1);
      const [roll] = await queryNarrow(t.service.ctx.db, { datasetId: dataset.id, channelIds: ['mavlink.ATTITUDE.roll'], from: undefined, to: undefined, maxPoints: 100_000 });
      expect(samplesOf(roll!.samples)).toHaveLength(frames.filter((f) => f.frame.msgid === 30).length);
      const times = samplesOf(roll!.samples).map((x) => x.t);
      for (let i = 1; i < times.length; i++) expect(times[i]!).toBeGreaterThanOrEqual(times[i - 1]!);
    });
  }

  it('a series reduced to a budget is made of stored samples, and keeps the extremes', async () => {
    const frames = fixtureFrames('arduplane-sitl-vtol.tlog');
    const dataset = await upload(fixturePoints(frames), [{ from: 0, to: frames.length, restart: false }]);
    const read = (maxPoints: number) =>
      queryNarrow(t.service.ctx.db, { datasetId: dataset.id, channelIds: ['mavlink.ATTITUDE.roll'], from: undefined, to: undefined, maxPoints });
    const [all] = await read(1_000_000);
    const [reduced] = await read(200);
    expect(reduced!.rawPoints).toBe(samplesOf(all!.samples).length);
    expect(samplesOf(reduced!.samples).length).toBeLessThanOrEqual(200);
    const stored = new Set(samplesOf(all!.samples).map((x) => `${x.t}:${x.v}`));
    for (const x of samplesOf(reduced!.samples)) expect(stored.has(`${x.t}:${x.v}`)).toBe(true);
    const values = samplesOf(all!.samples).map((x) => x.v);
    expect(samplesOf(reduced!.samples).some((x) => x.v === Math.min(...values))).toBe(true);
    expect(samplesOf(reduced!.samples).some((x) => x.v === Math.max(...values))).toBe(true);
  });

  it('two samples at one instant are both returned', async () => {
    // The same ATTITUDE sent twice (two frame_seq, one time_boot_ms): both are stored samples.
    const frames = px4LikeStream().frames.slice(0, 20);
    const doubled = [...frames, frames[0]!];
    const dataset = await upload(fixturePoints(doubled), [{ from: 0, to: doubled.length, restart: false }]);
    const attitudes = doubled.filter((f) => f.frame.msgid === 30).length;
    const [roll] = await queryNarrow(t.service.ctx.db, { datasetId: dataset.id, channelIds: ['mavlink.ATTITUDE.roll'], from: undefined, to: undefined, maxPoints: attitudes });
    expect(samplesOf(roll!.samples)).toHaveLength(attitudes);
    expect(samplesOf(roll!.samples)[0]!.t).toBe(samplesOf(roll!.samples)[1]!.t);
  });
});

describe('the same on PGlite (embedded: text parameters, no binary arrays)', () => {
  let saved: { t: TestService; org: TestOrg; experimentId: string };
  beforeAll(async () => {
    saved = { t, org, experimentId };
    t = await startTestService({ embedded: true });
    org = await t.createOrg();
    experimentId = (await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'determinism' } })).body.id;
  });
  afterAll(async () => {
    await t?.stop();
    ({ t, org, experimentId } = saved);
  });

  it('PX4-like stream with a reboot', { timeout: 240_000 }, async () => {
    const stream = px4LikeStream();
    const points = fixturePoints(stream.frames);
    const reference = await snapshot(await upload(points, [{ from: 0, to: points.length, restart: false }]));
    await fc.assert(
      fc.asyncProperty(plans(points.length, [stream.rebootAt]), async (steps) => {
        expect(await snapshot(await upload(points, steps))).toBe(reference);
      }),
      { numRuns: 6, seed: 14 },
    );
  });
});
