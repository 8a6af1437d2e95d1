import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateImportResponseSchema, FlightParametersSchema, ParameterDiffSchema } from '@sortie/contracts';
import { FIXTURE_DIR } from '@sortie/contracts/testing';
import { McapStreamReader } from '@mcap/core';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectEnvelope } from '../testing/expect-envelope.ts';
import { f32, u64, ULogBuilder } from './formats/ulog-builder.fixture.ts';
import { MAX_LOG_TYPES } from './log-file.ts';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';

// Log imports end to end on the real service and PostgreSQL: real PX4 ULog, ArduPilot DataFlash and
// MAVLink files uploaded over HTTP, every stored value checked against an independent reader's answer
// (pyulog, pymavlink's DFReader: formats/testdata, made by scripts/reference/), and the file that is not a
// log, the truncated and the corrupted one, the same file twice.

const SHARED = join(FIXTURE_DIR, '..');
const ULOG_SMALL = join(SHARED, 'ulog', 'sample_log_small.ulg');
const ULOG_EVENTS = join(SHARED, 'ulog', 'sample_px4_events.ulg');
const DATAFLASH = join(SHARED, 'dataflash', 'ardusub-small.BIN');
const TLOG = join(FIXTURE_DIR, 'arduplane-sitl-vtol.tlog');
const TESTDATA = join(import.meta.dirname, 'formats', 'testdata');

let t: TestService;
let org: TestOrg;
let experimentId: string;

beforeAll(async () => {
  t = await startTestService();
  org = await t.createOrg('imports');
  experimentId = (await t.call('POST', '/api/experiments/create', { key: org.key, body: { name: 'bench day' } })).body.id;
});
afterAll(() => t?.stop());

async function upload(bytes: Uint8Array, query: Record<string, string> = {}, headers: Record<string, string> = {}) {
  const params = new URLSearchParams({ experimentId, ...query });
  const response = await fetch(`${t.url}/api/imports/create?${params}`, {
    method: 'POST',
    headers: { 'x-api-key': org.key, 'content-type': 'application/octet-stream', ...headers },
    body: bytes as Uint8Array<ArrayBuffer>,
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, body: text.startsWith('{') && !text.includes('\n{') ? JSON.parse(text) : undefined };
}

async function imported(bytes: Uint8Array, query: Record<string, string> = {}) {
  const r = await upload(bytes, query);
  expect(r.status, r.text).toBe(201);
  return CreateImportResponseSchema.parse(r.body);
}

/** Canonical text of a value as the reference scripts write it: integers in decimal, floats as float64 hex bytes, NaN "nan". */
function canonical(value: string | number | bigint | null, float: boolean): string {
  if (value === null) return 'null';
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'string') return value;
  if (Number.isNaN(value)) return 'nan';
  if (!float) return String(value);
  const b = Buffer.alloc(8);
  b.writeDoubleBE(value);
  return b.toString('hex');
}

const sha = (lines: string[]) => createHash('sha256').update(lines.join('\n')).digest('hex');

