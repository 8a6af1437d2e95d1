import { createClient, type Client } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { McapIndexedReader, McapStreamReader, type TypedMcapRecord } from '@mcap/core';
import { TelemetryService, type QueryResponse } from '@sortie/contracts';
import { crcExtraOf, parseSignalName } from '@sortie/contracts/mavlink';
import { ARDUSUB_MANUAL_ARMED, ardusubDiveWithCompanion, buildFrame } from '@sortie/contracts/testing';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireDataset } from '../datasets/queries.ts';
import { wideTableName } from '../datasets/wide-table.ts';
import { openMavlinkMessages, openRawRows } from '../telemetry/raw-rows.ts';
import { fixtureFrames, fixturePoints, framePoint, type PointInit } from '../telemetry/narrow/fixture-frames.ts';
import { messageLayoutOf } from '../telemetry/narrow/decode.ts';
import { px4LikeStream } from '../telemetry/narrow/px4-fixture.ts';
import { signalInfo } from '../telemetry/narrow/signal-info.ts';
import { readStoredSamples } from '../telemetry/narrow/stored-samples.ts';
import { detailFields, expectEnvelope } from '../testing/expect-envelope.ts';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';

/**
 * GET /api/datasets/export against the real service on PostgreSQL: CSV equal to Query row for row (Query
 * asked for more points than there are, so it answers raw samples), MCAP read back with @mcap/core's
 * readers (message counts per channel and values equal to Query), wide and MAVLink datasets, paging.
 * MAVLink datasets are real captures (../shared/fixtures/mavlink): MCAP messages are compared with every
 * stored frame (text, arrays, unknown ids' payloads, v1 frames' absent extensions), CSV with text cells.
 */
let t: TestService;
let org: TestOrg;
let client: Client<typeof TelemetryService>;
let experimentId: string;
let wideId: string;
let narrowId: string;
/** The PX4 capture: v1 and v2 frames, and two message ids outside the dialect. */
let px4Id: string;
/** ArduPlane in SITL, 207 s of MAVLink v1 with GPS time: text (PARAM_VALUE, STATUSTEXT) and arrays. */
let sitlId: string;
/** A few hand-made STATUSTEXT frames whose text needs RFC 4180 quoting. */
let textId: string;

const T0_MS = Date.UTC(2026, 3, 1, 12, 0, 0);
const WIDE_ROWS = 25_000;

/** Row i of the wide dataset: some cells left empty, so columns are sparse as real data is. */
function wideRow(i: number) {
  const values: Record<string, unknown> = { count: i * 3 };
  if (i % 7 !== 0) values.alt = Math.sin(i / 100) * 100 + i / 3;
  if (i % 5 === 0) values.armed = i % 2 === 0;
  if (i % 1000 === 0) values.note = i === 0 ? 'takeoff, "cleared"' : `note ${i}`;
  // Microsecond timestamps (the third of a millisecond): the export keeps them.
  return { timestamp: new Date(T0_MS + i * 4).toISOString().replace('Z', `${String((i * 333) % 1000).padStart(3, '0')}Z`), values };
}

async function download(query: string, key = org.key): Promise<Response> {
  return fetch(`${t.url}/api/datasets/export?${query}`, { headers: { 'x-api-key': key } });
}

async function csvOf(query: string): Promise<{ header: string[]; rows: string[][] }> {
  const response = await download(query);
  expect(response.status, await response.clone().text().then((s) => s.slice(0, 300))).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
  const lines = (await response.text()).split('\n');
  expect(lines.pop()).toBe('');
  return { header: parseCsvLine(lines[0]!), rows: lines.slice(1).map(parseCsvLine) };
}

function parseCsvLine(line: string): string[] {
  const cells: string[] = [];
  let i = 0;
  while (i <= line.length) {
    if (line[i] === '"') {
      let value = '';
      i++;
      for (;;) {
        if (line[i] === '"' && line[i + 1] === '"') (value += '"'), (i += 2);
        else if (line[i] === '"') break;
        else value += line[i++];
      }
      cells.push(value);
      i += 2;
    } else {
      const end = line.indexOf(',', i);
      cells.push(line.slice(i, end < 0 ? line.length : end));
      i = end < 0 ? line.length + 1 : end + 1;
    }
  }
  return cells;
}

async function query(datasetId: string, channelIds: string[], range: { from?: number; to?: number } = {}): Promise<QueryResponse> {
  const ts = (us: number) => ({ seconds: BigInt(Math.floor(us / 1e6)), nanos: (us % 1e6) * 1000 });
  return client.query(
    { experimentId, datasetId, channelIds, maxPointsPerChannel: 100_000, ...(range.from !== undefined && { from: ts(range.from) }), ...(range.to !== undefined && { to: ts(range.to) }) },
    { headers: { 'x-api-key': org.key } },
  );
}

/** A Query series as [µs, value] pairs. */
const pairs = (series: QueryResponse['series'][number]) => series.points.map((p) => [Number(p.timestamp!.seconds) * 1e6 + p.timestamp!.nanos / 1000, p.value]);

