import { createClient, type Client } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import type { MessageInitShape } from '@bufbuild/protobuf';
import { McapStreamReader } from '@mcap/core';
import { TelemetryService, type QueryRequestSchema, type StreamSubmitRequestSchema } from '@sortie/contracts';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { wideTableName } from '../datasets/wide-table.ts';
import { NARROW_COMPRESS_AFTER_FRAMES } from './narrow/narrow-timescale.ts';
import { WIDE_COMPRESS_AFTER } from '../db/timescale.ts';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';
import { requireTimescaleServer, SKIP_TIMESCALE } from '../testing/timescale-server.ts';
import { fixtureFrames, framePoint, timestampOf, type PointInit } from './narrow/fixture-frames.ts';
import { loadMessageTables } from './narrow/message-tables.ts';

/**
 * The TimescaleDB path with every chunk compressed (compress_chunk), against a real TimescaleDB (the
 * server scripts/timescale-cluster.sh makes): Query (M4 and its LTTB reduction, windows served from
 * rollups, from raw rows and across chunk edges, every sample), events, channel lists, CSV and MCAP
 * export and the rollups answer exactly what they answered before compression; a redelivered batch
 * lands on compressed rows as duplicates; late rows inside compressed chunks are stored once and read
 * back exactly as a twin dataset that got every row in order and was never compressed; and the
 * compression settings and policies are the documented ones (docs/decisions/0007-timescale.md).
 */

type StreamMessage = MessageInitShape<typeof StreamSubmitRequestSchema>;
type QueryInit = MessageInitShape<typeof QueryRequestSchema>;

let t: TestService;
let org: TestOrg;
let client: Client<typeof TelemetryService>;
let experimentId: string;

const HOUR_US = 3_600_000_000;
/**
 * Wide: 8 noisy double channels at 5 Hz for 3.5 hours, starting on the hour four hours ago: four 1-hour
 * chunks, all younger than the policy's 7 days, so only the test compresses them (the policy's job
 * compresses older data as soon as it runs).
 */
const WIDE_T0_US = (Math.floor(Date.now() / 3_600_000) - 4) * HOUR_US;
const WIDE_ROWS = 63_000;
const WIDE_STEP_US = 200_000;
const CHANNELS = 8;
/** Rows (and frames) held back from the first write: the late data that later lands in compressed chunks. */
const lateRow = (i: number) => i % 97 === 5;
const lateFrame = (i: number) => i % 101 === 7;
/**
 * Narrow: the SITL flight's frames, frame_seq spread over three 1,000,000-frame_seq chunks; the newest
 * is less than the policy's 2,000,000 frame_seq ahead of the oldest chunk's end, so only the test compresses.
 */
const frameSeqOf = (i: number) => i + 1 + Math.floor(i / 8000) * 1_000_000;

function widePoints(indexes: readonly number[]): PointInit[] {
  const points: PointInit[] = [];
  for (const i of indexes) {
    const us = WIDE_T0_US + i * WIDE_STEP_US;
    for (let c = 0; c < CHANNELS; c++) {
      // Deterministic noise on a slow wave: what a sensor channel looks like to a compressor.
      const noise = Math.sin(i * 12.9898 + c * 78.233) * 43758.5453;
      const value = Math.sin(i / (500 + c * 37)) * (10 + c) + (noise - Math.floor(noise) - 0.5) * 0.1;
      points.push({ timestamp: timestampOf(us), channelId: String(c), type: { case: 'double', value } });
    }
  }
  return points;
}

const tlog = fixtureFrames('arduplane-sitl-vtol.tlog');
function framePoints(indexes: readonly number[]): PointInit[] {
  return indexes.map((i) => framePoint(tlog[i]!.frame.bytes, tlog[i]!.receivedUs, frameSeqOf(i)));
}

const range = (n: number, keep: (i: number) => boolean) => Array.from({ length: n }, (_, i) => i).filter(keep);

