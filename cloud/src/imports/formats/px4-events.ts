/**
 * PX4 event texts: the event definitions a ULog carries (`metadata_events`, an xz-compressed libevents
 * JSON; ulog.ts hands it over as `eventMetadataXz`) turned into each logged event's name and message.
 *
 * The reference is the Python parser of mavlink/libevents (libs/python/libevents_parse/parser.py) as
 * pyulog's px4_events.py sets it up: profile "dev", and no URL or parameter formatting and no escaping,
 * so `<a>` and `<param>` tags become their plain content. The tests compare every text with that parser's
 * (testdata/sample_px4_events.events.json, made by scripts/reference/px4-events-texts.py), including its
 * Python number formatting: `{1}` of a float is Python's repr of the float32 widened to a double
 * ("2.5", "1e-05", "-0.0", "nan"), `{1:.2}` is Python's "{:.2f}" (exact, ties to even).
 *
 * Where the Python parser raises instead of rendering (an argument type or enum it does not know, fewer
 * argument bytes than the definition needs), render() returns undefined and the caller keeps its
 * `event 0x<id>` text; pyulog would stop listing events there. A precision applied to an enum's name,
 * a ValueError in Python, gives the name as it is.
 *
 * xz: Node and Deno have no xz decoder, so this uses the npm package xz-decompress: xz-embedded (Lasse
 * Collin's public-domain decoder, the one in the Linux kernel) compiled to WebAssembly, ~70 kB, no
 * dependencies, MIT, maintained by HTTP Toolkit, which ships it in its own product. It runs the same
 * under Node 24 and Deno 2 (tested). Rejected: @napi-rs/lzma, node-liblzma and lzma-native (native
 * addons, or a WASI runtime with threads for napi-rs' wasm build), xz-compat (~70 transitive packages,
 * and it tries to install the native lzma-native at run time), lzma / lzma-purejs (the .lzma format only, not xz's
 * LZMA2). Its one API is an asynchronous web ReadableStream, which is why loading is async and happens
 * after the (synchronous, push-driven) ULog parse. Note: the first use compiles the module (~0.2 s) and
 * xz-embedded allocates the dictionary size the file declares (PX4 writes 64 MiB, only ~20 MiB of which
 * gets touched); that WebAssembly memory stays with the process, reused by later loads.
 */
import xzDecompress from 'xz-decompress';
import type { LogLevel } from './records.ts';

/** The libevents profile pyulog renders with: `<profile name="dev">` content is kept, `"!dev"` dropped. */
const PROFILE = 'dev';
/** Larger decompressed metadata is refused (PX4's whole catalog is ~160 kB): an xz bomb stops here. */
const MAX_JSON_BYTES = 32 << 20;
/**
 * Messages longer than this are not rendered: real ones are under 1 kB, and the reference algorithm
 * rescans the text (quadratic), which a crafted log must not be able to turn into a stall.
 */
const MAX_MESSAGE_CHARS = 16_384;
/** `{1:.N}` with a larger N is left as it is: formatting exactly needs 10^N, a crafted N must stay cheap. */
const MAX_PRECISION = 100;

export interface Px4EventText {
  /** The event's name in the definitions, e.g. `commander_armed_by`. */
  name: string;
  /** The message with its arguments filled in, as libevents' Python parser gives it for plain text. */
  text: string;
  /** The internal log level, (log_levels >> 4) & 0xF, as ulog.ts and pyulog use it. */
  level: LogLevel;
  /**
   * The event's group: `default` for ordinary events; `health` and `arming_check` for the health and
   * arming-check reports. pyulog's event list shows only the `default` group.
   */
  group: string;
}

export interface Px4EventCatalog {
  /** How many event definitions were loaded. */
  readonly size: number;
  /**
   * The event's name and text from its id, its argument bytes (the `event` topic's `arguments`, 25 bytes)
   * and its `log_levels` byte. Undefined for an id the catalog does not define, for an event whose
   * definition cannot be decoded (see the header) and for the levels that are not logged text
   * (8 protocol, 9 disabled; ulog.ts never reports those either).
   */
  render(id: number, args: Uint8Array | readonly number[], logLevels: number): Px4EventText | undefined;
}

/** The metadata could not be read: not xz, corrupt, or not a libevents definitions JSON. */
export class Px4EventCatalogError extends Error {
  override name = 'Px4EventCatalogError';
}