/** A CSV column's non-empty cells as [µs, value] pairs, values read as Query reads them. */
function columnPairs(csv: { header: string[]; rows: string[][] }, name: string, read: (cell: string) => number = Number): [number, number][] {
  const index = csv.header.indexOf(name);
  expect(index, name).toBeGreaterThan(1);
  return csv.rows.filter((r) => r[index] !== '').map((r) => [Number(r[1]), read(r[index]!)]);
}

async function mcapRecords(query: string): Promise<{ bytes: Uint8Array; records: TypedMcapRecord[] }> {
  const response = await download(query);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('application/x-mcap');
  const bytes = new Uint8Array(await response.arrayBuffer());
  const reader = new McapStreamReader();
  reader.append(bytes);
  const records: TypedMcapRecord[] = [];
  for (let record; (record = reader.nextRecord()); ) records.push(record);
  expect(reader.done()).toBe(true);
  return { bytes, records };
}

function messagesByTopic(records: TypedMcapRecord[]): Map<string, { t: number; data: Record<string, unknown> }[]> {
  const topics = new Map<number, string>();
  const out = new Map<string, { t: number; data: Record<string, unknown> }[]>();
  for (const r of records) {
    if (r.type === 'Channel') topics.set(r.id, r.topic);
    if (r.type === 'Message') {
      const topic = topics.get(r.channelId)!;
      const list = out.get(topic) ?? [];
      list.push({ t: Number(r.logTime / 1000n), data: JSON.parse(new TextDecoder().decode(r.data)) });
      out.set(topic, list);
    }
  }
  return out;
}

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg();
  client = createClient(TelemetryService, createGrpcTransport({ baseUrl: t.service.grpcUrl }));
  experimentId = (await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'export' } })).body.id;
  const wide = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: {
      experimentId,
      datasetName: 'bench run 7',
      channels: [
        { name: 'alt', dataType: 'double', unit: 'm' },
        { name: 'count', dataType: 'int64' },
        { name: 'armed', dataType: 'bool' },
        { name: 'note', dataType: 'string' },
      ],
    },
  });
  wideId = wide.body.datasetId;
  for (let i = 0; i < WIDE_ROWS; i += 10_000) {
    const rows = Array.from({ length: Math.min(10_000, WIDE_ROWS - i) }, (_, k) => wideRow(i + k));
    const appended = await t.call('POST', '/api/datasets/append', { key: org.key, body: { experimentId, datasetId: wideId, rows } });
    expect(appended.status, JSON.stringify(appended.body).slice(0, 300)).toBe(200);
  }
  await t.call('POST', '/api/datasets/events', {
    key: org.key,
    body: { experimentId, datasetId: wideId, events: [{ timestamp: new Date(T0_MS + 1000).toISOString(), kind: 'TAKEOFF', message: 'wheels up' }] },
  });

  const narrow = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId, datasetName: 'drone', storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' },
  });
  narrowId = narrow.body.datasetId;
  await submitFrames(narrowId, fixturePoints(fixtureFrames('ardupilot-v2.mavlink')));
  px4Id = (await registerNarrow('px4')).datasetId;
  await submitFrames(px4Id, fixturePoints(fixtureFrames('px4-mixed-v1v2-junk.bin')));
  sitlId = (await registerNarrow('sitl')).datasetId;
  await submitFrames(sitlId, fixturePoints(fixtureFrames('arduplane-sitl-vtol.tlog')));
  textId = (await registerNarrow('status texts')).datasetId;
  await submitFrames(textId, [
    ...STATUS_TEXTS.map((text, i) => framePoint(statusText(i + 1, text), T0_MS * 1000 + i * 250_000, i + 1)),
    framePoint(edgeValues().attitude, T0_MS * 1000 + 2_000_000, STATUS_TEXTS.length + 1),
    framePoint(edgeValues().version, T0_MS * 1000 + 2_100_000, STATUS_TEXTS.length + 2),
  ]);
}, 120_000);

async function registerNarrow(datasetName: string): Promise<{ datasetId: string }> {
  const registered = await t.call('POST', '/api/streams/register', {
    key: org.key,
    body: { experimentId, datasetName, storageShape: 'narrow', codec: 'mavlink', dialect: 'ardupilotmega', format: 'mavlink-raw-v1' },
  });
  return registered.body;
}

async function submitFrames(datasetId: string, points: PointInit[]): Promise<void> {
  async function* messages() {
    yield { message: { case: 'header' as const, value: { experimentId, datasetId, format: 'mavlink-raw-v1' } } };
    for (let i = 0; i < points.length; i += 500) yield { message: { case: 'batch' as const, value: { points: points.slice(i, i + 500) } } };
  }
  await client.streamSubmit(messages(), { headers: { 'x-api-key': org.key } });
}

/** Texts a CSV must quote (a comma, a doubled quote, a leading space), and one it need not. */
const STATUS_TEXTS = ['arming, "checks" passed', ' leading space', 'plain', 'Ünïcode: 100°'];

/** STATUSTEXT (253): severity uint8, text char[50] as Latin-1 (MAVLink text is bytes; Sortie reads them as Latin-1). */
function statusText(severity: number, text: string): Uint8Array {
  const payload = new Uint8Array(51);
  payload[0] = severity;
  payload.set(Buffer.from(text, 'latin1'), 1);
  return buildFrame({ msgid: 253, payload, crcExtra: crcExtraOf(253)!, seq: severity });
}

