import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURE_DIR } from '@sortie/contracts/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildSyntheticDataFlash, SYNTHETIC_FILE } from './dataflash-synthetic.ts';
import { createDataFlashParser, looksLikeDataFlash } from './dataflash.ts';
import { type LogColumnType, type LogMessageType, type LogSink, type LogValue, NotThisFormatError } from './records.ts';

// The real log sits beside the MAVLink captures (../shared/fixtures/dataflash); the synthetic one is built
// by dataflash-synthetic.ts. Their reference digests come from pymavlink's DFReader through
// scripts/reference/dataflash-digest.py (which documents the digest).
const REAL_FILE = join(FIXTURE_DIR, '..', 'dataflash', 'ardusub-small.BIN');
const testdata = (name: string) => new URL(`./testdata/${name}`, import.meta.url);
const real = new Uint8Array(readFileSync(REAL_FILE));
const synthetic = new Uint8Array(readFileSync(SYNTHETIC_FILE));

interface Reference {
  messages: number;
  schema: Record<string, number>;
  types: Record<string, { count: number; bootUs: string; fields: { name: string; unit: string; sha256: string }[] }>;
  params: [number | null, string, number | 'nan'][];
  texts: [number, string][];
  events: [number, number][];
  errors: [number, number, number][];
  versions: Record<string, string | number>[];
  gpsClock: { bootUs: number; unixUs: number } | null;
}
const reference = (name: string): Reference => JSON.parse(readFileSync(testdata(name), 'utf8')) as Reference;

// ---------------------------------------------------------------------------------------------------
// Recording what the reader calls

/** Every sink call in order, values copied (the reader reuses its arrays); data() names its type `NAME[n]`. */
type Call =
  | ['type', LogMessageType]
  | ['data', string, number, LogValue[]]
  | ['text', number | null, number, string, string, Record<string, unknown> | undefined]
  | ['param', number | null, string, number]
  | ['info', string, string | number]
  | ['clock', number, number]
  | ['skipped', number, number, string];

const keyOf = (t: LogMessageType) => (t.instance === 0 ? t.name : `${t.name}[${t.instance}]`);

function recorder(): { sink: LogSink; calls: Call[] } {
  const calls: Call[] = [];
  const types: LogMessageType[] = [];
  const sink: LogSink = {
    type: (t) => {
      expect(t.id).toBe(types.length);
      types.push(t);
      calls.push(['type', t]);
    },
    data: (id, bootUs, values) => calls.push(['data', keyOf(types[id]!), bootUs, [...values]]),
    text: (bootUs, level, text, source, data) => calls.push(['text', bootUs, level, text, source, data]),
    param: (bootUs, name, value) => calls.push(['param', bootUs, name, value]),
    info: (key, value) => calls.push(['info', key, value]),
    clock: (bootUs, unixUs) => calls.push(['clock', bootUs, unixUs]),
    skipped: (offset, bytes, reason) => calls.push(['skipped', offset, bytes, reason]),
  };
  return { sink, calls };
}

/** Parses `bytes` pushed in chunks of the sizes given in turn (cycling), the chunk reused after each push. */
function parse(bytes: Uint8Array, sizes: readonly number[] = [bytes.length || 1]): Call[] {
  const { sink, calls } = recorder();
  const parser = createDataFlashParser(sink);
  const reused = new Uint8Array(Math.max(...sizes));
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const size = sizes[i % sizes.length]!;
    // Copy into one reused buffer, then scribble over it: the reader may keep no reference to a chunk.
    const chunk = reused.subarray(0, Math.min(size, bytes.length - at));
    chunk.set(bytes.subarray(at, at + chunk.length));
    parser.push(chunk);
    chunk.fill(0x5a);
    at += chunk.length;
    if (parser.offset > at) throw new Error(`offset ${parser.offset} past the ${at} bytes pushed`);
  }
  parser.end();
  expect(parser.offset).toBe(bytes.length);
  return calls;
}

