import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../testing/test-service.ts';
import { decodeFrame, frameTime } from './decode.ts';
import { fixtureFrames, type FixtureFrame } from './fixture-frames.ts';
import { moveLegacyNarrowSamples } from './legacy-samples.ts';
import { px4LikeStream } from './px4-fixture.ts';
import { queryNarrow } from './query.ts';
import { readStoredSamples, type StoredSample } from './stored-samples.ts';
import { signalInfo } from './signal-info.ts';

// The former shape, exactly as migration 0005 made it: one row per decoded field, signals by id.
const LEGACY_SIGNALS_DDL = sql`create table narrow_signals (id integer generated always as identity primary key, name text not null unique)`;
const LEGACY_DDL = sql`
  create table narrow_samples (
    dataset_id uuid not null, frame_seq bigint not null, time timestamptz not null, received_at timestamptz not null,
    boot_us bigint, value_double double precision, signal_id integer not null, boot_session integer not null,
    time_source text not null check (time_source in ('gps', 'boot', 'agent')), value_text text, value_bytes bytea,
    primary key (dataset_id, signal_id, frame_seq))`;

const EXACT = BigInt(Number.MAX_SAFE_INTEGER);

/** What the former writer stored for `frames` (frame_seq from 1, one boot session), as the samples a reader returns. */
function legacySamples(frames: readonly FixtureFrame[]): StoredSample[] {
  const out: StoredSample[] = [];
  frames.forEach((f, i) => {
    const time = frameTime(f.frame);
    const unix = time?.unixUs !== undefined && time.unixUs <= EXACT ? Number(time.unixUs) : undefined;
    const boot = time?.bootUs === undefined ? null : Number(time.bootUs);
    const [timeSource, timeUs] = unix !== undefined ? ['gps', unix] : boot !== null ? ['boot', boot] : ['agent', f.receivedUs];
    for (const s of decodeFrame(f.frame)) {
      // A reader returns a number JSON cannot hold (NaN, ±Infinity) as its text, as PostgreSQL's to_jsonb does.
      const value =
        typeof s.value === 'number' ? (Number.isFinite(s.value) ? s.value : String(s.value))
        : typeof s.value === 'bigint' ? (s.value > EXACT || s.value < -EXACT ? s.value.toString() : Number(s.value))
        : typeof s.value === 'string' ? s.value
        : `\\x${Buffer.from(s.value).toString('hex')}`;
      out.push({ frameSeq: i + 1, signal: s.signal, timeUs: timeUs as number, timeSource: timeSource as string, bootUs: boot, bootSession: 1, receivedUs: f.receivedUs, value });
    }
  });
  return out.sort((a, b) => a.frameSeq - b.frameSeq || (a.signal < b.signal ? -1 : a.signal > b.signal ? 1 : 0));
}

/** Write `samples` in the former shape, with the dataset's narrow_datasets and boot session rows as the former writer left them. */
async function writeLegacy(t: TestService, datasetId: string, samples: readonly StoredSample[], frames: readonly FixtureFrame[]): Promise<void> {
  const db = t.service.ctx.db;
  const names = [...new Set(samples.map((s) => s.signal))];
  await sql`insert into narrow_signals (name) select unnest(${`{${names.map((n) => `"${n}"`).join(',')}}`}::text[]) on conflict (name) do nothing`.execute(db);
  for (let i = 0; i < samples.length; i += 2000) {
    const chunk = samples.slice(i, i + 2000);
    // Each value in the column the former writer put it in: numbers as float8 text (NaN and ±Infinity
    // included), a 64-bit integer beyond 2^53 as a double and its exact text, char fields as text, raw payloads as bytes.
    const columns = (s: StoredSample) => {
      const v = s.value;
      const kind = signalInfo(s.signal)?.kind ?? 'bytes';
      if (kind === 'bytes') return { b: (v as string).slice(2) };
      const numeric = kind === 'double';
      if (numeric) return { d: String(v), ...(typeof v === 'string' && /^-?[0-9]+$/.test(v) && { t: v }) };
      return { t: v };
    };
    await sql`
      insert into narrow_samples (dataset_id, frame_seq, time, received_at, boot_us, value_double, signal_id, boot_session, time_source, value_text, value_bytes)
      select ${datasetId}::uuid, (r->>'frameSeq')::int8, timestamptz 'epoch' + (r->>'timeUs')::int8 * interval '1 microsecond',
             timestamptz 'epoch' + (r->>'receivedUs')::int8 * interval '1 microsecond', (r->>'bootUs')::int8,
             (r->>'d')::numeric::float8, n.id, 1, r->>'timeSource', r->>'t', decode(r->>'b', 'hex')
      from jsonb_array_elements(${JSON.stringify(chunk.map((s) => ({ ...s, ...columns(s) })))}::jsonb) as r
      join narrow_signals n on n.name = r->>'signal'`.execute(db);
  }
  await sql`insert into narrow_datasets (dataset_id, sysid, max_frame_seq, version) values (${datasetId}::uuid, ${frames[0]!.frame.sysid}::int4, ${frames.length}::int8, 1)`.execute(db);
  const received = frames.map((f) => f.receivedUs);
  await sql`insert into narrow_boot_sessions (dataset_id, boot_session, compid, first_frame_seq, last_frame_seq, first_received_us, last_received_us)
    values (${datasetId}::uuid, 1, ${frames[0]!.frame.compid}::int4, 1, ${frames.length}::int8, ${Math.min(...received)}::int8, ${Math.max(...received)}::int8)`.execute(db);
}

