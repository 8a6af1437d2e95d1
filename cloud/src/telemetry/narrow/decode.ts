// Frame → narrow samples, one per field (one per element of a numeric array). node-mavlink's
// `protocol.data()` builds a class instance per frame, allocates Buffers and reads through a type-name
// lookup per field; ingest decodes every frame, so each message's field metadata (offset, type, XML
// name) is compiled once into a flat reader list with its signal names interned, and frames are read
// through one DataView over a reused scratch buffer. Values match `protocol.data()` (tested).

import { MAVLINK_REGISTRY, type MavlinkFrame, type MessageClass, messageClocks, signalName, UNIX_USEC_THRESHOLD, unknownSignalName } from '@sortie/contracts/mavlink';

export { UNIX_USEC_THRESHOLD };

export type SampleValue = number | bigint | string | Uint8Array;

export interface DecodedSample {
  /** `mavlink.<MESSAGE>.<field>`, `mavlink.<MESSAGE>.<field>[<i>]` or `mavlink.UNKNOWN_<id>.raw`. */
  signal: string;
  value: SampleValue;
}

export type SampleVisitor = (signal: string, value: SampleValue) => void;

/**
 * All the decoder needs of a frame (a MavlinkFrame qualifies). Without `version` the frame is read as
 * v2: extension fields past a short payload decode as zeros.
 */
export type DecodableFrame = Pick<MavlinkFrame, 'msgid' | 'payload'> & { version?: 1 | 2 };

export const U8 = 0;
export const I8 = 1;
export const U16 = 2;
export const I16 = 3;
export const U32 = 4;
export const I32 = 5;
export const U64 = 6;
export const I64 = 7;
export const F32 = 8;
export const F64 = 9;
/** A single `char`: one text value. */
export const CHAR = 10;
/** `char[n]`: one text value, cut at the first NUL. */
export const TEXT = 11;

const KINDS: Record<string, number> = {
  uint8_t: U8,
  // HEARTBEAT.mavlink_version: a uint8_t the generator fills in itself.
  uint8_t_mavlink_version: U8,
  int8_t: I8,
  uint16_t: U16,
  int16_t: I16,
  uint32_t: U32,
  int32_t: I32,
  uint64_t: U64,
  int64_t: I64,
  float: F32,
  double: F64,
  char: CHAR,
};

export interface FieldReader {
  /** Field name as in the dialect XML (snake_case), not node-mavlink's camelCase. */
  readonly source: string;
  readonly kind: number;
  readonly offset: number;
  /** Bytes per element. */
  readonly size: number;
  /** Elements read: 1 for scalars and text, the array length for numeric arrays. */
  readonly count: number;
  /** One signal per element read. */
  readonly signals: readonly string[];
  /** A MAVLink 2 extension field (absent from v1 frames). */
  readonly extension: boolean;
}

export interface MessageLayout {
  readonly msgid: number;
  /** As in the dialect XML, e.g. `GLOBAL_POSITION_INT`. */
  readonly name: string;
  /** Full payload length including extensions; truncated v2 payloads are zero-padded to it. */
  readonly payloadLength: number;
  /** Base fields first, then extension fields (MAVLink 2 only). */
  readonly fields: readonly FieldReader[];
  /** How many of `fields` are base fields: all a v1 frame can carry. */
  readonly baseFieldCount: number;
  /** Samples a v2 frame of this message yields. */
  readonly sampleCount: number;
  /** Samples a v1 frame of this message yields. */
  readonly baseSampleCount: number;
  /** The message's sample clocks (contracts' time-field catalogue); event times such as HOME_POSITION.time_usec are not among them. */
  readonly timeBootMs: FieldReader | undefined;
  readonly timeBootUs: FieldReader | undefined;
  readonly timeUsec: FieldReader | undefined;
  readonly timeUnixUsec: FieldReader | undefined;
}