/** Decompresses a log's `metadata_events` (ulog.ts `eventMetadataXz`) and loads its definitions. */
export async function loadPx4EventCatalog(xz: Uint8Array): Promise<Px4EventCatalog> {
  const json = await decompressXz(xz);
  let definitions: unknown;
  try {
    definitions = JSON.parse(new TextDecoder().decode(json));
  } catch (error) {
    throw new Px4EventCatalogError(`PX4 event metadata: not JSON after decompression (${(error as Error).message})`);
  }
  return px4EventCatalogFromJson(definitions);
}

// ---------------------------------------------------------------------------------------------------
// xz

/** xz-embedded's return codes (enum xz_ret in xz.h), which xz-decompress reports as bare numbers. */
const XZ_ERRORS: Record<string, string> = {
  '2': 'unsupported integrity check',
  '3': 'out of memory',
  '4': 'dictionary larger than the memory limit',
  '5': 'not xz data',
  '6': 'unsupported xz options',
  '7': 'corrupt data',
  '8': 'truncated data',
};

async function decompressXz(xz: Uint8Array): Promise<Uint8Array> {
  // xz-decompress reads an empty stream as null and throws a TypeError: say what is wrong instead.
  if (xz.byteLength === 0) throw new Px4EventCatalogError('PX4 event metadata: empty');
  const input = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(xz);
      controller.close();
    },
  });
  const reader = new xzDecompress.XzReadableStream(input).getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > MAX_JSON_BYTES) {
        // Cancelling frees the decoder; a stream left unread would hold xz-decompress's global lock.
        await reader.cancel();
        throw new Px4EventCatalogError(`PX4 event metadata: larger than ${MAX_JSON_BYTES} bytes decompressed`);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof Px4EventCatalogError) throw error;
    const message = (error as Error).message;
    const code = /error code (\d+)/.exec(message)?.[1];
    const reason = (code !== undefined && XZ_ERRORS[code]) || message;
    throw new Px4EventCatalogError(`PX4 event metadata: cannot decompress xz: ${reason}`);
  }
  const out = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Definitions

/** libevents' basic argument types and their sizes in bytes (little-endian in the event's arguments). */
const BASE_TYPE_SIZES = {
  uint8_t: 1,
  int8_t: 1,
  uint16_t: 2,
  int16_t: 2,
  uint32_t: 4,
  int32_t: 4,
  uint64_t: 8,
  int64_t: 8,
  float: 4,
};
type BaseType = keyof typeof BASE_TYPE_SIZES;

function isBaseType(type: string): type is BaseType {
  return Object.hasOwn(BASE_TYPE_SIZES, type);
}

interface EnumDef {
  type: BaseType;
  isBitfield: boolean;
  separator: string;
  /** (value, description) in the JSON's order: the first entry with a value wins, as in Python. */
  entries: { value: bigint; description: string }[];
}

/** One argument: how to read it, and its enum when it has one. */
interface ArgumentDef {
  type: BaseType;
  enumDef: EnumDef | undefined;
}

interface EventDef {
  name: string;
  message: string;
  group: string;
  /** undefined when the Python parser would raise on this event (unknown argument type or enum). */
  args: ArgumentDef[] | undefined;
}

/**
 * The catalog from an already-parsed libevents definitions JSON (what the xz holds). Exposed for tests
 * with hand-made definitions; the importer uses loadPx4EventCatalog.
 */