/** Per stored type (its table's message label): row count, boot_us digest, and per field (the signal's field part) the digest of its values in file order. */
async function storedDigests(datasetId: string): Promise<Map<string, { count: number; timestamps: string; fields: Map<string, string> }>> {
  const db = t.service.ctx.db;
  const tables = await sql<{ table_name: string; message: string; columns: Array<{ signal: string; column: string; type: string }> }>`
    select table_name, message, columns from narrow_message_tables where dataset_id = ${datasetId}::uuid`.execute(db);
  const out = new Map<string, { count: number; timestamps: string; fields: Map<string, string> }>();
  for (const table of tables.rows) {
    const selects = table.columns.map((c) => (c.type === 'text' ? `"${c.column}"` : `"${c.column}"::${c.type === 'float4' || c.type === 'float8' ? 'float8' : 'numeric'}::text`));
    const rows = await sql.raw<Record<string, string | null>>(`select boot_us::text as boot, ${selects.map((s, i) => `${s} as c${i}`).join(', ')} from "${table.table_name}" order by frame_seq`).execute(db);
    const fields = new Map<string, string>();
    table.columns.forEach((c, i) => {
      const float = c.type === 'float4' || c.type === 'float8';
      const values = rows.rows.map((r) => {
        const v = r[`c${i}`] ?? null;
        if (v === null || c.type === 'text') return canonical(v, false);
        if (float) return canonical(v === 'NaN' ? NaN : Number(v), true);
        return canonical(BigInt(v), false);
      });
      const field = c.signal.replace(/^(ulog|dataflash)\.[A-Za-z0-9_]+(\[\d+\])?\./, '');
      fields.set(field, sha(values));
    });
    // A message logged with timestamp 0 (not set) is stored without a boot time (log-file.ts): NULL is that 0.
    out.set(table.message, { count: rows.rows.length, timestamps: sha(rows.rows.map((r) => String(r.boot ?? 0))), fields });
  }
  return out;
}