async function* streamOf(datasetId: string, points: readonly PointInit[], format: string, batch: number): AsyncGenerator<StreamMessage> {
  yield { message: { case: 'header', value: { experimentId, datasetId, format } } };
  for (let i = 0; i < points.length; i += batch) yield { message: { case: 'batch', value: { points: points.slice(i, i + batch) } } };
}

async function stream(datasetId: string, points: readonly PointInit[], format = '', batch = 4000) {
  const r = await client.streamSubmit(streamOf(datasetId, points, format, batch), { headers: { 'x-api-key': org.key } });
  return { written: Number(r.written), duplicates: Number(r.duplicates) };
}

async function register(name: string, narrow: boolean): Promise<string> {
  const body = narrow
    ? { experimentId, datasetName: name, storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' }
    : { experimentId, datasetName: name, channels: Array.from({ length: CHANNELS }, (_, c) => ({ name: `c${c}`, unit: 'V', dataType: 'double' })) };
  const response = await t.call('POST', '/api/streams/register', { key: org.key, body });
  expect(response.status).toBe(201);
  return response.body.datasetId;
}

const iso = (us: number) => new Date(us / 1000).toISOString();
const ts = (us: number) => timestampOf(us);

/** Query shapes: whole range (rollups; M4 then LTTB to an odd budget), raw windows, chunk edges, every sample, many channels. */
function wideQueries(): QueryInit[] {
  const all = Array.from({ length: CHANNELS }, (_, c) => String(c));
  const edge = WIDE_T0_US + HOUR_US;
  return [
    { channelIds: ['0'], maxPointsPerChannel: 2000 },
    { channelIds: ['3'], maxPointsPerChannel: 37 },
    { channelIds: all, maxPointsPerChannel: 500 },
    { channelIds: ['1', '5'], from: ts(edge - 2_000_000), to: ts(edge + 2_000_000), maxPointsPerChannel: 4000 },
    { channelIds: ['2'], from: ts(edge - 600_000_000), to: ts(edge + 600_000_000), maxPointsPerChannel: 300 },
    { channelIds: ['7'], from: ts(WIDE_T0_US + 2 * HOUR_US + 123_456), to: ts(WIDE_T0_US + 2 * HOUR_US + 61_000_000), maxPointsPerChannel: 100_000 },
    { channelIds: ['4'], from: ts(WIDE_T0_US + 1_000_000), to: ts(WIDE_T0_US + 3 * HOUR_US + 17_000_000), maxPointsPerChannel: 999 },
  ];
}

function narrowQueries(): QueryInit[] {
  return [
    { channelIds: ['mavlink.ATTITUDE.roll'], maxPointsPerChannel: 2000 },
    { channelIds: ['mavlink.ATTITUDE.pitch', 'mavlink.GLOBAL_POSITION_INT.relative_alt', 'mavlink.VFR_HUD.airspeed'], maxPointsPerChannel: 301 },
    { channelIds: ['mavlink.ATTITUDE.roll'], maxPointsPerChannel: 1_000_000 },
    { channelIds: ['mavlink.SYS_STATUS.voltage_battery'], maxPointsPerChannel: 41 },
  ];
}

async function query(datasetId: string, q: QueryInit) {
  const r = await client.query({ experimentId, datasetId, ...q }, { headers: { 'x-api-key': org.key } });
  return r.series.map((s) => ({ channelId: s.channelId, rawPoints: s.rawPoints, points: s.points.map((p) => [p.timestamp?.seconds, p.timestamp?.nanos, p.value]) }));
}

async function exported(datasetId: string, format: 'csv' | 'mcap'): Promise<unknown> {
  const response = await fetch(`${t.url}/api/datasets/export?datasetId=${datasetId}&format=${format}`, { headers: { 'x-api-key': org.key } });
  expect(response.status).toBe(200);
  if (format === 'csv') return response.text();
  const reader = new McapStreamReader();
  reader.append(new Uint8Array(await response.arrayBuffer()));
  const topics = new Map<number, string>();
  const messages: Array<[string, bigint, string]> = [];
  for (let record; (record = reader.nextRecord()); ) {
    if (record.type === 'Channel') topics.set(record.id, record.topic);
    if (record.type === 'Message') messages.push([topics.get(record.channelId)!, record.logTime, new TextDecoder().decode(record.data)]);
  }
  expect(reader.done()).toBe(true);
  return messages;
}

/**
 * The dataset's rollups as a count and a digest of every pack in key order: too many packs to fetch and
 * compare one by one in the test.
 */
async function rollups(datasetId: string) {
  const rows = await sql<{ rows: number; digest: string }>`
    select count(*)::int as rows, md5(string_agg(concat_ws(',', channel_group, width_ms, bucket, encode(data, 'hex')), ';' order by channel_group, width_ms, bucket)) as digest
    from telemetry_rollup_packs where dataset_id = ${datasetId}::uuid`.execute(t.service.ctx.db);
  return rows.rows[0]!;
}

/** JSON with bigints as strings: parts of a snapshot compare as text (a deep toEqual of 100,000 points takes seconds). */
const text = (value: unknown) => JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? v.toString() : v));