export function px4EventCatalogFromJson(definitions: unknown): Px4EventCatalog {
  if (!isObject(definitions)) throw new Px4EventCatalogError('PX4 event metadata: not a JSON object');
  const version = definitions['version'];
  // The parser's own check: version 0 (or none) is a format it does not read.
  if (typeof version !== 'number' || version < 1) {
    throw new Px4EventCatalogError(`PX4 event metadata: unexpected version ${JSON.stringify(version ?? null)}`);
  }
  const components = definitions['components'];
  if (components !== undefined && !isObject(components)) {
    throw new Px4EventCatalogError('PX4 event metadata: `components` is not an object');
  }

  // Component ids are JSON keys; as in Python, a later key with the same number replaces an earlier one.
  const byComponentId = new Map<number, Record<string, unknown>>();
  for (const [key, component] of Object.entries(components ?? {})) {
    const componentId = integerKey(key);
    // Event ids have 8 bits for the component: a larger id can never be looked up.
    if (componentId !== undefined && componentId <= 0xff && isObject(component)) byComponentId.set(componentId, component);
  }

  // Enums are looked up by `namespace::name` across all components (an argument may name another
  // component's enum with its namespace).
  const enums = new Map<string, EnumDef>();
  for (const component of byComponentId.values()) {
    const namespace = String(component['namespace']);
    for (const [name, raw] of Object.entries(objectOr(component['enums']))) {
      const enumDef = readEnum(raw);
      if (enumDef) enums.set(`${namespace}::${name}`, enumDef);
    }
  }

  const events = new Map<number, EventDef>();
  for (const [componentId, component] of byComponentId) {
    const namespace = String(component['namespace']);
    for (const [group, groupDef] of Object.entries(objectOr(component['event_groups']))) {
      for (const [key, raw] of Object.entries(objectOr(objectOr(groupDef)['events']))) {
        const subId = integerKey(key);
        if (subId === undefined || subId > 0xffffff || !isObject(raw)) continue;
        const id = ((componentId << 24) | subId) >>> 0;
        // The parser searches the groups in order and takes the first that has the id.
        if (events.has(id)) continue;
        const name = raw['name'];
        const message = raw['message'];
        if (typeof name !== 'string' || typeof message !== 'string') continue;
        events.set(id, { name, message, group, args: readArguments(raw['arguments'], namespace, enums) });
      }
    }
  }

  return {
    size: events.size,
    render(id, args, logLevels) {
      const level = (logLevels >> 4) & 0xf;
      if (level > 7) return undefined;
      const event = events.get(id >>> 0);
      if (!event || !event.args || event.message.length > MAX_MESSAGE_CHARS) return undefined;
      const values = decodeArguments(event.args, args instanceof Uint8Array ? args : Uint8Array.from(args));
      if (!values) return undefined;
      return { name: event.name, text: formatMessage(event.message, values), level: level as LogLevel, group: event.group };
    },
  };
}

function readEnum(raw: unknown): EnumDef | undefined {
  if (!isObject(raw) || typeof raw['type'] !== 'string' || !isBaseType(raw['type'])) return undefined;
  const entries: EnumDef['entries'] = [];
  for (const [key, entry] of Object.entries(objectOr(raw['entries']))) {
    const value = bigintKey(key);
    if (value === undefined || !isObject(entry)) continue;
    entries.push({ value, description: String(entry['description']) });
  }
  return {
    type: raw['type'],
    isBitfield: raw['is_bitfield'] === true,
    separator: typeof raw['separator'] === 'string' ? raw['separator'] : '|',
    entries,
  };
}

function readArguments(raw: unknown, namespace: string, enums: Map<string, EnumDef>): ArgumentDef[] | undefined {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) return undefined;
  const args: ArgumentDef[] = [];
  for (const arg of raw) {
    const type: unknown = isObject(arg) ? arg['type'] : undefined;
    if (typeof type !== 'string') return undefined;
    if (isBaseType(type)) {
      args.push({ type, enumDef: undefined });
      continue;
    }
    // A bare enum name is in the event's own namespace.
    const enumDef = enums.get(type.includes('::') ? type : `${namespace}::${type}`);
    if (!enumDef) return undefined;
    args.push({ type: enumDef.type, enumDef });
  }
  return args;
}

// ---------------------------------------------------------------------------------------------------
// Argument values

/** A decoded argument, ready for `{N}`: an integer, a float (float32 as a double), or an enum's text. */
type Value = { kind: 'int'; value: number | bigint } | { kind: 'float'; value: number } | { kind: 'text'; value: string };

function decodeArguments(defs: ArgumentDef[], bytes: Uint8Array): Value[] | undefined {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const values: Value[] = [];
  let offset = 0;
  for (const def of defs) {
    const size = BASE_TYPE_SIZES[def.type];
    if (offset + size > bytes.byteLength) return undefined; // Python's struct.unpack raises here
    const raw = readBase(view, offset, def.type);
    offset += size;
    if (def.enumDef) values.push({ kind: 'text', value: enumText(def.enumDef, BigInt(raw)) });
    else if (def.type === 'float') values.push({ kind: 'float', value: raw as number });
    else values.push({ kind: 'int', value: raw });
  }
  return values;
}

function readBase(view: DataView, offset: number, type: BaseType): number | bigint {
  switch (type) {
    case 'uint8_t':
      return view.getUint8(offset);
    case 'int8_t':
      return view.getInt8(offset);
    case 'uint16_t':
      return view.getUint16(offset, true);
    case 'int16_t':
      return view.getInt16(offset, true);
    case 'uint32_t':
      return view.getUint32(offset, true);
    case 'int32_t':
      return view.getInt32(offset, true);
    case 'uint64_t':
      return view.getBigUint64(offset, true);
    case 'int64_t':
      return view.getBigInt64(offset, true);
    case 'float':
      return view.getFloat32(offset, true);
  }
}