describe('PX4 ULog', () => {
  for (const [file, name] of [
    [ULOG_SMALL, 'sample_log_small'],
    [ULOG_EVENTS, 'sample_px4_events'],
  ] as const) {
    it(`${name}: every message of every topic stored with the values pyulog reads`, async () => {
      const reference = JSON.parse(await readFile(join(TESTDATA, `${name}.pyulog.json`), 'utf8'));
      const result = await imported(new Uint8Array(await readFile(file)), { fileName: `${name}.ulg` });
      expect(result.duplicate).toBe(false);
      expect(result.format).toBe('ulog');
      expect(result.status).toBe('done');
      const stored = await storedDigests(result.datasetId);
      let messages = 0;
      for (const topic of reference.topics as Array<{ name: string; multi_id: number; count: number; timestamps: string; fields: Record<string, { sha256: string }>; char_arrays: Record<string, { sha256: string }> }>) {
        const label = topic.multi_id === 0 ? topic.name : `${topic.name}[${topic.multi_id}]`;
        const ours = stored.get(label);
        expect(ours, label).toBeDefined();
        expect(ours!.count, label).toBe(topic.count);
        expect(ours!.timestamps, `${label} timestamps`).toBe(topic.timestamps);
        messages += topic.count;
        for (const [field, digest] of Object.entries({ ...topic.fields, ...topic.char_arrays })) {
          // pyulog keeps padding and a char array's elements; the stored type holds neither (padding is not data, the text is one field).
          if (field.split('.').some((part) => part.startsWith('_padding')) || !ours!.fields.has(field)) {
            expect(field.split('.').some((part) => part.startsWith('_padding')) || /\[\d+\]$/.test(field) && Object.keys(topic.char_arrays).some((c) => field.startsWith(`${c}[`)), `${label}.${field} missing`).toBe(true);
            continue;
          }
          expect(ours!.fields.get(field), `${label}.${field}`).toBe(digest.sha256);
        }
      }
      expect(result.report!.messages).toBe(messages);
      expect(result.metadata['sys_name']).toBe(reference.info.sys_name);
      // Parameters: pyulog's initial set, and its changes where the value moved.
      const params = FlightParametersSchema.parse((await t.call('GET', `/api/datasets/parameters?datasetId=${result.datasetId}`, { key: org.key })).body);
      expect(params.source).toBe('log');
      expect(params.parameters.length).toBe(Object.keys(reference.initial_parameters).length);
      for (const p of params.parameters.slice(0, 50)) expect(p.initial, p.name).toBe(reference.initial_parameters[p.name]);
      // Logged strings on the timeline.
      const events = (await t.call('GET', `/api/datasets/events?datasetId=${result.datasetId}`, { key: org.key })).body as Array<{ kind: string; message: string }>;
      const texts = events.filter((e) => e.kind === 'LOG').map((e) => e.message);
      for (const [, , text] of reference.logged_messages as Array<[number, number, string]>) expect(texts).toContain(text);
      // PX4 events with their messages as pyulog renders them from the log's own definitions.
      if (name === 'sample_px4_events') {
        const rendered = JSON.parse(await readFile(join(TESTDATA, 'sample_px4_events.events.json'), 'utf8'));
        // Levels 8 and 9 (protocol, disabled) are not logged text: pyulog does not show them either.
        const expected = (rendered.events as Array<{ text: string; level: number }>).filter((e) => e.level <= 7).map((e) => e.text);
        expect(expected.length).toBeGreaterThan(0);
        for (const text of expected) expect(texts).toContain(text);
      }
    });
  }

  it('exports an imported flight: MCAP with one channel per topic and one message per logged message, CSV of a signal', async () => {
    const list = (await t.call('GET', `/api/imports/list?experimentId=${experimentId}`, { key: org.key })).body as Array<{ fileName: string; datasetId: string; report: { types: Array<{ type: string; count: number }> } }>;
    const small = list.find((i) => i.fileName === 'sample_log_small.ulg')!;
    const mcap = new Uint8Array(await (await fetch(`${t.url}/api/datasets/export?datasetId=${small.datasetId}&format=mcap`, { headers: { 'x-api-key': org.key } })).arrayBuffer());
    const reader = new McapStreamReader();
    reader.append(mcap);
    const topics = new Map<number, string>();
    const counts = new Map<string, number>();
    for (let record; (record = reader.nextRecord()); ) {
      if (record.type === 'Channel') topics.set(record.id, record.topic);
      if (record.type === 'Message') counts.set(topics.get(record.channelId)!, (counts.get(topics.get(record.channelId)!) ?? 0) + 1);
    }
    for (const { type, count } of small.report.types) expect(counts.get(`/ulog/${type}`), type).toBe(count);
    const csv = await (await fetch(`${t.url}/api/datasets/export?datasetId=${small.datasetId}&format=csv&channel=${encodeURIComponent('ulog.vehicle_attitude.q[0]')}`, { headers: { 'x-api-key': org.key } })).text();
    const lines = csv.trim().split('\n');
    expect(lines[0]).toBe('time,time_unix_us,ulog.vehicle_attitude.q[0]');
    expect(lines.length - 1).toBe(small.report.types.find((x) => x.type === 'vehicle_attitude')!.count);
  });

  it('puts the flight on UTC from its GPS time', async () => {
    const r = (await t.call('GET', `/api/imports/list?experimentId=${experimentId}`, { key: org.key })).body as Array<{ fileName: string; report: { start: string; timeSource: string } }>;
    const small = r.find((i) => i.fileName === 'sample_log_small.ulg')!;
    expect(small.report.timeSource).toBe('gps');
    // The flight's own log path says when it was recorded: /fs/microsd/log/2021-04-21/06_30_58.ulg (UTC).
    expect(small.report.start.slice(0, 10)).toBe('2021-04-21');
    // The SITL log's messages logged with timestamp 0 (not set) do not pull its start back to 1970.
    const events = r.find((i) => i.fileName === 'sample_px4_events.ulg')!;
    expect(events.report.start.slice(0, 10)).toBe('2024-03-18');
  });

  it('answers the flight it made when the same file comes again, and stores nothing twice', async () => {
    const bytes = new Uint8Array(await readFile(ULOG_SMALL));
    const again = await upload(bytes, { name: 'another name' });
    expect(again.status).toBe(200);
    const body = CreateImportResponseSchema.parse(again.body);
    expect(body.duplicate).toBe(true);
    const datasets = await t.service.ctx.db.selectFrom('log_imports').select('dataset_id').where('sha256', '=', createHash('sha256').update(bytes).digest()).execute();
    expect(datasets).toEqual([{ dataset_id: body.datasetId }]);
  });

  it('imports what is valid of a truncated log and says what was skipped', async () => {
    const bytes = new Uint8Array(await readFile(ULOG_EVENTS));
    const cut = bytes.slice(0, Math.floor(bytes.length * 0.6) + 7);
    const result = await imported(cut, { fileName: 'cut.ulg' });
    expect(result.report!.messages).toBeGreaterThan(1000);
    expect(result.report!.skippedBytes).toBeGreaterThan(0);
    expect(result.report!.warnings.join('\n')).toMatch(/truncated/);
  });

  it('imports around a corrupted stretch', async () => {
    const bytes = new Uint8Array(await readFile(ULOG_SMALL));
    const damaged = bytes.slice();
    const at = Math.floor(bytes.length / 2);
    for (let i = 0; i < 200; i++) damaged[at + i] = (i * 37 + 11) & 0xff;
    const result = await imported(damaged, { fileName: 'damaged.ulg' });
    const reference = JSON.parse(await readFile(join(TESTDATA, 'sample_log_small.pyulog.json'), 'utf8'));
    const total = (reference.topics as Array<{ count: number }>).reduce((n, x) => n + x.count, 0);
    expect(result.report!.messages).toBeLessThan(total);
    expect(result.report!.messages).toBeGreaterThan(total - 200);
    expect(result.report!.skippedBytes).toBeGreaterThan(0);
  });
});