/**
 * Everything a client can read of a dataset, each part as text, with the ids that differ between twin
 * datasets left out.
 */
async function snapshot(datasetId: string, narrow: boolean) {
  const queries: string[] = [];
  for (const q of narrow ? narrowQueries() : wideQueries()) queries.push(text(await query(datasetId, q)));
  const withoutIds = (list: Array<Record<string, unknown>>) => list.map(({ id: _id, datasetId: _d, createdAt: _c, ...rest }) => rest);
  return {
    queries,
    channels: text(withoutIds((await t.call('GET', `/api/datasets/channels?datasetId=${datasetId}`, { key: org.key })).body)),
    events: text(withoutIds((await t.call('GET', `/api/datasets/events?datasetId=${datasetId}`, { key: org.key })).body)),
    csv: text(await exported(datasetId, 'csv')),
    mcap: text(await exported(datasetId, 'mcap')),
    rollups: text(await rollups(datasetId)),
  };
}

/** The dataset's hypertables: the wide table, or the narrow dataset's message tables. */
async function hypertablesOf(datasetId: string, narrow: boolean): Promise<string[]> {
  if (!narrow) return [wideTableName(datasetId)];
  return [...(await loadMessageTables(t.service.ctx.db, datasetId)).values()].map((m) => m.table);
}

async function chunkStates(tables: readonly string[]): Promise<{ chunks: number; compressed: number }> {
  const r = await sql<{ chunks: number; compressed: number }>`
    select count(*)::int as chunks, count(*) filter (where is_compressed)::int as compressed from timescaledb_information.chunks
    where hypertable_schema = current_schema() and hypertable_name = any(${tables}::text[])`.execute(t.service.ctx.db);
  return r.rows[0]!;
}

async function compressAll(tables: readonly string[]): Promise<void> {
  for (const table of tables) {
    await sql`select compress_chunk(c, if_not_compressed => true) from show_chunks(${`"${table}"`}::regclass) c`.execute(t.service.ctx.db);
  }
}

async function addEvents(datasetId: string, times: readonly number[]): Promise<void> {
  const events = times.map((us, i) => ({ timestamp: iso(us), kind: i % 2 ? 'LINK_REGAINED' : 'LINK_LOSS', message: `event ${i}`, data: { i } }));
  expect((await t.call('POST', '/api/datasets/events', { key: org.key, body: { experimentId, datasetId, events } })).status).toBe(201);
}

