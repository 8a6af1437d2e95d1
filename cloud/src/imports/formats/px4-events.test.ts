/**
 * PX4 event texts against libevents' Python parser as pyulog runs it. testdata/sample_px4_events.events.json
 * (scripts/reference/px4-events-texts.py) has every event of the fixture log with pyulog's name and text,
 * and every event the log's metadata defines rendered with several argument patterns; the hand-made
 * definitions below cover the message syntax PX4's own messages do not use, their expected texts taken
 * from the same Python parser. Pure: reads committed files only.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadPx4EventCatalog, px4EventCatalogFromJson, Px4EventCatalogError, type Px4EventCatalog } from './px4-events.ts';
import type { LogLevel, LogSink } from './records.ts';
import { createULogParser } from './ulog.ts';

const fixtureDir = (() => {
  const besideRepo = fileURLToPath(new URL('../../../../../shared/fixtures/ulog', import.meta.url));
  return existsSync(besideRepo) ? besideRepo : '/work/shared/fixtures/ulog';
})();

interface Reference {
  events: {
    timestamp: number;
    id: number;
    log_levels: number;
    arguments: string;
    level: number;
    name: string | null;
    group: string | null;
    text: string | null;
    shown: boolean;
  }[];
  /** [id, arguments hex, name, text or null where the Python parser raised] */
  catalog: [number, string, string, string | null][];
  /** The message of the made-up event (float32, int64, uint64 arguments) and its texts: [arguments hex, text]. */
  numbers_message: string;
  numbers: [string, string][];
}

const reference: Reference = JSON.parse(
  readFileSync(fileURLToPath(new URL('./testdata/sample_px4_events.events.json', import.meta.url)), 'utf8'),
);
const hex = (text: string) => Uint8Array.from(Buffer.from(text, 'hex'));

/** The fixture read by the ULog reader, as the importer does: its event texts and the compressed metadata. */
function readFixture() {
  const events: { bootUs: number | null; level: LogLevel; data: { id: number; arguments: number[] } }[] = [];
  const sink: LogSink = {
    type() {},
    data() {},
    text(bootUs, level, _text, source, data) {
      if (source === 'ulog.event') events.push({ bootUs, level, data: data as { id: number; arguments: number[] } });
    },
    param() {},
    info() {},
    clock() {},
    skipped() {},
  };
  const parser = createULogParser(sink);
  parser.push(new Uint8Array(readFileSync(`${fixtureDir}/sample_px4_events.ulg`)));
  parser.end();
  return { events, xz: parser.eventMetadataXz! };
}

describe('PX4 event catalog from a log', async () => {
  const fixture = readFixture();
  const catalog: Px4EventCatalog = await loadPx4EventCatalog(fixture.xz);

  it("renders every event of the log to pyulog's name, text and level", () => {
    expect(reference.events).toHaveLength(38);
    for (const event of reference.events) {
      const rendered = catalog.render(event.id, hex(event.arguments), event.log_levels);
      if (event.level > 7) {
        expect(rendered).toBeUndefined(); // protocol level: not logged text
        continue;
      }
      expect(rendered).toEqual({ name: event.name, text: event.text, level: event.level, group: event.group });
    }
    // The ones pyulog's event list shows (group "default"), as a reader would see them.
    expect(reference.events.filter((e) => e.shown).map((e) => catalog.render(e.id, hex(e.arguments), e.log_levels)?.text)).toEqual([
      'logging: opening log file 2024-3-18/14_49_10.ulg',
      'Armed by internal command',
      'Using default takeoff altitude: 2.50 m',
      'Takeoff detected',
      'RTL: start return at 491 m (3 m above destination)',
      'RTL: land at destination',
      'Landing detected',
      'Disarmed by landing',
    ]);
  });

  it('renders the texts the ULog reader reports, from their id, arguments and level', () => {
    // What the importer has after the parse: text(…, 'ulog.event', {id, sequence, arguments}) with the
    // internal level; the level goes back into the log_levels byte's high nibble.
    const logged = reference.events.filter((e) => e.level <= 7);
    expect(fixture.events).toHaveLength(logged.length);
    fixture.events.forEach(({ bootUs, level, data }, i) => {
      expect(bootUs).toBe(logged[i]!.timestamp);
      expect(catalog.render(data.id, data.arguments, level << 4)?.text).toBe(logged[i]!.text);
    });
  });

  it('renders every event the metadata defines as the Python parser does, for many argument values', () => {
    // Enums and bitfields (known and unknown values), floats of every size incl. NaN, infinity and -0,
    // 64-bit integers, units and precisions.
    expect(reference.catalog.length).toBeGreaterThan(1000);
    expect(catalog.size).toBe(new Set(reference.catalog.map(([id]) => id)).size);
    const mismatches = reference.catalog
      .filter(([, , , text]) => text !== null)
      .map(([id, args, name, text]) => ({ id, args, expected: { name, text }, got: catalog.render(id, hex(args), 0x60) }))
      .filter(({ expected, got }) => got?.name !== expected.name || got?.text !== expected.text);
    expect(mismatches).toEqual([]);
  });

  it('gives undefined for an id the metadata does not define, and for protocol and disabled levels', () => {
    expect(catalog.render(0xdeadbeef, new Uint8Array(25), 0x66)).toBeUndefined();
    expect(catalog.render(0, new Uint8Array(25), 0x66)).toBeUndefined();
    const known = reference.events.find((e) => e.shown)!;
    expect(catalog.render(known.id, hex(known.arguments), 0x86)).toBeUndefined();
    expect(catalog.render(known.id, hex(known.arguments), 0x96)).toBeUndefined();
    expect(catalog.render(known.id, hex(known.arguments), 0x76)?.level).toBe(7);
    // The level is the internal one (high nibble), not the external one.
    expect(catalog.render(known.id, hex(known.arguments), 0x3f)?.level).toBe(3);
  });
});