describe('ArduPilot DataFlash', () => {
  it('stores every message with the values DFReader reads, PARM as parameters, MSG on the timeline', async () => {
    const reference = JSON.parse(await readFile(join(TESTDATA, 'ardusub-small.dfreader.json'), 'utf8'));
    const start = '2021-06-01T10:00:00.000Z';
    const result = await imported(new Uint8Array(await readFile(DATAFLASH)), { fileName: 'ardusub-small.BIN', start });
    expect(result.format).toBe('dataflash');
    const stored = await storedDigests(result.datasetId);
    let messages = 0;
    for (const [label, type] of Object.entries(reference.types as Record<string, { count: number; bootUs: string; fields: Array<{ name: string; sha256: string }> }>)) {
      const ours = stored.get(label);
      expect(ours, label).toBeDefined();
      expect(ours!.count, label).toBe(type.count);
      expect(ours!.timestamps, `${label} TimeUS`).toBe(type.bootUs);
      messages += type.count;
      for (const field of type.fields) expect(ours!.fields.get(field.name), `${label}.${field.name}`).toBe(field.sha256);
    }
    // Every message but the schema ones (FMT, FMTU, UNIT, MULT), which describe the others.
    const schema = Object.values(reference.schema as Record<string, number>).reduce((n, c) => n + c, 0);
    expect(result.report!.messages).toBe(messages);
    expect(messages + schema).toBe(reference.messages);
    expect(String(result.metadata['firmware'])).toMatch(/^ArduSub V4\.1\.0/);
    // No GPS under water: the first message is placed at the start given, and the answer says so.
    expect(result.report!.timeSource).toBe('start');
    expect(Date.parse(result.report!.start!)).toBe(Date.parse(start));
    expect(result.report!.warnings.join('\n')).toMatch(/no GPS time/);
    const params = FlightParametersSchema.parse((await t.call('GET', `/api/datasets/parameters?datasetId=${result.datasetId}`, { key: org.key })).body);
    expect(params.parameters.length).toBe(new Set((reference.params as Array<[number, string, number]>).map(([, n]) => n)).size);
    // The changes during the flight: a later PARM of a name whose value differs from the one before (three in this log).
    const last = new Map<string, number>();
    const changes: Array<[string, number, number]> = [];
    for (const [, name, value] of reference.params as Array<[number, string, number]>) {
      if (last.has(name) && last.get(name) !== value) changes.push([name, last.get(name)!, value]);
      last.set(name, value);
    }
    expect(changes.length).toBe(3);
    const ours = params.parameters.flatMap((p) => p.changes.map((c) => [p.name, p.initial, c.value] as [string, number, number]));
    expect(ours.sort()).toEqual(changes.sort());
    for (const p of params.parameters) expect(p.final, p.name).toBe(last.get(p.name));
    expect(result.report!.parameterChanges).toBe(3);
    const events = (await t.call('GET', `/api/datasets/events?datasetId=${result.datasetId}`, { key: org.key })).body as Array<{ kind: string; message: string }>;
    for (const [, text] of reference.texts as Array<[number, string]>) expect(events.map((e) => e.message)).toContain(text);
  });
});

