import { createClient, type Client } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { McapIndexedReader, McapStreamReader, type TypedMcapRecord } from '@mcap/core';
import { TelemetryService, type QueryResponse } from '@sortie/contracts';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireDataset } from '../datasets/queries.ts';
import { wideTableName } from '../datasets/wide-table.ts';
import { openRawRows } from '../telemetry/raw-rows.ts';
import { fixtureFrames, fixturePoints } from '../telemetry/narrow/fixture-frames.ts';
import { detailFields, expectEnvelope } from '../testing/expect-envelope.ts';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';

/**
 * GET /api/datasets/export against the real service on PostgreSQL: CSV equal to Query row for row (Query
 * asked for more points than there are, so it answers raw samples), MCAP read back with @mcap/core's
 * readers (message counts per channel and values equal to Query), wide and MAVLink datasets, paging.
 */
let t: TestService;
let org: TestOrg;
let client: Client<typeof TelemetryService>;
let experimentId: string;
let wideId: string;
let narrowId: string;

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
  const points = fixturePoints(fixtureFrames('ardupilot-v2.mavlink'));
  async function* messages() {
    yield { message: { case: 'header' as const, value: { experimentId, datasetId: narrowId, format: 'mavlink-raw-v1' } } };
    for (let i = 0; i < points.length; i += 500) yield { message: { case: 'batch' as const, value: { points: points.slice(i, i + 500) } } };
  }
  await client.streamSubmit(messages(), { headers: { 'x-api-key': org.key } });
}, 120_000);
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

  it('a MAVLink dataset on aligned time: every numeric signal column equal to Query', async () => {
    const channels = await t.call('GET', `/api/datasets/channels?datasetId=${narrowId}&experimentId=${experimentId}`, { key: org.key });
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

    // Every channel (none named): all of the dataset's numeric signals (what Query reads), each equal to Query.
    const all = await csvOf(`datasetId=${narrowId}&format=csv`);
    expect(all.header.slice(2).sort()).toEqual([...numeric].sort());
    const sample = numeric.slice(0, 40);
    const every = await query(narrowId, sample);
    sample.forEach((name, i) => expect(columnPairs(all, name), name).toEqual(pairs(every.series[i]!)));
  });
});

describe('MCAP', () => {
  it('a MAVLink dataset: one channel per message type, message counts and values equal to Query, indexed and streamed reads agree', async () => {
    const { bytes, records } = await mcapRecords(`datasetId=${narrowId}&format=mcap`);
    const byTopic = messagesByTopic(records);
    const channels = (await t.call('GET', `/api/datasets/channels?datasetId=${narrowId}`, { key: org.key })).body as { hypertableColName: string; dataType: string }[];
    const messages = new Set(channels.filter((c) => c.dataType !== 'string' && c.dataType !== 'bytes').map((c) => c.hypertableColName.split('.')[1]));
    expect(new Set([...byTopic.keys()].filter((k) => k.startsWith('/mavlink/')).map((k) => k.slice('/mavlink/'.length)))).toEqual(messages);
    for (const name of ['mavlink.ATTITUDE.roll', 'mavlink.VFR_HUD.alt', 'mavlink.GLOBAL_POSITION_INT.lat']) {
      const [, message, field] = name.split('.');
      const answer = await query(narrowId, [name]);
      const list = byTopic.get(`/mavlink/${message}`)!;
      // One MCAP message per frame of that type (each carries the field); its values at their log times are Query's samples.
      expect(list.length, name).toBe(Number(answer.series[0]!.rawPoints));
      expect(list.map((m) => [m.t, m.data[field!]]), name).toEqual(pairs(answer.series[0]!));
    }
    const schema = records.find((r) => r.type === 'Schema' && r.name === 'mavlink.ATTITUDE');
    expect(schema && schema.type === 'Schema' && schema.encoding).toBe('jsonschema');

    // The summary (what Foxglove seeks by) counts the same messages the stream holds.
    const indexed = await McapIndexedReader.Initialize({
      readable: { size: async () => BigInt(bytes.byteLength), read: async (offset, size) => bytes.subarray(Number(offset), Number(offset + size)) },
    });
    let total = 0;
    for await (const _ of indexed.readMessages()) total++;
    const streamed = [...byTopic.values()].reduce((n, l) => n + l.length, 0);
    expect(total).toBe(streamed);
    expect(indexed.statistics?.messageCount).toBe(BigInt(streamed));
  });

  it('a wide dataset: one /rows channel with null for missing values, and events as foxglove.Log', async () => {
    const { records } = await mcapRecords(`datasetId=${wideId}&format=mcap&channel=alt&channel=count`);
    const byTopic = messagesByTopic(records);
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
  it('small pages cross many windows (narrow, halving where Query would downsample) and keyset pages (wide), reading exactly what one page reads', async () => {
    const { db } = t.service.ctx;
    const now = new Date();
    // One signal in pages of 20: windows sized from the average rate overflow where it is denser, and halve.
    const cases = [[narrowId, 200, []], [narrowId, 20, ['mavlink.ATTITUDE.roll']], [wideId, 7, []]] as const;
    for (const [id, pageValues, channels] of cases) {
      const dataset = await requireDataset(db, org.organizationId, id);
      const request = { channels, from: undefined, to: undefined };
      const read = async (values: number | undefined) => {
        const source = await openRawRows(db, org.organizationId, dataset, { ...request, ...(values && { pageValues: values }) }, now);
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