/** A uint64 above 2^63 (stored as int8 two's complement) and above 2^53: exact only as decimal text. */
const BIG_UID = 2n ** 63n + 5n;

/**
 * Values JSON lacks or cannot hold exactly: ATTITUDE with roll NaN and pitch +Infinity; AUTOPILOT_VERSION
 * with a uid beyond 2^63 and a numeric array. Offsets from the decoder's layout of the pinned dialect.
 */
function edgeValues(): { attitude: Uint8Array; version: Uint8Array } {
  const at = (msgid: number, field: string) => messageLayoutOf(msgid)!.fields.find((f) => f.source === field)!.offset;
  const attitude = new DataView(new ArrayBuffer(28));
  attitude.setUint32(at(30, 'time_boot_ms'), 1000, true);
  attitude.setFloat32(at(30, 'roll'), NaN, true);
  attitude.setFloat32(at(30, 'pitch'), Infinity, true);
  attitude.setFloat32(at(30, 'yaw'), 0.5, true);
  const version = new DataView(new ArrayBuffer(60));
  version.setBigUint64(at(148, 'capabilities'), 12345n, true);
  version.setBigUint64(at(148, 'uid'), BIG_UID, true);
  for (let i = 0; i < 8; i++) version.setUint8(at(148, 'flight_custom_version') + i, i + 1);
  return {
    attitude: buildFrame({ msgid: 30, payload: new Uint8Array(attitude.buffer), crcExtra: crcExtraOf(30)!, seq: 10 }),
    version: buildFrame({ msgid: 148, payload: new Uint8Array(version.buffer), crcExtra: crcExtraOf(148)!, seq: 11 }),
  };
}

/**
 * Every stored frame of a narrow dataset as the MCAP message it should be: per message type, the frames'
 * JSON objects (numeric arrays as arrays, NaN as null, bytes as base64), independent of the export's SQL.
 */
async function storedMessages(datasetId: string): Promise<Map<string, Record<string, unknown>[]>> {
  const frames = new Map<number, { message: string; data: Record<string, unknown> }>();
  for (const sample of await readStoredSamples(t.service.ctx.db, datasetId)) {
    const parsed = parseSignalName(sample.signal)!;
    const frame = frames.get(sample.frameSeq) ?? { message: parsed.message, data: {} };
    frames.set(sample.frameSeq, frame);
    let value: unknown = sample.value;
    const info = signalInfo(sample.signal)!;
    if (info.kind === 'bytes') value = Buffer.from(String(value).slice(2), 'hex').toString('base64');
    else if ((info.dataType === 'float' || info.dataType === 'double') && typeof value === 'string') value = null; // NaN, ±Infinity
    if (parsed.index === undefined) frame.data[parsed.field] = value;
    else ((frame.data[parsed.field] ??= []) as unknown[])[parsed.index] = value;
  }
  const out = new Map<string, Record<string, unknown>[]>();
  for (const { message, data } of frames.values()) out.set(message, [...(out.get(message) ?? []), data]);
  return out;
}

/** Order-free comparison of two lists of messages: each as canonical JSON (sorted keys), sorted. */
function canonical(list: readonly Record<string, unknown>[]): string[] {
  const sortKeys = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(sortKeys) : v !== null && typeof v === 'object' ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, x]) => [k, sortKeys(x)])) : v;
  return list.map((m) => JSON.stringify(sortKeys(m))).sort();
}

/**
 * The JSON Schema subset Foxglove reads (packages/mcap-support parseJsonSchema): an object whose every
 * property has exactly one `type` of boolean, string (contentEncoding absent or base64), number,
 * integer, object (recursively) or array of one such item type; `anyOf`, type lists and null are
 * refused there, and Foxglove would not open the channel.
 */
function foxgloveProblems(schema: Record<string, unknown>, path = 'schema'): string[] {
  if (schema.type !== 'object') return [`${path}: type is ${JSON.stringify(schema.type)}, not "object"`];
  const problems: string[] = [];
  for (const [name, field] of Object.entries(schema.properties as Record<string, Record<string, unknown>>)) {
    const at = `${path}.${name}`;
    if (field.type === 'object') problems.push(...foxgloveProblems(field, at));
    else if (field.type === 'array') {
      const items = field.items as Record<string, unknown> | undefined;
      if (!items || !['boolean', 'string', 'number', 'integer'].includes(items.type as string) || items.contentEncoding !== undefined) problems.push(`${at}: items ${JSON.stringify(items)}`);
    } else if (!['boolean', 'string', 'number', 'integer'].includes(field.type as string)) problems.push(`${at}: type ${JSON.stringify(field.type)}`);
    else if (field.contentEncoding !== undefined && (field.type !== 'string' || field.contentEncoding !== 'base64')) problems.push(`${at}: contentEncoding ${JSON.stringify(field.contentEncoding)}`);
  }
  return problems;
}
afterAll(() => t?.stop());