/** Deterministic chunk sizes (mulberry32), 1 byte to 4 KB. */
function randomSizes(seed: number, count = 500): number[] {
  let s = seed;
  const next = () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return Array.from({ length: count }, () => 1 + Math.floor(next() ** 3 * 4096));
}

const of = <K extends Call[0]>(calls: Call[], kind: K) => calls.filter((c): c is Extract<Call, [K, ...unknown[]]> => c[0] === kind);

// ---------------------------------------------------------------------------------------------------
// The digest of dataflash-digest.py, computed from the calls

const float64 = new DataView(new ArrayBuffer(8));
function canonical(value: LogValue, type: LogColumnType): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'bigint') return value.toString();
  if (type !== 'float4' && type !== 'float8') {
    expect(Number.isInteger(value)).toBe(true);
    return String(value);
  }
  if (Number.isNaN(value)) return 'nan';
  float64.setFloat64(0, value);
  return Array.from(new Uint8Array(float64.buffer), (b) => b.toString(16).padStart(2, '0')).join('');
}

const sha256 = (texts: string[]) => createHash('sha256').update(texts.join('\n')).digest('hex');

/** DFReader names units our reader leaves out: none (''), the instance field's, and '?' (UNKNOWN, maybe prefixed). */
const expectedUnit = (unit: string) => (unit === '' || unit === 'instance' || unit.endsWith('UNKNOWN') ? undefined : unit);

function digest(calls: Call[]) {
  const types = new Map<string, { type: LogMessageType; boots: string[]; columns: string[][] }>();
  for (const call of calls) {
    if (call[0] === 'type') types.set(keyOf(call[1]), { type: call[1], boots: [], columns: call[1].fields.map(() => []) });
    if (call[0] === 'data') {
      const entry = types.get(call[1])!;
      entry.boots.push(String(call[2]));
      call[3].forEach((v, i) => entry.columns[i]!.push(canonical(v, entry.type.fields[i]!.type)));
    }
  }
  return Object.fromEntries(
    [...types].map(([key, { type, boots, columns }]) => [
      key,
      {
        count: boots.length,
        bootUs: sha256(boots),
        fields: type.fields.map((f, i) => ({ name: f.name, unit: f.unit, sha256: sha256(columns[i]!) })),
      },
    ]),
  );
}

function expectLikeReference(calls: Call[], ref: Reference): void {
  const ours = digest(calls);
  // Same types, announced in the order DFReader first returns them.
  expect(Object.keys(ours)).toEqual(Object.keys(ref.types));
  for (const [key, r] of Object.entries(ref.types)) {
    expect({ key, ...ours[key] }).toEqual({ key, ...r, fields: r.fields.map((f) => ({ ...f, unit: expectedUnit(f.unit) })) });
  }
  // Schema messages configure the reader and are not data; every other message is.
  const schemaCount = Object.values(ref.schema).reduce((a, b) => a + b, 0);
  expect(of(calls, 'data').length + schemaCount).toBe(ref.messages);
  expect(of(calls, 'type').map((c) => c[1].name)).not.toContain('FMT');

  expect(of(calls, 'param').map(([, boot, name, value]) => [boot, name, Number.isNaN(value) ? 'nan' : value])).toEqual(ref.params);
  const texts = (source: string) => of(calls, 'text').filter((c) => c[4] === source);
  expect(texts('dataflash.MSG').map(([, boot, level, text]) => [boot, text, level])).toEqual(ref.texts.map(([b, t]) => [b, t, 6]));
  expect(texts('dataflash.EV').map(([, boot, , , , data]) => [boot, data?.['id']])).toEqual(ref.events);
  expect(texts('dataflash.ERR').map(([, boot, level, , , data]) => [boot, data?.['subsys'], data?.['ecode'], level])).toEqual(
    ref.errors.map((e) => [...e, 3]),
  );
  const clocks = of(calls, 'clock');
  expect(clocks[0] ? { bootUs: clocks[0][1], unixUs: clocks[0][2] } : null).toEqual(ref.gpsClock);
  const ver = of(calls, 'info').filter(([, key]) => key.startsWith('ver.'));
  expect(ver.map(([, key, value]) => [key.slice(4), value])).toEqual(
    ref.versions.flatMap((v) => Object.entries(v).filter(([, value]) => value !== '')),
  );
  expect(of(calls, 'skipped')).toEqual([]);
}