for (const embedded of [false, true]) {
  describe(`start-up move of the former one-row-per-field shape (${embedded ? 'PGlite' : 'PostgreSQL'})`, () => {
    let t: TestService;
    afterAll(() => t?.stop());

    it('moves every sample into the message tables exactly, then drops narrow_samples', { timeout: 120_000 }, async () => {
      t = await startTestService({ embedded });
      const db = t.service.ctx.db;
      // The service's own start-up already dropped the (empty) former table; the test brings it back with data.
      expect((await sql<{ t: string | null }>`select to_regclass('narrow_samples')::text as t`.execute(db)).rows[0]!.t).toBeNull();
      await LEGACY_SIGNALS_DDL.execute(db);
      await LEGACY_DDL.execute(db);
      const org = await t.createOrg();
      const experimentId = (await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'legacy' } })).body.id;
      const captures = [
        { name: 'px4-mixed-v1v2-junk.bin', frames: fixtureFrames('px4-mixed-v1v2-junk.bin') },
        { name: 'ardupilot-v2.mavlink', frames: fixtureFrames('ardupilot-v2.mavlink') },
        { name: 'PX4-like', frames: px4LikeStream().frames },
        ...(embedded ? [] : [{ name: 'arduplane-sitl-vtol.tlog', frames: fixtureFrames('arduplane-sitl-vtol.tlog') }]),
      ];
      const written: Array<{ datasetId: string; expected: StoredSample[] }> = [];
      for (const capture of captures) {
        const registered = await t.call('POST', '/api/streams/register', {
          key: org.key,
          body: { experimentId, datasetName: capture.name, storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' },
        });
        const datasetId = registered.body.datasetId;
        const expected = legacySamples(capture.frames);
        await writeLegacy(t, datasetId, expected, capture.frames);
        written.push({ datasetId, expected });
      }

      const moved = await moveLegacyNarrowSamples(db);
      expect(moved).toEqual({
        datasets: captures.length,
        frames: captures.reduce((n, c) => n + c.frames.length, 0),
        samples: written.reduce((n, w) => n + w.expected.length, 0),
      });
      for (const w of written) expect(await readStoredSamples(db, w.datasetId)).toEqual(w.expected);
      const gone = await sql<{ s: string | null; n: string | null }>`select to_regclass('narrow_samples')::text as s, to_regclass('narrow_signals')::text as n`.execute(db);
      expect(gone.rows[0]).toEqual({ s: null, n: null });
      // Query, the channel list and NOT_FOUND work on the moved data.
      const [roll] = await queryNarrow(db, { datasetId: written[1]!.datasetId, channelIds: ['mavlink.ATTITUDE.roll'], from: undefined, to: undefined, maxPoints: 1_000_000 });
      expect(roll!.samples.t).toHaveLength(written[1]!.expected.filter((s) => s.signal === 'mavlink.ATTITUDE.roll').length);
      const channels = await t.call('GET', `/api/datasets/channels?datasetId=${written[0]!.datasetId}`, { key: org.key });
      expect(channels.body.map((c: { name: string }) => c.name).sort()).toEqual([...new Set(written[0]!.expected.map((s) => s.signal))].sort());
      // A second start-up finds nothing to move.
      expect(await moveLegacyNarrowSamples(db)).toEqual({ datasets: 0, frames: 0, samples: 0 });
    });
  });
}

describe('start-up move by several processes at once (PostgreSQL)', () => {
  let t: TestService;
  afterAll(() => t?.stop());

  // Replicas start together: one may move the rows and drop the table between another's first look and its
  // turn on the lock. Every start-up must still succeed and the rows be moved once.
  it('lets every concurrent start-up succeed whichever one moves and drops the table', { timeout: 120_000 }, async () => {
    t = await startTestService({ embedded: false });
    const db = t.service.ctx.db;
    const org = await t.createOrg();
    const experimentId = (await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'legacy-race' } })).body.id;
    const frames = fixtureFrames('ardupilot-v2.mavlink').slice(0, 40);
    const expected = legacySamples(frames);
    for (let round = 0; round < 12; round++) {
      await LEGACY_SIGNALS_DDL.execute(db);
      await LEGACY_DDL.execute(db);
      const registered = await t.call('POST', '/api/streams/register', {
        key: org.key,
        body: { experimentId, datasetName: `race-${round}`, storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' },
      });
      await writeLegacy(t, registered.body.datasetId, expected, frames);
      // The second start-up begins a little later each round, so its first look falls before, during and after the first's move.
      const second = new Promise((resolve) => setTimeout(resolve, round * 3)).then(() => moveLegacyNarrowSamples(db));
      const results = await Promise.all([moveLegacyNarrowSamples(db), second]);
      expect(results.reduce((n, r) => n + r.samples, 0)).toBe(expected.length);
      expect(await readStoredSamples(db, registered.body.datasetId)).toEqual(expected);
      expect((await sql<{ t: string | null }>`select to_regclass('narrow_samples')::text as t`.execute(db)).rows[0]!.t).toBeNull();
    }
  });
});