function compileLayout(clazz: MessageClass): MessageLayout {
  const fields: FieldReader[] = [];
  let sampleCount = 0;
  let baseFieldCount = 0;
  let baseSampleCount = 0;
  // FIELDS are in wire order (sorted by size, extensions last); keep it so samples follow the payload.
  for (const field of clazz.FIELDS) {
    const isArray = field.type.endsWith('[]');
    const base = isArray ? field.type.slice(0, -2) : field.type;
    const scalarKind = KINDS[base];
    if (scalarKind === undefined) throw new Error(`${clazz.MSG_NAME}.${field.source}: unsupported type ${field.type}`);
    const kind = isArray && base === 'char' ? TEXT : scalarKind;
    const count = isArray && kind !== TEXT ? field.length : 1;
    const signals =
      isArray && kind !== TEXT
        ? Array.from({ length: count }, (_, i) => signalName(clazz.MSG_NAME, field.source, i))
        : [signalName(clazz.MSG_NAME, field.source)];
    const reader: FieldReader = {
      source: field.source,
      kind,
      offset: field.offset,
      size: field.size,
      count: kind === TEXT ? field.length : count,
      signals,
      extension: field.extension,
    };
    fields.push(reader);
    sampleCount += signals.length;
    if (!field.extension) {
      // node-mavlink lists extensions after all base fields (checked in the tests).
      baseFieldCount++;
      baseSampleCount += signals.length;
    }
  }
  const scalar = (source: string | undefined) => (source === undefined ? undefined : fields.find((f) => f.source === source && f.signals.length === 1 && f.kind !== TEXT));
  const clocks = messageClocks(clazz.MSG_NAME);
  return {
    msgid: clazz.MSG_ID,
    name: clazz.MSG_NAME,
    payloadLength: clazz.PAYLOAD_LENGTH,
    fields,
    baseFieldCount,
    sampleCount,
    baseSampleCount,
    timeBootMs: scalar(clocks.bootMs),
    timeBootUs: scalar(clocks.bootUs),
    timeUsec: scalar(clocks.usec),
    timeUnixUsec: scalar(clocks.unixUsec),
  };
}

const LAYOUTS: ReadonlyMap<number, MessageLayout> = new Map(
  Array.from(MAVLINK_REGISTRY, ([id, clazz]) => [id, compileLayout(clazz)]),
);

export function messageLayoutOf(msgid: number): MessageLayout | undefined {
  return LAYOUTS.get(msgid);
}

// Every message is read from here after zero-padding: one copy of at most 255 bytes per frame is cheaper
// than a DataView per frame, and it makes v2 truncation (trailing zeros cut on the wire) invisible.
const SCRATCH = new Uint8Array(256);
const VIEW = new DataView(SCRATCH.buffer);

function load(payload: Uint8Array, payloadLength: number): void {
  const n = payload.length;
  if (n >= payloadLength) {
    SCRATCH.set(n === payloadLength ? payload : payload.subarray(0, payloadLength));
  } else {
    SCRATCH.set(payload);
    SCRATCH.fill(0, n, payloadLength);
  }
}

/** Latin-1 up to the first NUL, as node-mavlink (and pymavlink) read MAVLink strings. */
function readText(offset: number, length: number): string {
  let end = offset;
  const limit = offset + length;
  while (end < limit && SCRATCH[end] !== 0) end++;
  let text = '';
  for (let i = offset; i < end; i++) text += String.fromCharCode(SCRATCH[i]!);
  return text;
}

/**
 * Calls `visit` once per sample of the frame, in field order, without building sample objects (the
 * ingest hot path). Signal strings are interned per message layout, so they compare cheaply and can key
 * a Map. A v1 frame yields only base fields: MAVLink 1 cannot carry extensions, so zeros for them would
 * be samples that were never measured. An id outside the dialect yields one `mavlink.UNKNOWN_<id>.raw`
 * sample holding a copy of the payload as on the wire. Not re-entrant: `visit` must not decode another
 * frame (all frames share one scratch buffer).
 */
