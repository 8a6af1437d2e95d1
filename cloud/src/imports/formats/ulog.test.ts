/**
 * The ULog reader against pyulog, the independent reader: testdata/<fixture>.pyulog.json are its digests
 * of the two real PX4 logs in ../shared/fixtures/ulog (scripts/reference/ulog-digest.py made them). Pure:
 * reads files only.
 *
 * pyulog gives a char[N] field as N int8 elements `name[0]`..; this reader gives one text field (the
 * bytes up to the first NUL), so those are compared with the digest's `char_arrays` (pyulog's elements
 * joined). pyulog keeps padding fields that are not at the end of a message (`esc[0]._padding0[1]`);
 * this reader drops every padding field. pyulog's log levels are the ASCII digits ('6' = 54).
 */
import { ascii, f32, u32, u64, ULogBuilder } from './ulog-builder.fixture.ts';
import { parseMessage, parseMessageDefinition, type MessageDefinition } from '@foxglove/ulog';
import fc from 'fast-check';
import { createHash, type Hash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { NotThisFormatError, type LogLevel, type LogMessageType, type LogSink, type LogValue } from './records.ts';
import { createULogParser, looksLikeULog } from './ulog.ts';

const fixtureDir = (() => {
  const besideRepo = fileURLToPath(new URL('../../../../../shared/fixtures/ulog', import.meta.url));
  return existsSync(besideRepo) ? besideRepo : '/work/shared/fixtures/ulog';
})();
const FIXTURES = ['sample_log_small', 'sample_px4_events'] as const;
type FixtureName = (typeof FIXTURES)[number];

interface Reference {
  topics: {
    name: string;
    multi_id: number;
    count: number;
    timestamps: string;
    fields: Record<string, { type: string; sha256: string }>;
    char_arrays: Record<string, { length: number; sha256: string }>;
  }[];
  initial_parameters: Record<string, number>;
  changed_parameters: [number, string, number][];
  logged_messages: [number, number, string][];
  logged_messages_tagged: [number, number, number, string][];
  info: Record<string, string | number>;
  info_multiple: Record<string, string[][] | { bytes: number }>;
  dropouts: { count: number; total_ms: number };
  events: [number, number, number, number, string][];
  gps_clock: Record<string, { count: number; first: [number, number] | null }>;
}

const fileOf = (name: FixtureName) => new Uint8Array(readFileSync(`${fixtureDir}/${name}.ulg`));
const referenceOf = (name: FixtureName): Reference =>
  JSON.parse(readFileSync(fileURLToPath(new URL(`./testdata/${name}.pyulog.json`, import.meta.url)), 'utf8'));

// ---------------------------------------------------------------------------------------------------------
// Recording what the reader gives

type Call =
  | { kind: 'type'; type: LogMessageType }
  | { kind: 'data'; typeId: number; bootUs: number; values: LogValue[] }
  | { kind: 'text'; bootUs: number | null; level: LogLevel; text: string; source: string; data?: Record<string, unknown> }
  | { kind: 'param'; bootUs: number | null; name: string; value: number }
  | { kind: 'info'; key: string; value: string | number }
  | { kind: 'clock'; bootUs: number; unixUs: number }
  | { kind: 'skipped'; offset: number; bytes: number; reason: string };

/** Every sink call, values copied (the reader may reuse its array). */
function recorder(): { sink: LogSink; calls: Call[] } {
  const calls: Call[] = [];
  const sink: LogSink = {
    type: (type) => calls.push({ kind: 'type', type }),
    data: (typeId, bootUs, values) => calls.push({ kind: 'data', typeId, bootUs, values: [...values] }),
    text: (bootUs, level, text, source, data) => calls.push({ kind: 'text', bootUs, level, text, source, ...(data ? { data } : {}) }),
    param: (bootUs, name, value) => calls.push({ kind: 'param', bootUs, name, value }),
    info: (key, value) => calls.push({ kind: 'info', key, value }),
    clock: (bootUs, unixUs) => calls.push({ kind: 'clock', bootUs, unixUs }),
    skipped: (offset, bytes, reason) => calls.push({ kind: 'skipped', offset, bytes, reason }),
  };
  return { sink, calls };
}

/** A sha256 over every sink call in order: cheap to compare between chunkings of a large file. */
function hashingSink(): { sink: LogSink; digest: () => string } {
  const hash = createHash('sha256');
  const put = (...parts: unknown[]) => hash.update(JSON.stringify(parts, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)) + '\n');
  return {
    sink: {
      type: (type) => put('type', type),
      // the hot one kept cheap: fast-check parses whole files many times
      data: (typeId, bootUs, values) => hash.update(`data ${typeId} ${bootUs} ${values.join('\u0001')}\n`),
      text: (...args) => put('text', ...args),
      param: (...args) => put('param', ...args),
      info: (...args) => put('info', ...args),
      clock: (...args) => put('clock', ...args),
      skipped: (...args) => put('skipped', ...args),
    },
    digest: () => hash.digest('hex'),
  };
}