/**
 * An enum argument as libevents shows it: the entry's description, or for a bitfield the description of
 * each set bit from the lowest, joined by the separator, `(unknown: <whole value>)` for a bit without one.
 */
function enumText(enumDef: EnumDef, value: bigint): string {
  const describe = (v: bigint) => enumDef.entries.find((entry) => entry.value === v)?.description;
  if (!enumDef.isBitfield) return describe(value) ?? `(unknown: ${value})`;
  const parts: string[] = [];
  for (let bit = 0; bit < BASE_TYPE_SIZES[enumDef.type] * 8; bit++) {
    const mask = 1n << BigInt(bit);
    if (value & mask) parts.push(describe(mask) ?? `(unknown: ${value})`);
  }
  return parts.join(enumDef.separator);
}

// ---------------------------------------------------------------------------------------------------
// Message format

/** `<tag>` or `<tag attr="value">` followed by at least one character (the parser's regex, sticky). */
const TAG = /<([a-z]+)(?: ([a-z]+)="([^"]*)")?>./sy;
/** `{ARG_INDEX[:[.DIGITS]][UNIT]}`'s inside, 1-based. */
const ARGUMENT = /^(\d+)(?::(?:\.(\d+))?)?(m|m_v|m\/s|m\^2|C)?$/;

/**
 * The message with tags and arguments processed, a port of the parser's _process_message (the escaping
 * and formatter hooks pyulog leaves as identities are left out):
 * - `\x` is x, taken literally;
 * - `<profile name="dev">…</profile>` keeps its content (`name="!dev"` or another profile drops it);
 *   the content is then processed like the rest;
 * - `<a [href="…"]>text</a>` and `<param>NAME</param>` become their content, not processed further;
 * - any other tag is dropped with its content; a `<` that does not open a closed tag stays as it is;
 * - `{N}`, `{N:.D}`, `{Nunit}`, `{N:.Dunit}` become argument N, with D decimals and ` unit` (m_v shows as
 *   m); a brace that does not match stays as it is;
 * - the result is trimmed.
 */
function formatMessage(message: string, values: readonly Value[]): string {
  let msg = message;
  let i = 0;
  while (i < msg.length) {
    const c = msg[i];
    if (c === '\\') {
      msg = msg.slice(0, i) + msg.slice(i + 1);
      i += 1;
    } else if (c === '<') {
      TAG.lastIndex = i;
      const tag = TAG.exec(msg);
      const tagName = tag?.[1];
      // The content starts at the one character the pattern requires after '>'.
      const contentStart = tag ? i + tag[0].length - 1 : -1;
      const end = tagName ? msg.indexOf(`</${tagName}>`, contentStart) : -1;
      if (!tag || !tagName || end === -1) {
        i += 1;
        continue;
      }
      let content = msg.slice(contentStart, end);
      let skip = 0;
      if (tagName === 'profile') {
        const profile = tag[3] ?? '';
        const drop = profile.startsWith('!') ? profile.slice(1) === PROFILE : profile !== PROFILE;
        if (drop) content = '';
      } else if (tagName === 'a' || tagName === 'param') {
        skip = content.length;
      } else {
        content = '';
      }
      msg = msg.slice(0, i) + content + msg.slice(end + tagName.length + 3);
      i += skip;
    } else if (c === '{') {
      const end = msg.indexOf('}', i);
      const spec = end === -1 ? null : ARGUMENT.exec(msg.slice(i + 1, end));
      const index = spec ? Number(spec[1]) - 1 : -1;
      const precision = spec?.[2] === undefined ? undefined : Number(spec[2]);
      const value = values[index];
      if (!spec || !value || (precision !== undefined && precision > MAX_PRECISION)) {
        i += 1;
        continue;
      }
      let text = formatValue(value, precision);
      const unit = spec[3];
      if (unit !== undefined) text += ` ${unit === 'm_v' ? 'm' : unit}`;
      msg = msg.slice(0, i) + text + msg.slice(end + 1);
      i += text.length;
    } else {
      i += 1;
    }
  }
  return pythonStrip(msg);
}