describe('PX4 event metadata that cannot be read', () => {
  const xz = readFixture().xz;

  it('rejects a corrupt, truncated, empty or non-xz input with a clear error', async () => {
    const flipped = xz.slice();
    flipped[3000]! ^= 0xff;
    await expect(loadPx4EventCatalog(flipped)).rejects.toThrow(/PX4 event metadata: cannot decompress xz: corrupt data/);
    await expect(loadPx4EventCatalog(xz.subarray(0, 5000))).rejects.toThrow(/cannot decompress xz: truncated data/);
    await expect(loadPx4EventCatalog(new Uint8Array(0))).rejects.toThrow(/PX4 event metadata: empty/);
    await expect(loadPx4EventCatalog(new TextEncoder().encode('{"version": 2}'))).rejects.toThrow(/cannot decompress xz: not xz data/);
    await expect(loadPx4EventCatalog(flipped)).rejects.toBeInstanceOf(Px4EventCatalogError);
    // The decoder is usable again after failures (xz-decompress serialises its users with a lock).
    expect((await loadPx4EventCatalog(xz)).size).toBeGreaterThan(300);
  });

  it('rejects xz that does not hold a libevents definitions JSON', async () => {
    // Python: lzma.compress(b'this is not json')
    const notJson = hex(
      'fd377a585a000004e6d6b4460200210116000000742fe5a301000f74686973206973206e6f74206a736f6e00e4937dda8776557500012810e50b6c601fb6f37d010000000004595a',
    );
    await expect(loadPx4EventCatalog(notJson)).rejects.toThrow(/PX4 event metadata: not JSON after decompression/);
    expect(() => px4EventCatalogFromJson({ components: {} })).toThrow(/unexpected version null/);
    expect(() => px4EventCatalogFromJson({ version: 0 })).toThrow(Px4EventCatalogError);
    expect(() => px4EventCatalogFromJson([])).toThrow(/not a JSON object/);
  });
});

describe('PX4 event numbers', () => {
  it('formats floats and 64-bit integers as Python does, with and without a precision', () => {
    // Python's repr (shortest digits, exponent below 1e-4 and from 1e16), "{:.Nf}" (exact value, ties
    // to even, sign kept on zero), integers converted to a double for a precision.
    const catalog = px4EventCatalogFromJson({
      version: 2,
      components: {
        '1': {
          namespace: 'test',
          event_groups: {
            default: {
              events: {
                '1': {
                  name: 'numbers',
                  message: reference.numbers_message,
                  arguments: [
                    { type: 'float', name: 'a' },
                    { type: 'int64_t', name: 'b' },
                    { type: 'uint64_t', name: 'c' },
                  ],
                },
              },
            },
          },
        },
      },
    });
    expect(reference.numbers.length).toBeGreaterThan(200);
    const mismatches = reference.numbers
      .map(([args, expected]) => ({ args, expected, got: catalog.render((1 << 24) | 1, hex(args), 0x60)?.text }))
      .filter(({ expected, got }) => got !== expected);
    expect(mismatches).toEqual([]);
  });
});