// ---------------------------------------------------------------------------------------------------

describe('DataFlash reader, checked against pymavlink DFReader', () => {
  const files = [
    { name: 'ardusub-small.BIN (real ArduSub 4.1 log)', bytes: real, ref: reference('ardusub-small.dfreader.json') },
    { name: 'dataflash-synthetic.BIN', bytes: synthetic, ref: reference('dataflash-synthetic.dfreader.json') },
  ];

  for (const { name, bytes, ref } of files) {
    it(`${name}: types, counts, boot times, values and units as DFReader reads them`, () => {
      expectLikeReference(parse(bytes), ref);
    });

    it(`${name}: the same records whatever the chunking (1 byte, random sizes)`, () => {
      const whole = parse(bytes);
      expect(parse(bytes, [1])).toEqual(whole);
      expect(parse(bytes, randomSizes(1))).toEqual(whole);
      expect(parse(bytes, randomSizes(2).map((n) => n * 64))).toEqual(whole);
    });
  }

  it('the real log: 7,510 messages of 39 types, its firmware line, no GPS clock', () => {
    const ref = reference('ardusub-small.dfreader.json');
    expect(ref.messages).toBe(7510);
    // 39 message names with the schema ones; MAG, BARO and MAV have more than one instance.
    expect(new Set([...Object.keys(ref.types).map((key) => key.replace(/\[\d+\]$/, '')), ...Object.keys(ref.schema)]).size).toBe(39);
    expect(Object.keys(ref.types).filter((key) => key.endsWith(']'))).toEqual(['MAG[1]', 'BARO[1]', 'MAV[1]', 'MAV[2]']);
    const calls = parse(real);
    expect(of(calls, 'info')).toEqual([['info', 'firmware', 'ArduSub V4.1.0 (89639005)']]);
    expect(of(calls, 'clock')).toEqual([]);
    const imu = of(calls, 'type').find(([, t]) => t.name === 'IMU')![1];
    expect(imu.fields.slice(0, 3)).toEqual([
      { name: 'I', type: 'int2' },
      { name: 'GyrX', type: 'float4', unit: 'rad/s' },
      { name: 'GyrY', type: 'float4', unit: 'rad/s' },
    ]);
    expect(of(calls, 'type').filter(([, t]) => t.name === 'MAV').map(([, t]) => t.instance)).toEqual([0, 1, 2]);
  });

  it('the synthetic log: GPS clock, firmware, VER, ERR and EV texts, parameters before any timestamp', () => {
    const calls = parse(synthetic);
    // Instance 0 with a 3D fix (or better) and a week: DFReader's _gpsTimeToTime, in integer µs.
    expect(of(calls, 'clock')).toEqual([
      ['clock', 2000022, (315964800 + 2300 * 604800 - 18) * 1e6 + 345600123 * 1000],
      ['clock', 2000023, (315964800 + 2300 * 604800 - 18) * 1e6 + 345600323 * 1000],
    ]);
    const info = of(calls, 'info');
    expect(info).toContainEqual(['info', 'firmware', 'ArduCopter V4.5.7 (a1b2c3d4)']);
    expect(info.filter(([, key]) => key === 'firmware')).toHaveLength(1);
    expect(info).toContainEqual(['info', 'ver.GH', 0xa1b2c3d4]);
    expect(of(calls, 'text').filter(([, , , , source]) => source !== 'dataflash.MSG')).toEqual([
      ['text', 2000025, 3, 'ERR COMPASS code 1', 'dataflash.ERR', { subsys: 3, ecode: 1 }],
      ['text', 2000026, 3, 'ERR subsystem 99 code 0 (resolved)', 'dataflash.ERR', { subsys: 99, ecode: 0 }],
      ['text', 2000027, 6, 'ARMED', 'dataflash.EV', { id: 10, name: 'ARMED' }],
      ['text', 2000028, 6, 'EV 200', 'dataflash.EV', { id: 200 }],
    ]);
    expect(of(calls, 'param').slice(0, 2)).toEqual([
      ['param', null, 'SYSID_THISMAV', 1],
      ['param', null, 'ARMING_CHECK', 0.5],
    ]);
    // A message without a clock before any timestamp is at boot time 0; an old TimeMS message sets the clock.
    const data = of(calls, 'data');
    expect(data.find(([, key]) => key === 'NOTM')!.slice(2)).toEqual([0, [7, 0.25]]);
    expect(data.filter(([, key]) => key === 'OLDT' || key === 'NOTM' || key === 'ACC1').map(([, key, boot]) => [key, boot])).toEqual([
      ['NOTM', 0],
      ['OLDT', 2100000],
      ['NOTM', 2100000],
      ['ACC1', 2100000],
    ]);
    // A text instance field (NVF's Name) does not split the type.
    expect(of(calls, 'type').filter(([, t]) => t.name === 'NVF').map(([, t]) => [t.instance, t.fields.map((f) => f.name)])).toEqual([
      [0, ['Name', 'Value']],
    ]);
    const types = new Map(of(calls, 'type').map(([, t]) => [keyOf(t), t]));
    expect(types.get('ALL2')!.fields.map((f) => f.type)).toEqual(['float8', 'int2', 'int8', 'uint64', ...new Array(32).fill('int2'), 'float4']);
    expect(types.get('ALL1')!.fields.map((f) => f.type)).toEqual(
      ['int2', 'int2', 'int2', 'int4', 'int4', 'int8', 'float4', 'float8', 'text', 'text', 'text', 'float8', 'float8', 'float8', 'float8'],
    );
    expect(types.get('CURR')!.fields).toEqual([
      { name: 'Tot', type: 'float4', unit: '3.6 A.s' },
      { name: 'Y', type: 'float4', unit: '1e-05 m' },
    ]);
  });

  it('a log restarted in the same file (its FMTs repeated) keeps its types', () => {
    const twice = new Uint8Array(real.length * 2);
    twice.set(real);
    twice.set(real, real.length);
    const once = parse(real);
    const calls = parse(twice, [100_000]);
    expect(of(calls, 'type')).toEqual(of(once, 'type'));
    expect(of(calls, 'data')).toEqual([...of(once, 'data'), ...of(once, 'data')]);
    expect(of(calls, 'skipped')).toEqual([]);
  });

  it('the checked-in synthetic log is what dataflash-synthetic.ts builds', () => {
    expect(buildSyntheticDataFlash()).toEqual(synthetic);
  });
});