describe('CSV', () => {
  it('a wide dataset: header, every raw row across pages, each column equal to Query', async () => {
    const csv = await csvOf(`datasetId=${wideId}&format=csv`);
    expect(csv.header).toEqual(['time', 'time_unix_us', 'alt', 'count', 'armed', 'note']);
    expect(csv.rows).toHaveLength(WIDE_ROWS);
    // time and time_unix_us name the same instant, to the microsecond, in order.
    for (const [i, row] of csv.rows.entries()) {
      const expected = wideRow(i).timestamp;
      expect(row[0]).toBe(expected);
      expect(Number(row[1])).toBe(Date.parse(expected) * 1000 + Number(expected.slice(23, 26)));
    }
    const answer = await query(wideId, ['0', '1', '2']);
    expect(columnPairs(csv, 'alt')).toEqual(pairs(answer.series[0]!));
    expect(columnPairs(csv, 'count')).toEqual(pairs(answer.series[1]!));
    expect(columnPairs(csv, 'armed', (cell) => (cell === 'true' ? 1 : cell === 'false' ? 0 : NaN))).toEqual(pairs(answer.series[2]!));
    expect(csv.rows[0]![5]).toBe('takeoff, "cleared"');
    expect(csv.rows.filter((r) => r[5] !== '')).toHaveLength(WIDE_ROWS / 1000);
  });

  it('chosen channels (by name or ch_N) over a window: the same rows Query counts', async () => {
    const start = wideRow(1000).timestamp;
    const end = wideRow(13_000).timestamp;
    const csv = await csvOf(`datasetId=${wideId}&experimentId=${experimentId}&format=csv&channel=ch_0&channel=armed&start=${start}&end=${end}`);
    expect(csv.header).toEqual(['time', 'time_unix_us', 'alt', 'armed']);
    // Rows where neither chosen channel has a value are not rows of this export.
    const expected = Array.from({ length: 12_000 }, (_, k) => wideRow(1000 + k)).filter((r) => 'alt' in r.values || 'armed' in r.values);
    expect(csv.rows.map((r) => r[0])).toEqual(expected.map((r) => r.timestamp));
    const us = (iso: string) => Date.parse(iso) * 1000 + Number(iso.slice(23, 26));
    const answer = await query(wideId, ['0', '2'], { from: us(start), to: us(end) });
    expect(columnPairs(csv, 'alt')).toEqual(pairs(answer.series[0]!));
    expect(answer.series[0]!.rawPoints).toBe(BigInt(columnPairs(csv, 'alt').length));
  });

  it('a MAVLink dataset on aligned time: every signal, numeric columns equal to Query, text and raw bytes as they are stored', async () => {
    const channels = await t.call('GET', `/api/datasets/channels?datasetId=${narrowId}&experimentId=${experimentId}`, { key: org.key });
    const all = (channels.body as { hypertableColName: string; dataType: string }[]).map((c) => c.hypertableColName);
    const numeric = (channels.body as { hypertableColName: string; dataType: string }[]).filter((c) => c.dataType !== 'string' && c.dataType !== 'bytes').map((c) => c.hypertableColName);
    const chosen = ['mavlink.ATTITUDE.roll', 'mavlink.VFR_HUD.alt', 'mavlink.GLOBAL_POSITION_INT.lat', 'mavlink.SYS_STATUS.voltage_battery'].filter((n) => numeric.includes(n));
    expect(chosen.length).toBeGreaterThanOrEqual(3);
    const csv = await csvOf(`datasetId=${narrowId}&format=csv&${chosen.map((c) => `channel=${c}`).join('&')}`);
    expect(csv.header).toEqual(['time', 'time_unix_us', ...chosen]);
    const answer = await query(narrowId, chosen);
    chosen.forEach((name, i) => {
      expect(columnPairs(csv, name), name).toEqual(pairs(answer.series[i]!));
      expect(answer.series[i]!.rawPoints, name).toBeGreaterThan(10n);
    });
    // Aligned time only moves forward.
    const times = csv.rows.map((r) => Number(r[1]));
    expect(times).toEqual([...times].sort((a, b) => a - b));

    // Every channel (none named): all of the dataset's signals, text ones included; numeric ones equal to Query.
    const every = await csvOf(`datasetId=${narrowId}&format=csv`);
    expect(every.header.slice(2)).toEqual([...all].sort());
    expect(all.length).toBeGreaterThan(numeric.length);
    for (let i = 0; i < numeric.length; i += 200) {
      const names = numeric.slice(i, i + 200);
      const series = await query(narrowId, names);
      names.forEach((name, k) => expect(columnPairs(every, name, (cell) => (cell === 'NaN' ? NaN : Number(cell))), name).toEqual(pairs(series.series[k]!)));
    }
    // A text column holds each stored text, once per frame that carried it.
    const stored = await readStoredSamples(t.service.ctx.db, narrowId);
    const texts = all.filter((n) => signalInfo(n)?.kind === 'text');
    expect(texts.length).toBeGreaterThan(0);
    for (const name of texts) {
      const index = every.header.indexOf(name);
      const cells = every.rows.map((r) => r[index]!).filter((c) => c !== '');
      expect(cells.sort(), name).toEqual(stored.filter((x) => x.signal === name && x.value !== '').map((x) => String(x.value)).sort());
    }
  });

  it('a MAVLink text signal: RFC 4180 strings (quoted where needed, quotes doubled) on the frames\' aligned times, beside numeric signals equal to Query', async () => {
    const response = await download(`datasetId=${textId}&format=csv&channel=mavlink.STATUSTEXT.text&channel=mavlink.STATUSTEXT.severity`);
    const body = await response.text();
    expect(body).toContain(',"arming, ""checks"" passed",');
    expect(body).toContain(',"' + ' leading space",');
    expect(body).toContain(',plain,');
    const csv = await csvOf(`datasetId=${textId}&format=csv&channel=mavlink.STATUSTEXT.text&channel=mavlink.STATUSTEXT.severity`);
    expect(csv.header).toEqual(['time', 'time_unix_us', 'mavlink.STATUSTEXT.text', 'mavlink.STATUSTEXT.severity']);
    expect(csv.rows.map((r) => r[2])).toEqual(STATUS_TEXTS);
    const answer = await query(textId, ['mavlink.STATUSTEXT.severity']);
    expect(columnPairs(csv, 'mavlink.STATUSTEXT.severity')).toEqual(pairs(answer.series[0]!));
    expect(csv.rows.map((r) => Number(r[1]))).toEqual(STATUS_TEXTS.map((_, i) => T0_MS * 1000 + i * 250_000));
  });

  it('MAVLink values JSON lacks: NaN and infinity as CSV prints them, a uint64 beyond 2^63 as its exact decimal', async () => {
    const csv = await csvOf(`datasetId=${textId}&format=csv&channel=mavlink.ATTITUDE.roll&channel=mavlink.ATTITUDE.pitch&channel=mavlink.ATTITUDE.yaw&channel=mavlink.AUTOPILOT_VERSION.uid`);
    expect(csv.rows.map((r) => r.slice(2))).toEqual([
      ['NaN', 'Infinity', '0.5', ''],
      ['', '', '', BIG_UID.toString()],
    ]);
    const answer = await query(textId, ['mavlink.ATTITUDE.yaw']);
    expect(columnPairs(csv, 'mavlink.ATTITUDE.yaw')).toEqual(pairs(answer.series[0]!));
  });

  it('a MAVLink message id outside the dialect: its raw payload as base64', async () => {
    const stored = (await readStoredSamples(t.service.ctx.db, px4Id)).filter((x) => x.signal.endsWith('.raw'));
    expect(stored.length).toBeGreaterThan(0);
    const name = stored[0]!.signal;
    const csv = await csvOf(`datasetId=${px4Id}&format=csv&channel=${name}`);
    expect(csv.rows.map((r) => r[2])).toEqual(stored.filter((x) => x.signal === name).map((x) => Buffer.from(String(x.value).slice(2), 'hex').toString('base64')));
  });
});