export function visitFrame(frame: DecodableFrame, visit: SampleVisitor): void {
  const layout = LAYOUTS.get(frame.msgid);
  if (layout === undefined) {
    visit(unknownSignalName(frame.msgid), frame.payload.slice());
    return;
  }
  load(frame.payload, layout.payloadLength);
  const fields = layout.fields;
  const fieldCount = frame.version === 1 ? layout.baseFieldCount : fields.length;
  for (let f = 0; f < fieldCount; f++) {
    const field = fields[f]!;
    const signals = field.signals;
    const offset = field.offset;
    switch (field.kind) {
      case U8:
        for (let i = 0; i < field.count; i++) visit(signals[i]!, SCRATCH[offset + i]!);
        break;
      case I8:
        for (let i = 0; i < field.count; i++) visit(signals[i]!, VIEW.getInt8(offset + i));
        break;
      case U16:
        for (let i = 0; i < field.count; i++) visit(signals[i]!, VIEW.getUint16(offset + i * 2, true));
        break;
      case I16:
        for (let i = 0; i < field.count; i++) visit(signals[i]!, VIEW.getInt16(offset + i * 2, true));
        break;
      case U32:
        for (let i = 0; i < field.count; i++) visit(signals[i]!, VIEW.getUint32(offset + i * 4, true));
        break;
      case I32:
        for (let i = 0; i < field.count; i++) visit(signals[i]!, VIEW.getInt32(offset + i * 4, true));
        break;
      case U64:
        for (let i = 0; i < field.count; i++) visit(signals[i]!, VIEW.getBigUint64(offset + i * 8, true));
        break;
      case I64:
        for (let i = 0; i < field.count; i++) visit(signals[i]!, VIEW.getBigInt64(offset + i * 8, true));
        break;
      case F32:
        for (let i = 0; i < field.count; i++) visit(signals[i]!, VIEW.getFloat32(offset + i * 4, true));
        break;
      case F64:
        for (let i = 0; i < field.count; i++) visit(signals[i]!, VIEW.getFloat64(offset + i * 8, true));
        break;
      case CHAR:
      case TEXT:
        visit(signals[0]!, readText(offset, field.count));
        break;
    }
  }
}

/** One `{ signal, value }` per field / array element; see visitFrame for the allocation-free form. */
export function decodeFrame(frame: DecodableFrame): DecodedSample[] {
  const samples: DecodedSample[] = [];
  visitFrame(frame, (signal, value) => {
    samples.push({ signal, value });
  });
  return samples;
}


export interface FrameTime {
  /** `time_boot_ms` as sent. */
  timeBootMs?: number;
  /** A sample-clock `time_usec` as sent (event times such as HOME_POSITION.time_usec are not read here). */
  timeUsec?: bigint;
  /** SYSTEM_TIME.time_unix_usec as sent; 0 means the vehicle has no GPS time yet. */
  timeUnixUsec?: bigint;
  /** Time since boot in µs: from time_boot_ms (or time_boot_us), else a non-zero sample-clock time_usec below UNIX_USEC_THRESHOLD. */
  bootUs?: bigint;
  /** Unix time in µs: a non-zero time_unix_usec, else a 64-bit time_usec at or above the threshold. */
  unixUs?: bigint;
}

// Bytes past a truncated v2 payload read as zeros.
function readUint(payload: Uint8Array, offset: number, size: number): number {
  let value = 0;
  for (let i = size - 1; i >= 0; i--) value = value * 256 + (payload[offset + i] ?? 0);
  return value;
}

function readUint64(payload: Uint8Array, offset: number): bigint {
  return (BigInt(readUint(payload, offset + 4, 4)) << 32n) | BigInt(readUint(payload, offset, 4));
}

/**
 * The sample clocks a frame carries (the contracts' time-field catalogue: `time_boot_ms`, a 64-bit
 * `time_usec` judged by magnitude, SYSTEM_TIME.time_unix_usec), for placing its samples in time;
 * undefined when it carries none, its id is unknown, or its only time field is an event time carried as
 * data (HOME_POSITION.time_usec: when home was set, not when the message was sent).
 */