describe('a damaged DataFlash log', () => {
  it('truncated mid-message: every complete message before the cut, the tail reported', async () => {
    const bytes = new Uint8Array(await readFile(DATAFLASH));
    const cut = bytes.slice(0, Math.floor(bytes.length * 0.7) + 5);
    const result = await imported(cut, { fileName: 'cut.BIN' });
    expect(result.report!.messages).toBeGreaterThan(3000);
    expect(result.report!.warnings.join('\n')).toMatch(/truncated/);
  });
});

describe('MAVLink files', () => {
  it("a tlog goes through the stream path: its frames stored as a streamed flight's are, a signal exported, the flight on its GPS time", async () => {
    const result = await imported(new Uint8Array(await readFile(TLOG)), { fileName: 'arduplane-sitl-vtol.tlog' });
    expect(result.format).toBe('tlog');
    expect(result.report!.messages).toBeGreaterThan(20_000);
    const csv = await fetch(`${t.url}/api/datasets/export?datasetId=${result.datasetId}&format=csv&channel=mavlink.ATTITUDE.roll`, { headers: { 'x-api-key': org.key } });
    expect(csv.status).toBe(200);
    const lines = (await csv.text()).trim().split('\n');
    expect(lines[0]).toBe('time,time_unix_us,mavlink.ATTITUDE.roll');
    expect(lines.length - 1).toBe(result.report!.types.find((x) => x.type === 'ATTITUDE')!.count);
    expect(result.report!.start!.slice(0, 4)).toBe('2018');
  });
});

describe('refusals', () => {
  it('a file that is not a log is refused in the envelope and leaves nothing behind', async () => {
    const before = await t.service.ctx.db.selectFrom('datasets').select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow();
    const spooled = (await readdir(tmpdir())).filter((f) => f.startsWith('sortie-import-')).length;
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);
    const r = await upload(png, { fileName: 'picture.png' });
    expect(r.status).toBe(400);
    expectEnvelope(r, 400, 'invalid_request');
    expect(r.body.error.message).toMatch(/not a log/);
    expect(r.body.error.details[0].field).toBe('body');
    const after = await t.service.ctx.db.selectFrom('datasets').select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow();
    expect(after.n).toBe(before.n);
    expect((await readdir(tmpdir())).filter((f) => f.startsWith('sortie-import-')).length).toBe(spooled);
  });

  it('a file given as a format it is not is refused too', async () => {
    // A byte more than the fixture: not the file imported above, which would answer that import.
    const bytes = new Uint8Array([...(await readFile(DATAFLASH)), 0]);
    const r = await upload(bytes, { format: 'ulog' });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toMatch(/not a valid ulog log/);
  });

  it('reports progress as ndjson when asked, then the import', async () => {
    const bytes = new Uint8Array(await readFile(ULOG_EVENTS)).slice(0, 400_000);
    const r = await upload(bytes, { fileName: 'progress.ulg' }, { accept: 'application/x-ndjson' });
    expect(r.status).toBe(200);
    const lines = r.text.trim().split('\n').map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({ phase: 'upload', bytes: bytes.length });
    expect(lines.at(-1).import.report.messages).toBeGreaterThan(0);
  });
});