/** Python's "{}" or "{:.Nf}" of the value. */
function formatValue(value: Value, precision: number | undefined): string {
  if (value.kind === 'text') return value.value;
  if (precision !== undefined) return pythonFixed(Number(value.value), precision);
  return value.kind === 'int' ? String(value.value) : pythonRepr(value.value);
}

/**
 * Python's repr of a float: the shortest digits that read back as the same double (JavaScript's
 * String() picks the same ones), in positional notation for exponents -5 < e < 16 with at least one
 * decimal ("3.0"), else as "1.5e-05" / "1e+16".
 */
function pythonRepr(x: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const sign = x < 0 ? '-' : '';
  // Digits d1d2d3… and exponent e of |x| = d1.d2d3… × 10^e, from JavaScript's shortest representation.
  const [mantissa = '', exponentText = '0'] = String(Math.abs(x)).split('e');
  const [intPart = '', fraction = ''] = mantissa.split('.');
  let digits = intPart + fraction;
  let exponent = Number(exponentText) + intPart.length - 1;
  const leadingZeros = /^0*/.exec(digits)?.[0].length ?? 0;
  digits = digits.slice(leadingZeros).replace(/0+$/, '');
  exponent -= leadingZeros;

  if (exponent < -4 || exponent >= 16) {
    const head = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const expSign = exponent < 0 ? '-' : '+';
    return `${sign}${head}e${expSign}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  if (exponent < 0) return `${sign}0.${'0'.repeat(-exponent - 1)}${digits}`;
  const whole = digits.slice(0, exponent + 1).padEnd(exponent + 1, '0');
  return `${sign}${whole}.${digits.slice(exponent + 1) || '0'}`;
}

/**
 * Python's "{:.Nf}" of a double: its exact binary value rounded to N decimals, ties to even (JavaScript's
 * toFixed rounds ties up: 0.125 → "0.13" where Python gives "0.12"), the sign kept on a zero ("-0.0").
 */
function pythonFixed(x: number, decimals: number): string {
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x > 0 ? 'inf' : '-inf';
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const high = view.getUint32(0);
  const sign = high >>> 31 ? '-' : '';
  const biasedExponent = (high >>> 20) & 0x7ff;
  let mantissa = (BigInt(high & 0xfffff) << 32n) | BigInt(view.getUint32(4));
  if (biasedExponent !== 0) mantissa |= 1n << 52n;
  // |x| = mantissa × 2^exponent exactly (subnormals have the exponent of the smallest normal).
  const exponent = (biasedExponent === 0 ? 1 : biasedExponent) - 1075;

  let scaled = mantissa * 10n ** BigInt(decimals);
  if (exponent >= 0) {
    scaled <<= BigInt(exponent);
  } else {
    const divisor = 1n << BigInt(-exponent);
    const quotient = scaled / divisor;
    const twiceRemainder = (scaled % divisor) * 2n;
    const roundUp = twiceRemainder > divisor || (twiceRemainder === divisor && quotient % 2n === 1n);
    scaled = roundUp ? quotient + 1n : quotient;
  }
  const digits = scaled.toString().padStart(decimals + 1, '0');
  if (decimals === 0) return sign + digits;
  return `${sign}${digits.slice(0, -decimals)}.${digits.slice(-decimals)}`;
}

/** Python's str.strip(): its whitespace is JavaScript's trim() set plus \x1c-\x1f and \x85, less \ufeff. */
function pythonStrip(text: string): string {
  return text.replace(PYTHON_SPACE_AROUND, '');
}
const PYTHON_SPACE = '[\\t\\n\\v\\f\\r\\x1c-\\x20\\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]';
const PYTHON_SPACE_AROUND = new RegExp(`^${PYTHON_SPACE}+|${PYTHON_SPACE}+$`, 'g');

// ---------------------------------------------------------------------------------------------------
// JSON helpers

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function objectOr(value: unknown): Record<string, unknown> {
  return isObject(value) ? value : {};
}

/** A JSON key read as Python's int() would for the ids (decimal digits), else undefined. */
function integerKey(key: string): number | undefined {
  const trimmed = key.trim();
  return /^\d{1,10}$/.test(trimmed) ? Number(trimmed) : undefined;
}

/** An enum entry's key as an integer of any size (a 64-bit enum's values exceed doubles). */
function bigintKey(key: string): bigint | undefined {
  const trimmed = key.trim();
  return /^[-+]?\d+$/.test(trimmed) ? BigInt(trimmed) : undefined;
}