function parseChunked(bytes: Uint8Array, sink: LogSink, sizes: (i: number) => number): void {
  const parser = createULogParser(sink);
  // One buffer for every chunk, overwritten before each push: the reader must keep no reference to a chunk.
  let scratch = new Uint8Array(0);
  for (let offset = 0, i = 0; offset < bytes.length; i++) {
    const chunk = bytes.subarray(offset, offset + Math.max(1, sizes(i)));
    if (chunk.length > scratch.length) scratch = new Uint8Array(chunk.length);
    scratch.fill(0xee);
    scratch.set(chunk);
    parser.push(scratch.subarray(0, chunk.length));
    offset += chunk.length;
  }
  parser.end();
  expect(parser.offset).toBe(bytes.length);
}

function parseAll(bytes: Uint8Array): Call[] {
  const { sink, calls } = recorder();
  parseChunked(bytes, sink, () => bytes.length);
  return calls;
}

/** pyulog digest's canonical text of a value: integers in decimal, floats as float64 big-endian hex. */
function canonical(value: LogValue | undefined, isFloat = typeof value === 'number' && !Number.isInteger(value)): string {
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'string') return value;
  if (value === undefined) return 'undefined';
  if (!isFloat) return String(value);
  if (Number.isNaN(value)) return 'nan';
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, value);
  return Array.from(new Uint8Array(view.buffer), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** sha256 over texts joined by "\n", fed one at a time. */
class JoinedHash {
  #hash: Hash = createHash('sha256');
  #first = true;
  add(text: string): void {
    this.#hash.update(this.#first ? text : `\n${text}`);
    this.#first = false;
  }
  digest(): string {
    return this.#hash.digest('hex');
  }
}

/** Per type: count, timestamp digest and per-field digests, as the reference script computes them. */
function digestOf(calls: Call[]) {
  const types = new Map<number, { type: LogMessageType; count: number; timestamps: JoinedHash; fields: JoinedHash[] }>();
  for (const call of calls) {
    if (call.kind === 'type') {
      types.set(call.type.id, { type: call.type, count: 0, timestamps: new JoinedHash(), fields: call.type.fields.map(() => new JoinedHash()) });
    } else if (call.kind === 'data') {
      const entry = types.get(call.typeId);
      if (entry === undefined) throw new Error(`data for type ${call.typeId} before its type()`);
      entry.count += 1;
      entry.timestamps.add(String(call.bootUs));
      entry.type.fields.forEach((field, i) => {
        entry.fields[i]!.add(canonical(call.values[i], field.type === 'float4' || field.type === 'float8'));
      });
    }
  }
  return [...types.values()].map((t) => ({
    name: t.type.name,
    instance: t.type.instance,
    count: t.count,
    timestamps: t.timestamps.digest(),
    fields: Object.fromEntries(t.type.fields.map((f, i) => [f.name, { type: f.type, sha256: t.fields[i]!.digest() }])),
  }));
}

const COLUMN_OF_PYULOG_TYPE: Record<string, string> = {
  bool: 'int2',
  int8_t: 'int2',
  uint8_t: 'int2',
  int16_t: 'int2',
  uint16_t: 'int4',
  int32_t: 'int4',
  uint32_t: 'int8',
  int64_t: 'int8',
  uint64_t: 'uint64',
  float: 'float4',
  double: 'float8',
};

const isPadding = (name: string) => name.startsWith('_padding') || name.includes('._padding');

// ---------------------------------------------------------------------------------------------------------
// A reading of the (uncorrupted) fixtures' framing, independent of the reader: message offsets, and the
// data payloads for the library comparison.

interface Framed {
  offset: number;
  length: number;
  type: string;
  payload: Uint8Array;
}

function frame(bytes: Uint8Array): Framed[] {
  const out: Framed[] = [];
  for (let offset = 16; offset + 3 <= bytes.length; ) {
    const size = bytes[offset]! | (bytes[offset + 1]! << 8);
    out.push({ offset, length: 3 + size, type: String.fromCharCode(bytes[offset + 2]!), payload: bytes.subarray(offset + 3, offset + 3 + size) });
    offset += 3 + size;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------

describe.each(FIXTURES)('ULog fixture %s against pyulog', (name) => {
  const bytes = fileOf(name);
  const reference = referenceOf(name);
  const calls = parseAll(bytes);
  const ofKind = <K extends Call['kind']>(kind: K) => calls.filter((c): c is Extract<Call, { kind: K }> => c.kind === kind);

  it('reads the whole file with nothing skipped', () => {
    expect(looksLikeULog(bytes)).toBe(true);
    expect(ofKind('skipped')).toEqual([]);
  });

  it('gives per topic and instance the reference count, timestamps and field values', () => {
    const ours = digestOf(calls);
    expect(ours.map((t) => `${t.name}/${t.instance}`).sort()).toEqual(reference.topics.map((t) => `${t.name}/${t.multi_id}`).sort());
    for (const ref of reference.topics) {
      const mine = ours.find((t) => t.name === ref.name && t.instance === ref.multi_id)!;
      const label = `${ref.name}/${ref.multi_id}`;
      expect(mine.count, label).toBe(ref.count);
      expect(mine.timestamps, label).toBe(ref.timestamps);

      const expected: Record<string, { type: string; sha256: string }> = {};
      const charElements = new Set(Object.entries(ref.char_arrays).flatMap(([base, c]) => Array.from({ length: c.length }, (_, i) => `${base}[${i}]`)));
      for (const [field, value] of Object.entries(ref.fields)) {
        if (isPadding(field) || charElements.has(field)) continue;
        expected[field] = { type: COLUMN_OF_PYULOG_TYPE[value.type]!, sha256: value.sha256 };
      }
      for (const [base, value] of Object.entries(ref.char_arrays)) expected[base] = { type: 'text', sha256: value.sha256 };
      expect(mine.fields, label).toEqual(expected);
    }
  });

  it('announces each type once, before its first data, with dense ids', () => {
    const types = ofKind('type');
    expect(types.map((t) => t.type.id)).toEqual(types.map((_, i) => i));
    const announced = new Set<number>();
    for (const call of calls) {
      if (call.kind === 'type') announced.add(call.type.id);
      if (call.kind === 'data') expect(announced.has(call.typeId)).toBe(true);
    }
    for (const t of types) expect(t.type.fields.some((f) => f.name === 'timestamp' || isPadding(f.name))).toBe(false);
  });

  it('gives the initial and changed parameters', () => {
    const params = ofKind('param');
    const initial = Object.fromEntries(params.filter((p) => p.bootUs === null).map((p) => [p.name, p.value]));
    expect(initial).toEqual(reference.initial_parameters);
    expect(params.filter((p) => p.bootUs !== null).map((p) => [p.bootUs, p.name, p.value])).toEqual(reference.changed_parameters);
  });

  it('gives the logged strings', () => {
    const logged = ofKind('text').filter((t) => t.source === 'ulog.logging');
    expect(logged.filter((t) => t.data === undefined).map((t) => [t.bootUs, t.level, t.text])).toEqual(
      reference.logged_messages.map(([ts, level, text]) => [ts, level - 0x30, text]),
    );
    expect(logged.filter((t) => t.data !== undefined).map((t) => [t.data!.tag, t.bootUs, t.level, t.text])).toEqual(
      reference.logged_messages_tagged.map(([tag, ts, level, text]) => [tag, ts, level - 0x30, text]),
    );
  });

  it('gives the info, and the text multi-info joined', () => {
    const info = new Map(ofKind('info').map((i) => [i.key, i.value]));
    for (const [key, value] of Object.entries(reference.info)) expect(info.get(key), key).toEqual(value);
    for (const [key, value] of Object.entries(reference.info_multiple)) {
      if (Array.isArray(value)) expect(info.get(key), key).toBe(value.map((pieces) => pieces.join('')).join('\n'));
      else expect(info.has(key), key).toBe(false); // binary (metadata_events)
    }
    expect(info.size).toBe(Object.keys(reference.info).length + Object.values(reference.info_multiple).filter(Array.isArray).length);
  });

  it('pairs the boot clock with GPS time', () => {
    const clocks = ofKind('clock');
    const gps = Object.values(reference.gps_clock);
    expect(clocks.length).toBe(gps.reduce((n, g) => n + g.count, 0));
    expect(clocks.length).toBeGreaterThan(0);
    const firsts = gps.flatMap((g) => (g.first ? [g.first] : [])).sort((a, b) => a[0] - b[0]);
    expect([clocks[0]!.bootUs, clocks[0]!.unixUs]).toEqual(firsts[0]);
  });

  it('gives the PX4 events as text, with the internal log level pyulog shows', () => {
    const events = ofKind('text').filter((t) => t.source === 'ulog.event');
    const expected = reference.events
      .filter(([, , , levels]) => ((levels >> 4) & 0xf) <= 7)
      .map(([ts, id, sequence, levels, args]) => ({
        kind: 'text',
        bootUs: ts,
        level: (levels >> 4) & 0xf,
        text: `event 0x${id.toString(16).padStart(8, '0')}`,
        source: 'ulog.event',
        data: { id, sequence, arguments: Array.from(Buffer.from(args, 'hex')) },
      }));
    expect(events).toEqual(expected);
    if (name === 'sample_px4_events') expect(events.length).toBe(29); // 38 events, 9 of them protocol-level
  });

  it('counts the dropouts and keeps the compressed event metadata', () => {
    const parser = createULogParser(recorder().sink);
    parser.push(bytes);
    parser.end();
    expect({ count: parser.dropouts, total_ms: parser.dropoutMs }).toEqual(reference.dropouts);
    const metadata = reference.info_multiple.metadata_events;
    if (metadata === undefined) {
      expect(parser.eventMetadataXz).toBeUndefined();
    } else {
      expect(parser.eventMetadataXz?.length).toBe((metadata as { bytes: number }).bytes);
      expect(Array.from(parser.eventMetadataXz!.subarray(0, 6))).toEqual([0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]); // xz magic
    }
  });

  it("decodes every data message to the values of @foxglove/ulog's parseMessage, flattened", () => {
    // The reader decodes 'D' payloads with its own compiled flattener (ulog.ts says why); this is the
    // proof that it reads what the library reads.
    const formats = new Map<string, MessageDefinition>();
    const subscriptions = new Map<number, MessageDefinition>();
    const expected: { name: string; values: [string, LogValue][] }[] = [];
    for (const m of frame(bytes)) {
      const text = () => new TextDecoder().decode(m.payload);
      if (m.type === 'F') {
        const definition = parseMessageDefinition(text())!;
        formats.set(definition.name, definition);
      } else if (m.type === 'A') {
        const msgId = m.payload[1]! | (m.payload[2]! << 8);
        subscriptions.set(msgId, formats.get(new TextDecoder().decode(m.payload.subarray(3)))!);
      } else if (m.type === 'D') {
        const definition = subscriptions.get(m.payload[0]! | (m.payload[1]! << 8))!;
        const view = new DataView(m.payload.buffer, m.payload.byteOffset + 2, m.payload.byteLength - 2);
        const values: [string, LogValue][] = [];
        flattenLibrary(definition, formats, parseMessage(definition, formats, view), '', values, true);
        expected.push({ name: definition.name, values });
      }
    }
    const types = new Map(ofKind('type').map((t) => [t.type.id, t.type]));
    const data = ofKind('data');
    expect(data.length).toBe(expected.length);
    const mismatches: string[] = [];
    data.forEach((call, i) => {
      const type = types.get(call.typeId)!;
      const want = expected[i]!;
      const got = type.fields.map((f, j): [string, LogValue] => [f.name, call.values[j]!]);
      const same =
        type.name === want.name && got.length === want.values.length && got.every(([n, v], j) => n === want.values[j]![0] && Object.is(v, want.values[j]![1]));
      if (!same && mismatches.length < 5) mismatches.push(`message ${i} (${type.name}): ${JSON.stringify({ got, want }, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v))}`);
    });
    expect(mismatches).toEqual([]);
  });

  it('gives the same records however the file is chunked (1 byte, odd sizes, random)', () => {
    const whole = hashingSink();
    parseChunked(bytes, whole.sink, () => bytes.length);
    const expected = whole.digest();
    for (const sizes of [() => 1, (i: number) => [3, 1, 7, 2, 65_536, 5][i % 6]!, (i: number) => (i * 7919) % 4099]) {
      const chunked = hashingSink();
      parseChunked(bytes, chunked.sink, sizes);
      expect(chunked.digest()).toBe(expected);
    }
  });
});

function flattenLibrary(
  definition: MessageDefinition,
  formats: Map<string, MessageDefinition>,
  value: unknown,
  prefix: string,
  out: [string, LogValue][],
  top: boolean,
): void {
  const record = value as Record<string, unknown>;
  for (const field of definition.fields) {
    // the library leaves out fields starting with '_' (padding)
    if (field.name.startsWith('_') || (top && field.name === 'timestamp')) continue;
    const v = record[field.name];
    const name = prefix + field.name;
    if (field.isComplex) {
      const nested = formats.get(field.type)!;
      if (field.arrayLength === undefined) flattenLibrary(nested, formats, v, `${name}.`, out, false);
      else (v as unknown[]).forEach((element, i) => flattenLibrary(nested, formats, element, `${name}[${i}].`, out, false));
    } else if (field.type === 'char' && field.arrayLength !== undefined) {
      out.push([name, (v as string).split('\0')[0]!]);
    } else if (field.arrayLength !== undefined) {
      (v as unknown[]).forEach((element, i) => out.push([`${name}[${i}]`, plain(element)]));
    } else {
      out.push([name, plain(v)]);
    }
  }
}

const plain = (v: unknown): LogValue => (typeof v === 'boolean' ? (v ? 1 : 0) : (v as LogValue));

// ---------------------------------------------------------------------------------------------------------
// Damaged files

describe('ULog corruption', () => {
  const bytes = fileOf('sample_log_small');
  const clean = frame(bytes);
  const starts = new Set(clean.map((m) => m.offset));
  const dataCount = (calls: Call[]) => calls.filter((c) => c.kind === 'data').length;
  const cleanData = clean.filter((m) => m.type === 'D');

  function overwrite(at: number, length: number, fill: (i: number) => number): Uint8Array {
    const copy = bytes.slice();
    for (let i = 0; i < length; i++) copy[at + i] = fill(i);
    return copy;
  }

  /** The reader's data equals the clean file's, less the messages inside the skipped stretches. */
  function expectAroundSkips(calls: Call[]) {
    const skips = calls.filter((c) => c.kind === 'skipped');
    expect(skips.length).toBeGreaterThan(0);
    for (const s of skips) expect(starts.has(s.offset + s.bytes) || s.offset + s.bytes === bytes.length, `resumed at a message: ${JSON.stringify(s)}`).toBe(true);
    const outside = cleanData.filter((m) => skips.every((s) => m.offset + m.length <= s.offset || m.offset >= s.offset + s.bytes));
    expect(dataCount(calls)).toBe(outside.length);
    const whole = parseAll(bytes).filter((c) => c.kind === 'data');
    const keptIndexes = cleanData.flatMap((m, i) => (outside.includes(m) ? [i] : []));
    // the messages after the last skip are the clean file's, exactly
    const mine = calls.filter((c) => c.kind === 'data');
    const tail = keptIndexes.filter((i) => cleanData[i]!.offset >= skips.at(-1)!.offset);
    expect(mine.slice(mine.length - tail.length)).toEqual(tail.map((i) => whole[i]));
  }

  it('skips bytes overwritten in the middle and reads the messages around them', () => {
    const at = Math.floor(bytes.length / 2);
    const calls = parseAll(overwrite(at, 300, () => 0xff));
    const skips = calls.filter((c) => c.kind === 'skipped');
    expect(skips.length).toBe(1);
    expect(skips[0]!.offset).toBeLessThanOrEqual(at + 300);
    expect(skips[0]!.offset + skips[0]!.bytes).toBeGreaterThanOrEqual(at + 300);
    expectAroundSkips(calls);
  });

  it('skips random garbage the same way, however chunked', () => {
    let seed = 7;
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) >>> 0) >>> 16) & 0xff;
    const damaged = overwrite(Math.floor(bytes.length / 3), 2000, random);
    const calls = parseAll(damaged);
    expectAroundSkips(calls);
    const whole = hashingSink();
    parseChunked(damaged, whole.sink, () => damaged.length);
    const bytewise = hashingSink();
    parseChunked(damaged, bytewise.sink, () => 1);
    expect(bytewise.digest()).toBe(whole.digest());
  });

  it('reads everything before a cut and reports the tail', () => {
    const message = cleanData[Math.floor(cleanData.length / 2)]!;
    for (const cut of [message.offset + 1, message.offset + 2, message.offset + 4, message.offset + message.length - 1]) {
      const calls = parseAll(bytes.subarray(0, cut));
      expect(calls.filter((c) => c.kind === 'skipped')).toEqual([
        { kind: 'skipped', offset: message.offset, bytes: cut - message.offset, reason: expect.stringContaining('truncated tail') },
      ]);
      expect(dataCount(calls)).toBe(cleanData.filter((m) => m.offset + m.length <= cut).length);
    }
    const atBoundary = parseAll(bytes.subarray(0, message.offset));
    expect(atBoundary.filter((c) => c.kind === 'skipped')).toEqual([]);
  });

  it.each([
    ['a DataFlash log', Uint8Array.from([0xa3, 0x95, 0x80, 0x80, 89, 0x46, 0x4d, 0x54, ...new Array(100).fill(0)])],
    ['random bytes', Uint8Array.from({ length: 4096 }, (_, i) => (i * 2_654_435_761) >>> 24)],
    ['a PNG', Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 0, 0, 1, 0])],
    ['a MAVLink tlog', Uint8Array.from([0, 5, 0x9c, 0x1f, 0x2f, 0x00, 0x00, 0x00, 0xfd, 9, 0, 0, 1, 1, 1, 0, 0, 0])],
  ])('refuses %s with NotThisFormatError before any sink call', (_label, file) => {
    expect(looksLikeULog(file)).toBe(false);
    for (const size of [file.length, 1]) {
      const { sink, calls } = recorder();
      const parser = createULogParser(sink);
      expect(() => {
        for (let i = 0; i < file.length; i += size) parser.push(file.subarray(i, i + size));
      }).toThrow(NotThisFormatError);
      expect(calls).toEqual([]);
    }
  });

  it('refuses an empty file and one shorter than the header', () => {
    for (const file of [new Uint8Array(0), bytes.subarray(0, 10)]) {
      const { sink, calls } = recorder();
      const parser = createULogParser(sink);
      parser.push(file);
      expect(() => parser.end()).toThrow(NotThisFormatError);
      expect(calls).toEqual([]);
    }
  });

  it('refuses incompatible flag bits it does not know, and reads any version byte (the spec leaves compatibility to the flags)', () => {
    const flagged = new ULogBuilder().flagBits(0x02).build();
    const { sink, calls } = recorder();
    expect(() => createULogParser(sink).push(flagged)).toThrow(NotThisFormatError);
    expect(calls).toEqual([]);

    const v99 = bytes.slice();
    v99[7] = 99;
    expect(dataCount(parseAll(v99))).toBe(cleanData.length);
  });

  it('arbitrary chunkings of intact and damaged files give identical records (fast-check)', () => {
    const damaged = overwrite(Math.floor(bytes.length / 4), 700, (i) => (i * 37) & 0xff);
    const expected = new Map<Uint8Array, string>();
    for (const file of [bytes, damaged]) {
      const whole = hashingSink();
      parseChunked(file, whole.sink, () => file.length);
      expected.set(file, whole.digest());
    }
    fc.assert(
      fc.property(fc.constantFrom(bytes, damaged), fc.array(fc.oneof(fc.integer({ min: 1, max: 16 }), fc.integer({ min: 1, max: 70_000 })), { minLength: 1, maxLength: 40 }), (file, sizes) => {
        const chunked = hashingSink();
        parseChunked(file, chunked.sink, (i) => sizes[i % sizes.length]!);
        expect(chunked.digest()).toBe(expected.get(file));
      }),
      { numRuns: 15 },
    );
  });
});