// ---------------------------------------------------------------------------------------------------

/** Message boundaries of a clean log, from its FMT messages' lengths (independent of the reader). */
function messageIndex(bytes: Uint8Array): { offset: number; type: number; length: number; name: string }[] {
  const formats = new Map<number, { length: number; name: string }>([[0x80, { length: 89, name: 'FMT' }]]);
  const out: { offset: number; type: number; length: number; name: string }[] = [];
  for (let at = 0; at < bytes.length; ) {
    expect([bytes[at], bytes[at + 1]]).toEqual([0xa3, 0x95]);
    const type = bytes[at + 2]!;
    if (type === 0x80) {
      const name = String.fromCharCode(...bytes.subarray(at + 5, at + 9)).replace(/\0.*/, '');
      formats.set(bytes[at + 3]!, { length: bytes[at + 4]!, name });
    }
    const { length, name } = formats.get(type)!;
    out.push({ offset: at, type, length, name });
    at += length;
  }
  return out;
}

const withoutSkips = (calls: Call[]) => calls.filter((c) => c[0] !== 'skipped');
const SCHEMA = new Set(['FMT', 'FMTU', 'UNIT', 'MULT']);

describe('DataFlash reader on damaged files', () => {
  const index = messageIndex(real);
  const clean = parse(real);
  const middle = index.findIndex((m, i) => i > index.length / 2 && m.name === 'IMU');
  const victim = index[middle]!;
  /** The data call of the victim: data calls come one per non-schema message, in order. */
  const victimData = of(clean, 'data')[index.slice(0, middle).filter((m) => !SCHEMA.has(m.name)).length]!;

  it('bytes overwritten over a message header: that message is skipped, everything around it read', () => {
    const damaged = real.slice();
    damaged.set([0x00, 0x11, 0x22, 0x33], victim.offset);
    for (const sizes of [undefined, [1], randomSizes(3)]) {
      const calls = parse(damaged, sizes);
      expect(of(calls, 'skipped')).toEqual([
        ['skipped', victim.offset, victim.length, 'no message header (A3 95) but 00 11; resynchronised at the next message header'],
      ]);
      expect(of(calls, 'data')).toHaveLength(of(clean, 'data').length - 1);
      expect(withoutSkips(calls)).toEqual(clean.filter((c) => c !== victimData));
    }
  });

  it('a message type without a FMT: skipped up to the next message header', () => {
    const defined = new Set(index.filter((m) => m.name === 'FMT').map((m) => real[m.offset + 3]));
    const undefinedType = [...Array(256).keys()].find((t) => !defined.has(t))!;
    const damaged = real.slice();
    damaged[victim.offset + 2] = undefinedType;
    const calls = parse(damaged);
    expect(of(calls, 'skipped')).toEqual([
      ['skipped', victim.offset, victim.length, `message type ${undefinedType} has no FMT; resynchronised at the next message header`],
    ]);
    expect(withoutSkips(calls)).toEqual(clean.filter((c) => c !== victimData));
  });

  it('a FMT with a bad length: the FMT and every message of its type skipped, nothing else lost', () => {
    const du32 = index.filter((m) => m.name === 'DU32');
    const fmt = index.find((m) => m.name === 'FMT' && real[m.offset + 3] === du32[0]!.type)!;
    const damaged = real.slice();
    damaged[fmt.offset + 4]! += 1;
    for (const sizes of [undefined, [1], randomSizes(4)]) {
      const calls = parse(damaged, sizes);
      const skipped = of(calls, 'skipped');
      expect(skipped[0]).toEqual(['skipped', fmt.offset, 89, "bad FMT for type 4 (DU32): length 17 but format 'QBI' makes 16"]);
      // The DU32 messages are skipped as bytes of an unknown type (adjacent ones in one stretch).
      expect(skipped.slice(1).reduce((n, [, , bytes]) => n + bytes, 0)).toBe(du32.reduce((n, m) => n + m.length, 0));
      for (const [, offset, , reason] of skipped.slice(1)) {
        expect(du32.map((m) => m.offset)).toContain(offset);
        expect(reason).toBe('message type 4 has no FMT; resynchronised at the next message header');
      }
      // Type ids after DU32's would shift, so compare by type name.
      const named = (cs: Call[]) => withoutSkips(cs).map((c) => (c[0] === 'type' ? ['type', keyOf(c[1]), c[1].fields] : c));
      expect(named(calls)).toEqual(named(clean).filter((c) => !(c[0] === 'data' && c[1] === 'DU32') && !(c[0] === 'type' && c[1] === 'DU32')));
    }
  });

  it('a copy cut in the middle of a message: every complete message before the cut read, the tail reported', () => {
    const cut = victim.offset + Math.floor(victim.length / 2);
    const before = parse(real.subarray(0, victim.offset));
    for (const sizes of [undefined, [1], randomSizes(5)]) {
      expect(parse(real.subarray(0, cut), sizes)).toEqual([
        ...before,
        ['skipped', victim.offset, cut - victim.offset, `truncated tail: IMU message of ${victim.length} bytes, ${cut - victim.offset} present`],
      ]);
    }
    expect(parse(real.subarray(0, victim.offset + 2))).toEqual([
      ...before,
      ['skipped', victim.offset, 2, 'truncated tail: 2 bytes, too few for a message header'],
    ]);
  });

  it('garbage after the last message: reported to the end of the file', () => {
    const padded = new Uint8Array(real.length + 300);
    padded.set(real);
    expect(parse(padded, [1000])).toEqual([
      ...clean,
      ['skipped', real.length, 300, 'no message header (A3 95) but 00 00; no message header after it'],
    ]);
  });

  it('arbitrary chunkings of a damaged file yield identical records (property)', () => {
    // The synthetic log with 10 bytes of garbage spliced in the middle and its last message cut.
    const damaged = new Uint8Array(synthetic.length + 10 - 5);
    const half = messageIndex(synthetic)[40]!.offset + 7;
    damaged.set(synthetic.subarray(0, half));
    damaged.set([1, 2, 3, 0xa3, 0x95, 0xfe, 0xa3, 0xa3, 0x95, 9], half);
    damaged.set(synthetic.subarray(half, synthetic.length - 5), half + 10);
    const whole = parse(damaged);
    expect(of(whole, 'skipped').length).toBeGreaterThanOrEqual(2);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 40 }), (sizes) => {
        expect(parse(damaged, sizes)).toEqual(whole);
      }),
      { numRuns: 300 },
    );
  });

  it('arbitrary chunkings of the real log yield identical records (property)', () => {
    const whole = clean;
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 70_000 }), { minLength: 1, maxLength: 20 }), (sizes) => {
        expect(parse(real, sizes)).toEqual(whole);
      }),
      { numRuns: 25 },
    );
  });
});