describe.skipIf(SKIP_TIMESCALE)('TimescaleDB: compressed chunks answer exactly as uncompressed ones', () => {
  const wide = { id: '', twin: '' };
  const narrow = { id: '', twin: '' };
  let before: { wide: Awaited<ReturnType<typeof snapshot>>; narrow: Awaited<ReturnType<typeof snapshot>> };

  beforeAll(async () => {
    const { adminUrl } = await requireTimescaleServer();
    t = await startTestService({ adminUrl });
    expect(t.service.ctx.database.timescale).toBe(true);
    org = await t.createOrg();
    client = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
    experimentId = (await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'compression' } })).body.id;

    // Each dataset gets everything but its late rows; each twin gets every row, in order, and is never compressed.
    wide.id = await register('wide', false);
    wide.twin = await register('wide-twin', false);
    expect(await stream(wide.id, widePoints(range(WIDE_ROWS, (i) => !lateRow(i))))).toMatchObject({ duplicates: 0 });
    expect(await stream(wide.twin, widePoints(range(WIDE_ROWS, () => true)))).toEqual({ written: WIDE_ROWS * CHANNELS, duplicates: 0 });
    narrow.id = await register('narrow', true);
    narrow.twin = await register('narrow-twin', true);
    expect(await stream(narrow.id, framePoints(range(tlog.length, (i) => !lateFrame(i))), 'mavlink-raw-v1', 500)).toMatchObject({ duplicates: 0 });
    expect(await stream(narrow.twin, framePoints(range(tlog.length, () => true)), 'mavlink-raw-v1', 500)).toEqual({ written: tlog.length, duplicates: 0 });
    for (const id of [wide.id, wide.twin]) await addEvents(id, [WIDE_T0_US + 5_000_000, WIDE_T0_US + HOUR_US + 1, WIDE_T0_US + 3 * HOUR_US]);
    const flight = tlog.map((f) => f.receivedUs);
    for (const id of [narrow.id, narrow.twin]) await addEvents(id, [flight[100]!, flight[12_000]!, flight[23_000]!]);
    before = { wide: await snapshot(wide.id, false), narrow: await snapshot(narrow.id, true) };
  }, 300_000);
  afterAll(() => t?.stop());

  it('the compression settings and policies are the documented ones', async () => {
    const wideTable = wideTableName(wide.id);
    const narrowTables = await hypertablesOf(narrow.id, true);
    expect(narrowTables.length).toBeGreaterThan(30);
    const settings = await sql<{ hypertable_name: string; attname: string; segmentby_column_index: number | null; orderby_column_index: number | null; orderby_asc: boolean }>`
      select hypertable_name, attname, segmentby_column_index, orderby_column_index, orderby_asc from timescaledb_information.compression_settings
      where hypertable_name = any(${[wideTable, ...narrowTables]}::text[]) order by hypertable_name, attname`.execute(t.service.ctx.db);
    const byTable = new Map(settings.rows.map((r) => [r.hypertable_name, r]));
    expect(byTable.get(wideTable)).toMatchObject({ attname: 'time', segmentby_column_index: null, orderby_column_index: 1, orderby_asc: true });
    for (const table of narrowTables) expect(byTable.get(table)).toMatchObject({ attname: 'frame_seq', segmentby_column_index: null, orderby_column_index: 1, orderby_asc: true });
    expect(settings.rows).toHaveLength(1 + narrowTables.length);

    const jobs = await sql<{ hypertable_name: string; compress_after: string }>`
      select hypertable_name, config->>'compress_after' as compress_after from timescaledb_information.jobs
      where proc_name = 'policy_compression' and hypertable_name = any(${[wideTable, ...narrowTables]}::text[])`.execute(t.service.ctx.db);
    const policies = new Map(jobs.rows.map((r) => [r.hypertable_name, r.compress_after]));
    expect(jobs.rows).toHaveLength(1 + narrowTables.length);
    expect(policies.get(wideTable)).toBe(`${WIDE_COMPRESS_AFTER.split(' ')[0]} days`);
    for (const table of narrowTables) expect(policies.get(table)).toBe(String(NARROW_COMPRESS_AFTER_FRAMES));
    // The chunk intervals: 1 hour of time, 1,000,000 frame_seq.
    const dims = await sql<{ hypertable_name: string; interval: string }>`
      select hypertable_name, coalesce(time_interval::text, integer_interval::text) as interval from timescaledb_information.dimensions
      where hypertable_name = any(${[wideTable, narrowTables[0]!]}::text[])`.execute(t.service.ctx.db);
    expect(new Map(dims.rows.map((r) => [r.hypertable_name, r.interval]))).toEqual(new Map([[wideTable, '01:00:00'], [narrowTables[0]!, '1000000']]));
  });

  it('with every chunk compressed, Query, events, channels, CSV and MCAP export and the rollups answer exactly as before', async () => {
    const tables = [...(await hypertablesOf(wide.id, false)), ...(await hypertablesOf(narrow.id, true))];
    const states = await chunkStates(tables);
    expect(states.compressed).toBe(0);
    await compressAll(tables);
    expect(await chunkStates(tables)).toEqual({ chunks: states.chunks, compressed: states.chunks });
    // Four time chunks for the wide table; frequent messages span all three frame_seq chunks.
    expect((await chunkStates(await hypertablesOf(wide.id, false))).chunks).toBe(4);
    const attitude = (await loadMessageTables(t.service.ctx.db, narrow.id)).get(30)!.table;
    expect((await chunkStates([attitude])).chunks).toBe(3);

    const after = { wide: await snapshot(wide.id, false), narrow: await snapshot(narrow.id, true) };
    expect(after.wide.queries).toEqual(before.wide.queries);
    expect(after.wide.rollups).toEqual(before.wide.rollups);
    expect(after.wide).toEqual(before.wide);
    expect(after.narrow.queries).toEqual(before.narrow.queries);
    expect(after.narrow).toEqual(before.narrow);
  }, 120_000);

  it('a redelivered batch lands on compressed rows as duplicates and changes nothing', async () => {
    const redelivered = range(3000, (i) => !lateRow(i));
    expect(await stream(wide.id, widePoints(redelivered))).toEqual({ written: 0, duplicates: redelivered.length * CHANNELS });
    const frames = range(3000, (i) => !lateFrame(i));
    expect(await stream(narrow.id, framePoints(frames), 'mavlink-raw-v1', 500)).toEqual({ written: 0, duplicates: frames.length });
    expect(await snapshot(wide.id, false)).toEqual(before.wide);
    expect(await snapshot(narrow.id, true)).toEqual(before.narrow);
  }, 120_000);

  it('late rows inside compressed chunks are stored once and read back as the twin that got every row in order, uncompressed', async () => {
    const late = range(WIDE_ROWS, lateRow);
    expect(await stream(wide.id, widePoints(late))).toEqual({ written: late.length * CHANNELS, duplicates: 0 });
    const lateFrames = range(tlog.length, lateFrame);
    expect(await stream(narrow.id, framePoints(lateFrames), 'mavlink-raw-v1', 500)).toEqual({ written: lateFrames.length, duplicates: 0 });
    // Sent again, they are duplicates.
    expect(await stream(wide.id, widePoints(late))).toEqual({ written: 0, duplicates: late.length * CHANNELS });
    expect(await stream(narrow.id, framePoints(lateFrames), 'mavlink-raw-v1', 500)).toEqual({ written: 0, duplicates: lateFrames.length });

    const [wideNow, wideTwin] = [await snapshot(wide.id, false), await snapshot(wide.twin, false)];
    expect(wideNow.queries).toEqual(wideTwin.queries);
    expect(wideNow.rollups).toEqual(wideTwin.rollups);
    expect(wideNow).toEqual(wideTwin);
    const [narrowNow, narrowTwin] = [await snapshot(narrow.id, true), await snapshot(narrow.twin, true)];
    expect(narrowNow.queries).toEqual(narrowTwin.queries);
    expect(narrowNow).toEqual(narrowTwin);
    // And the rows are one per time (wide) and per frame (narrow), whatever chunk state they sit in.
    const rows = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(wideTableName(wide.id))}`.execute(t.service.ctx.db);
    expect(rows.rows[0]!.n).toBe(WIDE_ROWS);
  }, 120_000);
});