export function frameTime(frame: DecodableFrame): FrameTime | undefined {
  const layout = LAYOUTS.get(frame.msgid);
  if (layout === undefined) return undefined;
  const onWire = (field: FieldReader | undefined) => (field && !(field.extension && frame.version === 1) ? field : undefined);
  const timeBootMs = onWire(layout.timeBootMs);
  const timeBootUs = onWire(layout.timeBootUs);
  const timeUsec = onWire(layout.timeUsec);
  const timeUnixUsec = onWire(layout.timeUnixUsec);
  if (!timeBootMs && !timeBootUs && !timeUsec && !timeUnixUsec) return undefined;
  const payload = frame.payload;
  const time: FrameTime = {};
  if (timeBootMs) {
    time.timeBootMs = readUint(payload, timeBootMs.offset, 4);
    time.bootUs = BigInt(time.timeBootMs) * 1000n;
  }
  if (timeBootUs) {
    const us = readUint64(payload, timeBootUs.offset);
    if (us !== 0n && us < UNIX_USEC_THRESHOLD) time.bootUs ??= us;
  }
  if (timeUsec) {
    const usec = readUint64(payload, timeUsec.offset);
    time.timeUsec = usec;
    // 0 is what senders put in an optional (extension) timestamp they do not fill.
    if (usec >= UNIX_USEC_THRESHOLD) time.unixUs = usec;
    else if (usec !== 0n) time.bootUs ??= usec;
  }
  if (timeUnixUsec) {
    time.timeUnixUsec = readUint64(payload, timeUnixUsec.offset);
    if (time.timeUnixUsec !== 0n) time.unixUs = time.timeUnixUsec;
  }
  return time;
}

/** A frame's clocks as numbers, µs; NaN where the frame carries none (frameClocks). */
export interface FrameClocks {
  /** frameTime's bootUs. */
  bootUs: number;
  /** frameTime's unixUs, NaN beyond 2^53 µs (year 2255: garbage, not a clock). */
  unixUs: number;
  /** unixUs − time_boot_ms × 1000 of a frame with both and a non-zero time_unix_usec (SYSTEM_TIME with GPS time). */
  gpsOffsetUs: number;
}

const TWO_32 = 4294967296;

/** A uint64 as a double: exact up to 2^53, rounded (monotonically) above. */
function readUint64Number(payload: Uint8Array, offset: number): number {
  return readUint(payload, offset + 4, 4) * TWO_32 + readUint(payload, offset, 4);
}

/**
 * frameTime's rules, written into `out` as numbers without allocating: the ingest hot path calls this
 * once per frame (frameTime's object and BigInts were an eighth of what ingest allocated). A test
 * holds the two to the same answers on every fixture frame.
 */
export function frameClocks(frame: DecodableFrame, out: FrameClocks): void {
  out.bootUs = NaN;
  out.unixUs = NaN;
  out.gpsOffsetUs = NaN;
  const layout = LAYOUTS.get(frame.msgid);
  if (layout === undefined) return;
  const v1 = frame.version === 1;
  const payload = frame.payload;
  let timeBootMs = NaN;
  const bootMs = layout.timeBootMs;
  if (bootMs && !(bootMs.extension && v1)) {
    timeBootMs = readUint(payload, bootMs.offset, 4);
    out.bootUs = timeBootMs * 1000;
  }
  const bootUs = layout.timeBootUs;
  if (bootUs && !(bootUs.extension && v1)) {
    const us = readUint64Number(payload, bootUs.offset);
    if (us !== 0 && us < UNIX_USEC_THRESHOLD_NUMBER && Number.isNaN(out.bootUs)) out.bootUs = us;
  }
  const usec = layout.timeUsec;
  if (usec && !(usec.extension && v1)) {
    const us = readUint64Number(payload, usec.offset);
    if (us >= UNIX_USEC_THRESHOLD_NUMBER) out.unixUs = us;
    else if (us !== 0 && Number.isNaN(out.bootUs)) out.bootUs = us;
  }
  let unixUsec = 0;
  const unix = layout.timeUnixUsec;
  if (unix && !(unix.extension && v1)) {
    unixUsec = readUint64Number(payload, unix.offset);
    if (unixUsec !== 0) out.unixUs = unixUsec;
  }
  if (out.unixUs > Number.MAX_SAFE_INTEGER) out.unixUs = NaN;
  if (unixUsec !== 0 && !Number.isNaN(timeBootMs) && !Number.isNaN(out.unixUs)) out.gpsOffsetUs = out.unixUs - timeBootMs * 1000;
}

const UNIX_USEC_THRESHOLD_NUMBER = Number(UNIX_USEC_THRESHOLD);