// ---------------------------------------------------------------------------------------------------------
// Constructed logs: what the fixtures don't carry

/** A log with one topic `t` (uint64 timestamp, float x, char[4] name, nested struct array, padding). */
function simpleLog(): ULogBuilder {
  return new ULogBuilder()
    .flagBits(0)
    .format('pt:uint64_t timestamp;int16_t v;bool ok;uint8_t[1] _padding0;')
    .format('t:uint64_t timestamp;float x;char[4] name;pt[2] pts;uint8_t[3] _padding0;')
    .param('int32_t SYS_AUTOSTART', u32(4001))
    .info('char[3] sys_name', ascii('PX4'))
    .subscribe(0, 7, 't')
    .subscribe(1, 8, 't'); // never logs: no type
}
const tPayload = (ts: number, x: number, name: string) => [
  ...u64(ts),
  ...f32(x),
  ...ascii(name.padEnd(4, '\0')),
  ...[...u64(5), 0xfe, 0xff, 1, 0],
  ...[...u64(6), 2, 0, 0, 0],
];

describe('ULog constructed logs', () => {
  it('flattens nested arrays, joins char arrays, drops padding, announces types lazily', () => {
    const calls = parseAll(simpleLog().data(7, tPayload(2000, 1.5, 'ab')).build());
    expect(calls).toEqual([
      { kind: 'param', bootUs: null, name: 'SYS_AUTOSTART', value: 4001 },
      { kind: 'info', key: 'sys_name', value: 'PX4' },
      {
        kind: 'type',
        type: {
          id: 0,
          name: 't',
          instance: 0,
          fields: [
            { name: 'x', type: 'float4' },
            { name: 'name', type: 'text' },
            { name: 'pts[0].timestamp', type: 'uint64' },
            { name: 'pts[0].v', type: 'int2' },
            { name: 'pts[0].ok', type: 'int2' },
            { name: 'pts[1].timestamp', type: 'uint64' },
            { name: 'pts[1].v', type: 'int2' },
            { name: 'pts[1].ok', type: 'int2' },
          ],
        },
      },
      { kind: 'data', typeId: 0, bootUs: 2000, values: [1.5, 'ab', 5n, -2, 1, 6n, 2, 0] },
    ]);
  });

  it('timestamps a changed parameter with the largest data timestamp seen, as pyulog (the header timestamp before any)', () => {
    const file = simpleLog()
      .param('float MPC_XY_VEL_MAX', f32(2.5))
      .data(7, tPayload(5000, 0, ''))
      .data(7, tPayload(3000, 0, ''))
      .log(4, 9000, 'a log message does not move it')
      .param('int32_t SYS_AUTOSTART', u32(4002))
      .build();
    const params = parseAll(file).filter((c) => c.kind === 'param');
    expect(params.map((p) => [p.bootUs, p.name, p.value])).toEqual([
      [null, 'SYS_AUTOSTART', 4001],
      [1000, 'MPC_XY_VEL_MAX', 2.5],
      [5000, 'SYS_AUTOSTART', 4002],
    ]);
  });

  it('gives tagged log messages their tag', () => {
    const calls = parseAll(simpleLog().log(3, 4000, 'boom', 513).build());
    expect(calls.filter((c) => c.kind === 'text')).toEqual([
      { kind: 'text', bootUs: 4000, level: 3, text: 'boom', source: 'ulog.logging', data: { tag: 513 } },
    ]);
  });

  it('skips alone a message of an unknown type and data for an unknown msg_id, merging adjacent ones', () => {
    const log = simpleLog().data(7, tPayload(2000, 1, 'a'));
    const unknownAt = log.length;
    log.message('X', [1, 2, 3, 4, 5]);
    const orphanAt = log.length;
    log.data(99, [1, 2, 3]).data(99, [4, 5, 6]);
    log.data(7, tPayload(3000, 2, 'b'));
    const calls = parseAll(log.build());
    expect(calls.filter((c) => c.kind === 'skipped')).toEqual([
      { kind: 'skipped', offset: unknownAt, bytes: 8, reason: "unknown message type 'X'" },
      { kind: 'skipped', offset: orphanAt, bytes: 16, reason: 'data for msg_id 99, which no subscription announced' },
    ]);
    expect(calls.filter((c) => c.kind === 'data').map((c) => c.bootUs)).toEqual([2000, 3000]);
  });

  it('resynchronises at a sync message after garbage', () => {
    const log = simpleLog().data(7, tPayload(2000, 1, 'a'));
    const garbageAt = log.length;
    log.raw([0x00, 0xff, 0x13, 0x44, 0x44, 0x00]).message('S', [0x2f, 0x73, 0x13, 0x20, 0x25, 0x0c, 0xbb, 0x12]);
    log.data(7, tPayload(3000, 2, 'b'));
    const calls = parseAll(log.build());
    expect(calls.filter((c) => c.kind === 'skipped')).toEqual([
      { kind: 'skipped', offset: garbageAt, bytes: 6, reason: expect.stringContaining('corrupt message header') },
    ]);
    expect(calls.filter((c) => c.kind === 'data').map((c) => c.bootUs)).toEqual([2000, 3000]);
  });

  it('continues at the appended-data offset, dropping the unfinished message before it', () => {
    // Offsets are only known once the definitions are written: build twice.
    const build = (appendedAt: number) => {
      const log = new ULogBuilder()
        .flagBits(1, [appendedAt])
        .format('t:uint64_t timestamp;float x;char[4] name;pt[2] pts;uint8_t[3] _padding0;')
        .format('pt:uint64_t timestamp;int16_t v;bool ok;uint8_t[1] _padding0;')
        .subscribe(0, 7, 't')
        .data(7, tPayload(2000, 1, 'a'));
      const cutAt = log.length;
      log.raw([50, 0, 0x44, 7, 0, 1, 2, 3]); // a data message the logger never finished
      const at = log.length;
      log.data(7, tPayload(3000, 2, 'b'));
      return { file: log.build(), cutAt, at };
    };
    const { at } = build(0);
    const { file, cutAt } = build(at);
    const calls = parseAll(file);
    expect(calls.filter((c) => c.kind === 'skipped')).toEqual([
      { kind: 'skipped', offset: cutAt, bytes: at - cutAt, reason: 'unfinished message before appended data' },
    ]);
    expect(calls.filter((c) => c.kind === 'data').map((c) => c.bootUs)).toEqual([2000, 3000]);
  });
});