describe('MCAP', () => {
  /** What each real capture holds, so each kind of field is shown to arrive whole. */
  const CAPTURE_HAS = {
    'ardupilot-v2.mavlink': { texts: true, arrays: false, unknown: false },
    'px4-mixed-v1v2-junk.bin': { texts: false, arrays: true, unknown: true },
    'arduplane-sitl-vtol.tlog': { texts: true, arrays: true, unknown: false },
  };
  for (const [capture, id] of [['ardupilot-v2.mavlink', () => narrowId], ['px4-mixed-v1v2-junk.bin', () => px4Id], ['arduplane-sitl-vtol.tlog', () => sitlId]] as const) {
    it(`a MAVLink capture (${capture}): one channel per message type, one message per stored frame with every field, numbers equal to Query`, async () => {
      const datasetId = id();
      const { bytes, records } = await mcapRecords(`datasetId=${datasetId}&format=mcap`);
      const byTopic = messagesByTopic(records);
      const stored = await storedMessages(datasetId);
      // The channels are the stored message types; each holds exactly the stored frames of its type, field for field.
      expect(new Set([...byTopic.keys()].filter((k) => k.startsWith('/mavlink/')))).toEqual(new Set([...stored.keys()].map((m) => `/mavlink/${m}`)));
      for (const [message, frames] of stored) {
        const list = byTopic.get(`/mavlink/${message}`)!;
        expect(list.length, message).toBe(frames.length);
        expect(canonical(list.map((m) => m.data)), message).toEqual(canonical(frames));
      }
      // Text, arrays (ardupilot) and raw payloads (PX4's unknown ids) are among them.
      const values = [...byTopic.values()].flat().flatMap((m) => Object.values(m.data));
      const texts = [...byTopic].some(([topic, list]) =>
        list.some((m) => Object.entries(m.data).some(([field, v]) => typeof v === 'string' && v !== '' && signalInfo(`mavlink.${topic.slice('/mavlink/'.length)}.${field}`)?.kind === 'text')),
      );
      const arrays = values.some((v) => Array.isArray(v));
      const unknown = [...stored.keys()].some((m) => m.startsWith('UNKNOWN_'));
      expect({ texts, arrays, unknown }).toEqual(CAPTURE_HAS[capture]);
      // Log times: every numeric field's values at their log times are Query's raw samples (aligned time).
      const channels = (await t.call('GET', `/api/datasets/channels?datasetId=${datasetId}`, { key: org.key })).body as { hypertableColName: string; dataType: string }[];
      const numeric = channels.filter((c) => c.dataType !== 'string' && c.dataType !== 'bytes').map((c) => c.hypertableColName);
      for (let i = 0; i < numeric.length; i += 200) {
        const names = numeric.slice(i, i + 200);
        const answer = await query(datasetId, names);
        names.forEach((name, k) => {
          const parsed = parseSignalName(name)!;
          const read = (data: Record<string, unknown>) => (parsed.index === undefined ? data[parsed.field] : (data[parsed.field] as unknown[] | undefined)?.[parsed.index]);
          const got = byTopic.get(`/mavlink/${parsed.message}`)!.filter((m) => read(m.data) !== undefined).map((m) => [m.t, read(m.data) ?? NaN]);
          expect(got, name).toEqual(pairs(answer.series[k]!).map(([t, v]) => [t, Number.isFinite(v) ? v : NaN]));
        });
      }
      // One time order across channels, as the file's messages come.
      const times = records.filter((r) => r.type === 'Message').map((r) => (r.type === 'Message' ? r.logTime : 0n));
      expect(times).toEqual([...times].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
      // Every schema is one Foxglove reads, and names every field its messages carry, with that field's JSON type.
      const schemas = records.filter((r) => r.type === 'Schema');
      expect(schemas.every((r) => r.type === 'Schema' && r.encoding === 'jsonschema')).toBe(true);
      for (const r of schemas) {
        if (r.type !== 'Schema') continue;
        const schema = JSON.parse(new TextDecoder().decode(r.data)) as { properties: Record<string, { type: string; items?: { type: string } }> };
        expect(foxgloveProblems(schema), r.name).toEqual([]);
        if (!r.name.startsWith('mavlink.')) continue;
        for (const m of byTopic.get(`/mavlink/${r.name.slice('mavlink.'.length)}`)!) {
          for (const [field, value] of Object.entries(m.data)) {
            const property = schema.properties[field];
            expect(property, `${r.name}.${field}`).toBeDefined();
            const type = Array.isArray(value) ? 'array' : typeof value === 'string' ? 'string' : 'number';
            if (value !== null) expect(property!.type === 'integer' ? 'number' : property!.type, `${r.name}.${field}`).toBe(type);
          }
        }
      }

      // The summary (what Foxglove seeks by) counts the same messages the stream holds.
      const indexed = await McapIndexedReader.Initialize({
        readable: { size: async () => BigInt(bytes.byteLength), read: async (offset, size) => bytes.subarray(Number(offset), Number(offset + size)) },
      });
      let total = 0;
      for await (const _ of indexed.readMessages()) total++;
      const streamed = [...byTopic.values()].reduce((n, l) => n + l.length, 0);
      expect(total).toBe(streamed);
      expect(indexed.statistics?.messageCount).toBe(BigInt(streamed));
    }, 60_000);
  }

  it('MAVLink values JSON lacks: NaN and infinities as null, a uint64 beyond 2^53 as its exact decimal string; text and arrays whole', async () => {
    const byTopic = messagesByTopic((await mcapRecords(`datasetId=${textId}&format=mcap`)).records);
    expect(byTopic.get('/mavlink/STATUSTEXT')!.map((m) => m.data.text)).toEqual(STATUS_TEXTS);
    expect(byTopic.get('/mavlink/ATTITUDE')!.map((m) => m.data)).toEqual([{ time_boot_ms: 1000, roll: null, pitch: null, yaw: 0.5, rollspeed: 0, pitchspeed: 0, yawspeed: 0 }]);
    const [version] = byTopic.get('/mavlink/AUTOPILOT_VERSION')!.map((m) => m.data);
    expect(version).toMatchObject({ capabilities: 12345, uid: BIG_UID.toString(), flight_custom_version: [1, 2, 3, 4, 5, 6, 7, 8], middleware_custom_version: [0, 0, 0, 0, 0, 0, 0, 0] });
  });

  it('a flight with a genuine reboot: each boot session aligned as Query aligns it', async () => {
    const stream = px4LikeStream();
    const { datasetId } = await registerNarrow('px4-like reboot');
    await submitFrames(datasetId, fixturePoints(stream.frames));
    const sessions = await sql<{ n: number }>`select count(*)::int as n from narrow_boot_sessions where dataset_id = ${datasetId}::uuid`.execute(t.service.ctx.db);
    expect(sessions.rows[0]!.n).toBeGreaterThanOrEqual(2);
    const byTopic = messagesByTopic((await mcapRecords(`datasetId=${datasetId}&format=mcap`)).records);
    const answer = await query(datasetId, ['mavlink.ATTITUDE.roll', 'mavlink.HOME_POSITION.latitude']);
    expect(byTopic.get('/mavlink/ATTITUDE')!.map((m) => [m.t, m.data.roll])).toEqual(pairs(answer.series[0]!));
    expect(byTopic.get('/mavlink/ATTITUDE')!.length).toBe(stream.attitudes[0] + stream.attitudes[1]);
    expect(byTopic.get('/mavlink/HOME_POSITION')!.map((m) => [m.t, m.data.latitude])).toEqual(pairs(answer.series[1]!));
  });

  it('named MAVLink signals choose the message types and their fields; a window cuts on aligned time', async () => {
    const roll = await query(narrowId, ['mavlink.ATTITUDE.roll']);
    const all = pairs(roll.series[0]!);
    const [from, to] = [all[10]![0]!, all[all.length - 10]![0]!];
    const iso = (us: number) => new Date(Math.floor(us / 1000)).toISOString().replace('Z', `${String(us % 1000).padStart(3, '0')}Z`);
    const { records } = await mcapRecords(`datasetId=${narrowId}&format=mcap&channel=mavlink.ATTITUDE.roll&channel=mavlink.ATTITUDE.pitch&start=${iso(from)}&end=${iso(to)}`);
    const byTopic = messagesByTopic(records);
    expect([...byTopic.keys()].filter((k) => k !== '/events')).toEqual(['/mavlink/ATTITUDE']);
    const list = byTopic.get('/mavlink/ATTITUDE')!;
    expect(list.map((m) => Object.keys(m.data))).toEqual(list.map(() => ['roll', 'pitch']));
    expect(list.map((m) => [m.t, m.data.roll])).toEqual(all.filter(([t]) => t! >= from && t! < to));
    const metadata = records.find((r) => r.type === 'Metadata');
    expect(metadata?.type === 'Metadata' && metadata.metadata.get('mavlinkSystemId')).toMatch(/^\d+$/);
  });

  it("MAVLink: the vehicle's mode changes on /events as MODE, from its autopilot's HEARTBEATs alone, named as the console names them", async () => {
    // An ArduSub dive, MANUAL then ALT_HOLD from its 8th second, with a BlueOS companion's heartbeat (mode 0, armed bit) between the autopilot's.
    const dive = ardusubDiveWithCompanion(20, (second) => (second < 8 ? ARDUSUB_MANUAL_ARMED : { ...ARDUSUB_MANUAL_ARMED, customMode: 2 }));
    const { datasetId } = await registerNarrow('bluerov dive');
    await submitFrames(datasetId, dive.map((f, i) => framePoint(f.bytes, T0_MS * 1000 + f.atUs + 3_000, i + 1)));
    const events = async (range = '') => messagesByTopic((await mcapRecords(`datasetId=${datasetId}&format=mcap${range}`)).records).get('/events') ?? [];
    const all = await events();
    expect(all.map((e) => e.data.message)).toEqual(['MODE: MANUAL, armed', 'MODE: ALT_HOLD, armed']);
    expect(all.map((e) => e.data.name)).toEqual(['MODE', 'MODE']);
    // At the autopilot's first HEARTBEAT and at its first in ALT_HOLD, as Query places them.
    const [type, mode] = (await query(datasetId, ['mavlink.HEARTBEAT.type', 'mavlink.HEARTBEAT.custom_mode'])).series.map(pairs);
    const autopilot = type!.filter(([, v]) => v === 12).map(([t]) => t);
    const altHold = mode!.filter(([, v]) => v === 2).map(([t]) => t);
    expect(all.map((e) => e.t)).toEqual([autopilot[0], altHold[0]]);
    // A window that opens mid-run says the mode in force at its start.
    const from = autopilot[3]! + 1;
    const iso = (us: number) => new Date(Math.floor(us / 1000)).toISOString().replace('Z', `${String(us % 1000).padStart(3, '0')}Z`);
    const windowed = await events(`&start=${iso(from)}&end=${iso(altHold[0]! + 1)}`);
    expect(windowed.map((e) => [e.t, e.data.message])).toEqual([[from, 'MODE: MANUAL, armed'], [altHold[0], 'MODE: ALT_HOLD, armed']]);
    // The real ArduPlane VTOL flight flies its QuadPlane modes.
    const sitl = messagesByTopic((await mcapRecords(`datasetId=${sitlId}&format=mcap`)).records).get('/events')!.map((e) => String(e.data.message));
    expect(sitl).toEqual(expect.arrayContaining([expect.stringMatching(/^MODE: QLOITER, (armed|disarmed)$/), expect.stringMatching(/^MODE: CIRCLE, (armed|disarmed)$/)]));
  });

  it('a wide dataset: one /rows channel with null for missing values, and events as foxglove.Log', async () => {
    const { records } = await mcapRecords(`datasetId=${wideId}&format=mcap&channel=alt&channel=count`);
    const byTopic = messagesByTopic(records);
    for (const r of records) if (r.type === 'Schema') expect(foxgloveProblems(JSON.parse(new TextDecoder().decode(r.data))), r.name).toEqual([]);
    const rows = byTopic.get('/rows')!;
    expect(rows).toHaveLength(WIDE_ROWS);
    expect(rows[0]!.data).toEqual({ alt: null, count: 0 });
    const answer = await query(wideId, ['0']);
    expect(rows.filter((r) => r.data.alt !== null).map((r) => [r.t, r.data.alt])).toEqual(pairs(answer.series[0]!));
    const events = byTopic.get('/events')!;
    expect(events).toEqual([{ t: (T0_MS + 1000) * 1000, data: { timestamp: { sec: (T0_MS + 1000) / 1000, nsec: 0 }, level: 2, message: 'TAKEOFF: wheels up', name: 'TAKEOFF', file: '', line: 0 } }]);
  });
});

describe('pages', () => {
  it('small pages cross many keyset pages (narrow: each message table on aligned time, merged; wide: on time), reading exactly what one page reads', async () => {
    const { db } = t.service.ctx;
    // One signal in pages of 10: keyset pages of 2 rows of its table.
    const cases = [[narrowId, 200, []], [narrowId, 10, ['mavlink.ATTITUDE.roll']], [wideId, 7, []]] as const;
    for (const [id, pageValues, channels] of cases) {
      const dataset = await requireDataset(db, org.organizationId, id);
      const request = { channels, from: undefined, to: undefined };
      const read = async (values: number | undefined) => {
        const source = await openRawRows(db, dataset, { ...request, ...(values && { pageValues: values }) });
        const pages = [];
        for await (const page of source.pages()) pages.push(page);
        return pages;
      };
      const whole = await read(id === wideId ? WIDE_ROWS * 4 : undefined);
      expect(whole.flat().length, id).toBeGreaterThan(100);
      const paged = await read(pageValues);
      expect(whole.length, id).toBe(1);
      expect(paged.length, id).toBeGreaterThan(id === wideId ? 10_000 : 10);
      expect(paged.flat(), id).toEqual(whole.flat());
    }
    // Whole MAVLink messages (MCAP): each table in keyset pages of a few rows, merged in one time order.
    const dataset = await requireDataset(db, org.organizationId, narrowId);
    const frames = async (pageValues: number | undefined) => {
      const source = await openMavlinkMessages(db, dataset, { channels: [], from: undefined, to: undefined, ...(pageValues && { pageValues }) });
      const pages = [];
      for await (const page of source.pages()) pages.push(page);
      return pages;
    };
    const whole = await frames(undefined);
    const paged = await frames(40);
    expect(whole.length).toBe(1);
    expect(paged.length).toBeGreaterThan(100);
    expect(paged.flat()).toEqual(whole.flat());
    expect(new Set(whole.flat().map((f) => f.seq)).size).toBe(fixtureFrames('ardupilot-v2.mavlink').length);
  }, 120_000);
});

describe('refusals come before the first byte, in the envelope', () => {
  it('names the offending parameter', async () => {
    const call = (q: string) => t.call('GET', `/api/datasets/export?${q}`, { key: org.key });
    let response = await call(`datasetId=${wideId}`);
    expectEnvelope(response, 400, 'invalid_request');
    expect(detailFields(response)).toEqual(['format']);
    response = await call(`datasetId=${wideId}&format=csv&channel=nope`);
    expectEnvelope(response, 400, 'invalid_request');
    expect(detailFields(response)).toEqual(['channel']);
    response = await call(`datasetId=${wideId}&format=csv&channel=alt&channel=count&channel=alt`);
    expect(detailFields(response)).toEqual(['channel']);
    response = await call(`datasetId=${narrowId}&format=mcap&channel=mavlink.NOT_A_MESSAGE.x`);
    expect(detailFields(response)).toEqual(['channel']);
    response = await call(`datasetId=${wideId}&format=csv&start=2026-01-02T00:00:00Z&end=2026-01-01T00:00:00Z`);
    expect(detailFields(response)).toEqual(['start']);
    response = await call(`datasetId=${wideId}&format=csv&start=yesterday`);
    expect(detailFields(response)).toEqual(['start']);
  });

  it("another organization's dataset is 404; a key without datasets:read is 403", async () => {
    const other = await t.createOrg('Other');
    expectEnvelope(await t.call('GET', `/api/datasets/export?datasetId=${wideId}&format=csv`, { key: other.key }), 404, 'not_found');
    const writer = await org.keyWith(['telemetry:write']);
    expectEnvelope(await t.call('GET', `/api/datasets/export?datasetId=${wideId}&format=csv`, { key: writer.apiKey }), 403, 'insufficient_scope');
  });
});

describe('streaming', () => {
  it('a client that stops reading is let go, and the service answers the next request', async () => {
    const response = await download(`datasetId=${wideId}&format=csv`);
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);
    await reader.cancel();
    expect((await t.call('GET', '/healthz')).status).toBe(200);
    const again = await csvOf(`datasetId=${wideId}&format=csv&channel=note`);
    expect(again.rows).toHaveLength(WIDE_ROWS / 1000);
  });

  it('a failure after the status went out cuts the connection: the client sees an error, never a short file that looks whole', async () => {
    const registered = await t.call('POST', '/api/streams/register', {
      key: org.key,
      body: { experimentId, datasetName: 'vanishing', channels: [{ name: 'xs', dataType: 'double' }] },
    });
    const id = registered.body.datasetId as string;
    await t.call('POST', '/api/datasets/append', { key: org.key, body: { experimentId, datasetId: id, rows: [{ timestamp: new Date(T0_MS).toISOString(), values: { xs: 1 } }] } });
    // The channel list still names the column, so the request passes every check; the first page's read then fails.
    await sql`drop table ${sql.table(wideTableName(id))}`.execute(t.service.ctx.db);
    const response = await download(`datasetId=${id}&format=csv`);
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const received: string[] = [];
    const ended = await (async () => {
      for (;;) {
        const chunk = await reader.read();
        if (chunk.done) return 'complete';
        received.push(new TextDecoder().decode(chunk.value));
      }
    })().catch((error: Error) => `cut: ${error.message}`);
    expect(ended).toMatch(/^cut/);
    expect(received.join('')).not.toContain('Error');
    expect((await t.call('GET', '/healthz')).status).toBe(200);
  });
});