describe('DataFlash reader refusing other files', () => {
  const png = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);
  const ulog = Uint8Array.from([0x55, 0x4c, 0x6f, 0x67, 0x01, 0x12, 0x35, 0x01, 0, 0, 0, 0, 0, 0, 0, 0]);
  const random = Uint8Array.from(randomSizes(9, 64), (n) => n & 0xff);
  random[0] = 0x17;
  const notFmt = Uint8Array.from([0xa3, 0x95, 0x81, 0, 0, 0]);

  for (const [name, bytes] of [['PNG', png], ['ULog', ulog], ['random bytes', random], ['a DataFlash header that is not FMT', notFmt]] as const) {
    it(`${name}: NotThisFormatError from push(), nothing reaches the sink`, () => {
      for (const size of [bytes.length, 1]) {
        const { sink, calls } = recorder();
        const parser = createDataFlashParser(sink);
        expect(() => {
          for (let at = 0; at < bytes.length; at += size) parser.push(bytes.subarray(at, at + size));
        }).toThrow(NotThisFormatError);
        expect(() => parser.end()).toThrow(NotThisFormatError);
        expect(calls).toEqual([]);
      }
      expect(looksLikeDataFlash(bytes)).toBe(false);
    });
  }

  it('an empty file, or one too short for a header: NotThisFormatError from end()', () => {
    for (const bytes of [new Uint8Array(0), Uint8Array.from([0xa3]), Uint8Array.from([0xa3, 0x95])]) {
      const { sink, calls } = recorder();
      const parser = createDataFlashParser(sink);
      parser.push(bytes);
      expect(() => parser.end()).toThrow(NotThisFormatError);
      expect(calls).toEqual([]);
    }
  });

  it('looksLikeDataFlash: a FMT message header', () => {
    expect(looksLikeDataFlash(real.subarray(0, 16))).toBe(true);
    expect(looksLikeDataFlash(Uint8Array.from([0xa3, 0x95, 0x80]))).toBe(true);
    expect(looksLikeDataFlash(Uint8Array.from([0xa3, 0x95]))).toBe(false);
  });
});