describe('a log that declares more message types than a flight has', () => {
  it(`stores the first ${MAX_LOG_TYPES} and says the rest were left out`, async () => {
    const log = new ULogBuilder(1, 0).flagBits(0);
    const topics = MAX_LOG_TYPES + 2;
    for (let i = 0; i < topics; i++) log.format(`m${i}:uint64_t timestamp;float x;`);
    for (let i = 0; i < topics; i++) log.subscribe(0, i, `m${i}`);
    for (let i = 0; i < topics; i++) log.data(i, [...u64(1_000_000 + i), ...f32(i)]);
    const result = await imported(log.build(), { fileName: 'many-topics.ulg', start: '2026-01-01T00:00:00Z' });
    expect(result.report!.types.length).toBe(MAX_LOG_TYPES);
    expect(result.report!.messages).toBe(MAX_LOG_TYPES);
    expect(result.report!.warnings.filter((w) => /left out/.test(w))).toHaveLength(2);
  }, 120_000);
});

describe('an import cut short by a server stop', () => {
  it('is imported anew when the same file comes again, and what it left is gone', async () => {
    const bytes = new Uint8Array([...(await readFile(DATAFLASH)), 1, 2]);
    const first = await imported(bytes, { fileName: 'cut-short.BIN' });
    const db = t.service.ctx.db;
    // What a server stop mid-import leaves: the row still `importing`, not moved on for two minutes.
    await db.updateTable('log_imports').set({ status: 'importing', updated_at: new Date(t.clock.now().getTime() - 120_000) }).where('id', '=', first.id).execute();
    const tables = await db.selectFrom('narrow_message_tables').select('table_name').where('dataset_id', '=', first.datasetId).execute();
    expect(tables.length).toBeGreaterThan(0);
    const again = await imported(bytes, { fileName: 'cut-short.BIN' });
    expect(again.datasetId).not.toBe(first.datasetId);
    expect(await db.selectFrom('datasets').select('id').where('id', '=', first.datasetId).executeTakeFirst()).toBeUndefined();
    const left = await sql<{ n: number }>`select count(*)::int as n from pg_class where relname = any(${tables.map((x) => x.table_name)}::text[])`.execute(db);
    expect(left.rows[0]!.n).toBe(0);
  });

  it('a running one (moved on recently) answers as a duplicate', async () => {
    const bytes = new Uint8Array([...(await readFile(DATAFLASH)), 3]);
    const first = await imported(bytes, { fileName: 'running.BIN' });
    await t.service.ctx.db.updateTable('log_imports').set({ status: 'importing', updated_at: t.clock.now() }).where('id', '=', first.id).execute();
    const r = await upload(bytes);
    expect(r.status).toBe(200);
    expect(r.body.duplicate).toBe(true);
    expect(r.body.datasetId).toBe(first.datasetId);
  });
});

describe('parameters', () => {
  it('diffs two flights: added, removed and changed with both values', async () => {
    const list = (await t.call('GET', `/api/imports/list?experimentId=${experimentId}`, { key: org.key })).body as Array<{ fileName: string; datasetId: string }>;
    const a = list.find((i) => i.fileName === 'sample_log_small.ulg')!.datasetId;
    const b = list.find((i) => i.fileName === 'sample_px4_events.ulg')!.datasetId;
    const diff = ParameterDiffSchema.parse((await t.call('GET', `/api/datasets/parameters/diff?a=${a}&b=${b}`, { key: org.key })).body);
    const [ra, rb] = await Promise.all(['sample_log_small', 'sample_px4_events'].map(async (n) => JSON.parse(await readFile(join(TESTDATA, `${n}.pyulog.json`), 'utf8')).initial_parameters as Record<string, number>));
    const expected = {
      added: Object.keys(rb!).filter((k) => !(k in ra!)).sort(),
      removed: Object.keys(ra!).filter((k) => !(k in rb!)).sort(),
      changed: Object.keys(ra!).filter((k) => k in rb! && ra![k] !== rb![k]).sort(),
    };
    expect(diff.added.map((x) => x.name)).toEqual(expected.added);
    expect(diff.removed.map((x) => x.name)).toEqual(expected.removed);
    expect(diff.changed.map((x) => x.name)).toEqual(expected.changed);
    for (const c of diff.changed) expect([c.a, c.b]).toEqual([ra![c.name], rb![c.name]]);
  });
});