describe('PX4 event message syntax', () => {
  // Hand-made definitions for what PX4's messages do not use; every expected text below is what
  // libevents' Python parser (profile "dev", pyulog's settings) gives for the same definitions and bytes.
  const catalog = px4EventCatalogFromJson({
    version: 2,
    components: {
      '1': {
        namespace: 'px4',
        enums: {
          mode_t: { type: 'uint8_t', entries: { '0': { name: 'a', description: 'Manual' }, '3': { name: 'b', description: 'Hold' } } },
          bits_t: {
            type: 'uint16_t',
            is_bitfield: true,
            separator: ', ',
            entries: { '1': { name: 'x', description: 'GPS' }, '4': { name: 'y', description: 'Baro' } },
          },
          big_t: { type: 'uint64_t', entries: { '18446744073709551615': { name: 'max', description: 'All' } } },
        },
        event_groups: {
          default: {
            events: {
              '1': { name: 'escapes', message: '  \\<not a tag\\> \\{1\\} back\\\\slash {1}  ' },
              '2': {
                name: 'tags',
                message:
                  'A<profile name="dev"> dev {1}</profile><profile name="!dev"> normal</profile><profile name="normal"> n2</profile> <a href="https://x">link {1}</a> <a>https://y</a> <param>COM_ARM</param> <b>bold</b> < {9} {0} {1:.x} {1 } a<c end',
                arguments: [{ type: 'uint8_t', name: 'a' }],
              },
              '3': {
                name: 'numbers',
                message: '{1:.2} {1:.0} {1} {2} {2:.1m} {3} {4:.3m^2} {5}C {5:.1C} {6m_v} {6:.0m_v} {1:.1m/s}',
                arguments: [
                  { type: 'float', name: 'a' },
                  { type: 'float', name: 'b' },
                  { type: 'int8_t', name: 'c' },
                  { type: 'int16_t', name: 'd' },
                  { type: 'int64_t', name: 'e' },
                  { type: 'uint32_t', name: 'f' },
                ],
              },
              '4': {
                name: 'enums',
                message: 'mode {1}, {2}, sensors {3}, none [{4}], {5} {6:.1}',
                arguments: [
                  { type: 'mode_t', name: 'a' },
                  { type: 'px4::mode_t', name: 'b' },
                  { type: 'bits_t', name: 'c' },
                  { type: 'bits_t', name: 'd' },
                  { type: 'big_t', name: 'e' },
                  { type: 'uint8_t', name: 'f' },
                ],
              },
              '6': { name: 'unknown_enum', message: '{1}', arguments: [{ type: 'nope_t', name: 'a' }] },
              '7': { name: 'too_long', message: '{1}', arguments: Array.from({ length: 4 }, () => ({ type: 'uint64_t', name: 'a' })) },
              '8': { name: 'huge_precision', message: 'x {1:.1000} {1:.100}', arguments: [{ type: 'uint8_t', name: 'a' }] },
              '9': { name: 'huge_message', message: '<a'.repeat(10_000) },
            },
          },
          other: {
            events: { '1': { name: 'shadowed', message: 'never' }, '5': { name: 'in_other', message: 'other group' } },
          },
        },
      },
    },
  });
  const render = (subId: number, args: string) => catalog.render((1 << 24) | subId, hex(args.padEnd(50, '0')), 0x66);

  it('takes escaped characters literally and trims the result', () => {
    expect(render(1, '')?.text).toBe('<not a tag> {1} back\\slash {1}');
  });

  it('keeps the dev profile, link and parameter texts, and drops other tags', () => {
    expect(render(2, '07')?.text).toBe('A dev 7 link {1} https://y COM_ARM  < {9} {0} {1:.x} {1 } a<c end');
  });

  it('formats numbers as Python does: repr, fixed decimals with ties to even, units', () => {
    expect(render(3, '0000003eacc52737fbd4fe0000000000ffffff00286bee')?.text).toBe(
      '0.12 0 0.125 9.999999747378752e-06 0.0 m -5 -300.000 m^2 -1099511627776C -1099511627776.0 C 4000000000 m 4000000000 m 0.1 m/s',
    );
  });

  it('shows enum values by name, bitfields bit by bit with their separator, 64-bit values exactly', () => {
    expect(render(4, '030917000000ffffffffffffffffc8')?.text).toBe(
      'mode Hold, (unknown: 9), sensors GPS, (unknown: 23), Baro, (unknown: 23), none [], All 200.0',
    );
  });

  it('finds an id in the first group that has it, and reports the group', () => {
    expect(render(1, '')).toMatchObject({ name: 'escapes', group: 'default' });
    expect(render(5, '')).toEqual({ name: 'in_other', text: 'other group', level: 6, group: 'other' });
  });

  it('gives undefined where the Python parser raises: an unknown enum, arguments past the bytes given', () => {
    expect(render(6, '')).toBeUndefined();
    expect(render(7, '')).toBeUndefined();
    expect(catalog.render((1 << 24) | 3, new Uint8Array(10), 0x66)).toBeUndefined();
  });

  it('keeps crafted metadata cheap: no precision above 100 decimals, no message above 16 k characters', () => {
    // Both would render in Python (slowly); here the first stays as written, the second is not rendered.
    expect(render(8, '01')?.text).toBe(`x {1:.1000} 1.${'0'.repeat(100)}`);
    expect(render(9, '')).toBeUndefined();
  });
});
