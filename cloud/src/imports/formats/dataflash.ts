/**
 * ArduPilot DataFlash (.BIN) log reader: a streaming push parser over the records.ts contract.
 *
 * The format (ArduPilot libraries/AP_Logger; pymavlink's DFReader.py is the reference reader and the
 * values here match it, see dataflash.test.ts): a flat sequence of messages `A3 95 <type u8> <payload>`
 * with no length prefix. A message's length and layout come from the FMT message (type 128) that
 * defines its type, earlier in the file: Type u8, Length u8 (whole message, header included), Name
 * char[4], Format char[16] (one character per column, FORMAT_CHARS below), Columns char[64] (comma
 * separated names). FMTU messages add per-column unit and multiplier ids (resolved through UNIT and MULT
 * messages); a '#' unit id marks the column that tells instances apart (IMU[0], IMU[1]).
 *
 * Speed: a log has millions of messages of a few dozen types, so each FMT is compiled once into flat
 * typed arrays (an op code and a byte offset per value) and a message is read with one DataView pass
 * into a values array reused for every message of its type. Nothing is allocated per message but the
 * values themselves: strings, bigints (64-bit integers) and the engine's boxes for non-integer numbers.
 *
 * Corruption: DataFlash has no checksum. A byte sequence that is not `A3 95 <type with a FMT>` where a
 * message should start begins a bad stretch; the reader moves one byte at a time to the next such header
 * (as DFReader does) and reports the stretch with sink.skipped().
 */

import {
  type LogColumnType,
  type LogField,
  type LogLevel,
  type LogMessageType,
  type LogParser,
  type LogSink,
  type LogValue,
  type ParserOptions,
  NotThisFormatError,
} from './records.ts';

const HEAD1 = 0xa3;
const HEAD2 = 0x95;
const FMT_TYPE = 0x80;
/** The FMT message's own layout, fixed by ArduPilot (a log's FMT-for-FMT repeats it). */
const FMT_LENGTH = 89;
const FMT_FORMAT = 'BBnNZ';
const FMT_COLUMNS = 'Type,Length,Name,Format,Columns';

/** True when `head` (a file's first bytes) starts like a DataFlash log: the header of a FMT message. */
export function looksLikeDataFlash(head: Uint8Array): boolean {
  return head.length >= 3 && head[0] === HEAD1 && head[1] === HEAD2 && head[2] === FMT_TYPE;
}

// ---------------------------------------------------------------------------------------------------
// Format characters

// How one value is read. Op codes rather than closures so that the read loop is a single switch.
const OP_I8 = 0;
const OP_U8 = 1;
const OP_I16 = 2;
const OP_U16 = 3;
const OP_I32 = 4;
const OP_U32 = 5;
const OP_I64 = 6;
const OP_U64 = 7;
const OP_F16 = 8;
const OP_F32 = 9;
const OP_F64 = 10;
const OP_TEXT = 11;
// Scaled integers, read as DFReader gives them: it divides by 1/multiplier (it notes that dividing by
// 100 or 1e7 is more accurate than multiplying by 0.01 or 1e-7), so these divide by the same numbers.
const OP_I16_CENTI = 12;
const OP_U16_CENTI = 13;
const OP_I32_CENTI = 14;
const OP_U32_CENTI = 15;
const OP_I32_E7 = 16;

const CENTI_DIVISOR = 1 / 0.01;
const E7_DIVISOR = 1 / 1.0e-7;

interface FormatChar {
  /** Bytes in the message. */
  size: number;
  op: number;
  column: LogColumnType;
  /** The value is already scaled (c C e E L): FMTU's multiplier does not prefix its unit (as DFReader). */
  scaled?: true;
  /** Integer columns can be instance fields. */
  integer?: true;
}

/**
 * ArduPilot's format characters (libraries/AP_Logger/README.md, DFReader's FORMAT_TO_STRUCT). 'a' is
 * int16[32], flattened to 32 values; 'M' (flight mode) is uint8 as ArduPilot writes it.
 */
const FORMAT_CHARS: Readonly<Record<string, FormatChar>> = {
  b: { size: 1, op: OP_I8, column: 'int2', integer: true },
  B: { size: 1, op: OP_U8, column: 'int2', integer: true },
  h: { size: 2, op: OP_I16, column: 'int2', integer: true },
  H: { size: 2, op: OP_U16, column: 'int4', integer: true },
  i: { size: 4, op: OP_I32, column: 'int4', integer: true },
  I: { size: 4, op: OP_U32, column: 'int8', integer: true },
  q: { size: 8, op: OP_I64, column: 'int8', integer: true },
  Q: { size: 8, op: OP_U64, column: 'uint64', integer: true },
  M: { size: 1, op: OP_U8, column: 'int2', integer: true },
  f: { size: 4, op: OP_F32, column: 'float4' },
  d: { size: 8, op: OP_F64, column: 'float8' },
  g: { size: 2, op: OP_F16, column: 'float4' },
  n: { size: 4, op: OP_TEXT, column: 'text' },
  N: { size: 16, op: OP_TEXT, column: 'text' },
  Z: { size: 64, op: OP_TEXT, column: 'text' },
  c: { size: 2, op: OP_I16_CENTI, column: 'float8', scaled: true },
  C: { size: 2, op: OP_U16_CENTI, column: 'float8', scaled: true },
  e: { size: 4, op: OP_I32_CENTI, column: 'float8', scaled: true },
  E: { size: 4, op: OP_U32_CENTI, column: 'float8', scaled: true },
  L: { size: 4, op: OP_I32_E7, column: 'float8', scaled: true },
  a: { size: 64, op: OP_I16, column: 'int2' },
};

const ARRAY_LENGTH = 32;

/** DFReader's MULT_TO_PREFIX: a unit whose multiplier has a prefix is written `cm`, `mV`, `µs`. */
const MULT_PREFIX = new Map<number, string>([
  [0, ''],
  [1, ''],
  [1e-1, 'd'],
  [1e-2, 'c'],
  [1e-3, 'm'],
  [1e-6, 'µ'],
  [1e-9, 'n'],
]);

/** Unit ids that name no unit: '-' none, '?' unknown, '#' the instance field. */
const NO_UNIT_IDS = new Set(['-', '?', '#']);

// ---------------------------------------------------------------------------------------------------
// Special messages

/** What a message type means to the reader beyond its data (plain numbers: enums are not erasable syntax). */
const Role = {
  Data: 0,
  Parm: 1,
  Msg: 2,
  Err: 3,
  Ev: 4,
  Ver: 5,
  Gps: 6,
  // Schema messages, from here on: they configure the reader and are not passed to data().
  Fmt: 7,
  Fmtu: 8,
  Unit: 9,
  Mult: 10,
} as const;
type Role = (typeof Role)[keyof typeof Role];

/** ArduPilot's LogEvent (libraries/AP_Logger/AP_Logger.h): EV.Id. Ids not listed are shown as numbers. */
const EVENT_NAMES: ReadonlyMap<number, string> = new Map([
  [10, 'ARMED'], [11, 'DISARMED'], [15, 'AUTO_ARMED'], [17, 'LAND_COMPLETE_MAYBE'], [18, 'LAND_COMPLETE'],
  [19, 'LOST_GPS'], [21, 'FLIP_START'], [22, 'FLIP_END'], [25, 'SET_HOME'], [26, 'SET_SIMPLE_ON'],
  [27, 'SET_SIMPLE_OFF'], [28, 'NOT_LANDED'], [29, 'SET_SUPERSIMPLE_ON'], [30, 'AUTOTUNE_INITIALISED'],
  [31, 'AUTOTUNE_OFF'], [32, 'AUTOTUNE_RESTART'], [33, 'AUTOTUNE_SUCCESS'], [34, 'AUTOTUNE_FAILED'],
  [35, 'AUTOTUNE_REACHED_LIMIT'], [36, 'AUTOTUNE_PILOT_TESTING'], [37, 'AUTOTUNE_SAVEDGAINS'], [38, 'SAVE_TRIM'],
  [39, 'SAVEWP_ADD_WP'], [41, 'FENCE_ENABLE'], [42, 'FENCE_DISABLE'], [43, 'ACRO_TRAINER_OFF'],
  [44, 'ACRO_TRAINER_LEVELING'], [45, 'ACRO_TRAINER_LIMITED'], [46, 'GRIPPER_GRAB'], [47, 'GRIPPER_RELEASE'],
  [49, 'PARACHUTE_DISABLED'], [50, 'PARACHUTE_ENABLED'], [51, 'PARACHUTE_RELEASED'], [52, 'LANDING_GEAR_DEPLOYED'],
  [53, 'LANDING_GEAR_RETRACTED'], [54, 'MOTORS_EMERGENCY_STOPPED'], [55, 'MOTORS_EMERGENCY_STOP_CLEARED'],
  [56, 'MOTORS_INTERLOCK_DISABLED'], [57, 'MOTORS_INTERLOCK_ENABLED'], [58, 'ROTOR_RUNUP_COMPLETE'],
  [59, 'ROTOR_SPEED_BELOW_CRITICAL'], [60, 'EKF_ALT_RESET'], [61, 'LAND_CANCELLED_BY_PILOT'], [62, 'EKF_YAW_RESET'],
  [63, 'AVOIDANCE_ADSB_ENABLE'], [64, 'AVOIDANCE_ADSB_DISABLE'], [65, 'AVOIDANCE_PROXIMITY_ENABLE'],
  [66, 'AVOIDANCE_PROXIMITY_DISABLE'], [67, 'GPS_PRIMARY_CHANGED'], [68, 'WINCH_RELAXED'],
  [69, 'WINCH_LENGTH_CONTROL'], [70, 'WINCH_RATE_CONTROL'], [71, 'ZIGZAG_STORE_A'], [72, 'ZIGZAG_STORE_B'],
  [73, 'LAND_REPO_ACTIVE'], [74, 'STANDBY_ENABLE'], [75, 'STANDBY_DISABLE'], [76, 'FENCE_ALT_MAX_ENABLE'],
  [77, 'FENCE_ALT_MAX_DISABLE'], [78, 'FENCE_CIRCLE_ENABLE'], [79, 'FENCE_CIRCLE_DISABLE'],
  // 80 and 81 were FENCE_FLOOR_ENABLE/DISABLE before ArduPilot 4.5 renamed them.
  [80, 'FENCE_ALT_MIN_ENABLE'], [81, 'FENCE_ALT_MIN_DISABLE'], [82, 'FENCE_POLYGON_ENABLE'],
  [83, 'FENCE_POLYGON_DISABLE'], [85, 'EK3_SOURCES_SET_TO_PRIMARY'], [86, 'EK3_SOURCES_SET_TO_SECONDARY'],
  [87, 'EK3_SOURCES_SET_TO_TERTIARY'], [90, 'AIRSPEED_PRIMARY_CHANGED'],
  [163, 'SURFACED'], [164, 'NOT_SURFACED'], [165, 'BOTTOMED'], [166, 'NOT_BOTTOMED'],
]);

/** ArduPilot's LogErrorSubsystem (libraries/AP_Logger/AP_Logger.h): ERR.Subsys. */
const ERROR_SUBSYSTEMS: ReadonlyMap<number, string> = new Map([
  [1, 'MAIN'], [2, 'RADIO'], [3, 'COMPASS'], [4, 'OPTFLOW'], [5, 'FAILSAFE_RADIO'], [6, 'FAILSAFE_BATT'],
  [7, 'FAILSAFE_GPS'], [8, 'FAILSAFE_GCS'], [9, 'FAILSAFE_FENCE'], [10, 'FLIGHT_MODE'], [11, 'GPS'],
  [12, 'CRASH_CHECK'], [13, 'FLIP'], [14, 'AUTOTUNE'], [15, 'PARACHUTES'], [16, 'EKFCHECK'],
  [17, 'FAILSAFE_EKFINAV'], [18, 'BARO'], [19, 'CPU'], [20, 'FAILSAFE_ADSB'], [21, 'TERRAIN'], [22, 'NAVIGATION'],
  [23, 'FAILSAFE_TERRAIN'], [24, 'EKF_PRIMARY'], [25, 'THRUST_LOSS_CHECK'], [26, 'FAILSAFE_SENSORS'],
  [27, 'FAILSAFE_LEAK'], [28, 'PILOT_INPUT'], [29, 'FAILSAFE_VIBE'], [30, 'INTERNAL_ERROR'],
  [31, 'FAILSAFE_DEADRECKON'],
]);

const LEVEL_ERROR: LogLevel = 3;
const LEVEL_INFO: LogLevel = 6;

/** The vehicle's firmware line, which ArduPilot logs as its first MSG: `ArduSub V4.1.0 (89639005)`. */
const FIRMWARE_LINE = /^Ardu\w+ V\d|^(ArduPilot|Rover|Blimp|AntennaTracker) /;

/**
 * GPS time → Unix time in µs as DFReader's `_gpsTimeToTime` computes it in seconds: the GPS epoch
 * (1980-01-06 = 315964800 s), plus weeks and milliseconds, minus a fixed 18 leap seconds. Done in
 * integers here (exact below 2^53 µs, i.e. until the year 2255).
 */
const GPS_EPOCH_US = 315_964_800_000_000;
const GPS_LEAP_US = 18_000_000;
const GPS_WEEK_US = 604_800_000_000;
/** GPS Status from which the fix, and so its time, is trusted: 3 = 3D fix. */
const GPS_FIX_3D = 3;

// ---------------------------------------------------------------------------------------------------
// Compiled formats

/** One message type as stored: the announced LogMessageType and the values array reused for its messages. */
interface TypeState {
  readonly type: LogMessageType;
  readonly values: LogValue[];
}

/** A FMT message compiled into what reading one message of its type needs. */
interface Format {
  readonly type: number;
  readonly name: string;
  /** Whole message in bytes, header included. */
  readonly length: number;
  readonly format: string;
  readonly columns: readonly string[];
  /** Name, length, format and columns as the FMT gave them: tells a repeated FMT from a new one. */
  readonly signature: string;
  readonly role: Role;

  // The values, in field order: every column but the boot clock, 'a' columns as 32 values.
  readonly fieldNames: readonly string[];
  readonly fieldTypes: readonly LogColumnType[];
  /** Column of each value (for units). */
  readonly fieldColumns: readonly number[];
  readonly ops: Uint8Array;
  /** Byte offset of each value from the message start (header included). */
  readonly offsets: Uint16Array;
  /** Bytes of each text value. */
  readonly sizes: Uint8Array;

  /** The boot clock column: its op (-1 without one), offset and scale to µs (1000 for TimeMS). */
  readonly bootOp: number;
  readonly bootOffset: number;
  readonly bootScale: number;

  // Set from FMTU (and kept across a repeated FMT of the same layout).
  unitIds: string | null;
  multIds: string | null;
  /** The instance field's op, -1 when the type has no (integer) instance field. */
  instanceOp: number;
  instanceOffset: number;

  /** The types of this format's messages, by instance; the last one used is cached. */
  readonly instances: Map<number, TypeState>;
  lastInstance: number;
  lastState: TypeState | null;
  /** Values array for schema messages (which have no announced type). */
  readonly scratch: LogValue[];
}

/**
 * The boot clock column: `TimeUS` (µs); in old logs a first column `TimeMS` (ms), except in GPS
 * messages, where TimeMS is the GPS time of week, and ACC/GYR messages, whose TimeMS is the sensor's own
 * clock (as DFReader's clocks decide); in old GPS messages `T` (ms since boot).
 */
function bootColumn(name: string, columns: readonly string[]): { index: number; scale: number } | null {
  const us = columns.indexOf('TimeUS');
  if (us >= 0) return { index: us, scale: 1 };
  const gps = name === 'GPS' || name === 'GPS2';
  if (columns[0] === 'TimeMS' && !gps && !name.startsWith('ACC') && !name.startsWith('GYR')) return { index: 0, scale: 1000 };
  const t = gps ? columns.indexOf('T') : -1;
  if (t >= 0) return { index: t, scale: 1000 };
  return null;
}

function roleOf(type: number, name: string, columns: readonly string[]): Role {
  const has = (...names: string[]) => names.every((n) => columns.includes(n));
  if (type === FMT_TYPE) return Role.Fmt;
  switch (name) {
    case 'FMTU':
      return has('FmtType', 'UnitIds') ? Role.Fmtu : Role.Data;
    case 'UNIT':
      return has('Id', 'Label') ? Role.Unit : Role.Data;
    case 'MULT':
      return has('Id', 'Mult') ? Role.Mult : Role.Data;
    case 'PARM':
      return has('Name', 'Value') ? Role.Parm : Role.Data;
    case 'MSG':
      return has('Message') ? Role.Msg : Role.Data;
    case 'ERR':
      return has('Subsys', 'ECode') ? Role.Err : Role.Data;
    case 'EV':
      return has('Id') ? Role.Ev : Role.Data;
    case 'VER':
      return Role.Ver;
    case 'GPS':
      return has('Status') && (has('GWk', 'GMS') || has('Week', 'TimeMS')) ? Role.Gps : Role.Data;
    default:
      return Role.Data;
  }
}

/** Compiles a FMT message; a string says why it cannot be used. */
function compileFormat(type: number, name: string, length: number, format: string, columnList: string): Format | string {
  const columns = columnList === '' ? [] : columnList.split(',');
  if (columns.length !== format.length) return `${format.length} format characters but ${columns.length} columns`;
  const columnOffsets: number[] = [];
  let size = 3;
  for (const char of format) {
    const spec = FORMAT_CHARS[char];
    if (spec === undefined) return `unknown format character '${char}'`;
    columnOffsets.push(size);
    size += spec.size;
  }
  if (size !== length) return `length ${length} but format '${format}' makes ${size}`;

  const boot = bootColumn(name, columns);
  const fieldNames: string[] = [];
  const fieldTypes: LogColumnType[] = [];
  const fieldColumns: number[] = [];
  const ops: number[] = [];
  const offsets: number[] = [];
  const sizes: number[] = [];
  for (let c = 0; c < columns.length; c++) {
    if (c === boot?.index) continue;
    const spec = FORMAT_CHARS[format[c]!]!;
    const column = columns[c]!;
    const count = format[c] === 'a' ? ARRAY_LENGTH : 1;
    for (let k = 0; k < count; k++) {
      fieldNames.push(count === 1 ? column : `${column}[${k}]`);
      fieldTypes.push(spec.column);
      fieldColumns.push(c);
      ops.push(spec.op);
      offsets.push(columnOffsets[c]! + (count === 1 ? 0 : 2 * k));
      sizes.push(count === 1 ? spec.size : 2);
    }
  }
  return {
    type,
    name,
    length,
    format,
    columns,
    signature: `${name}\0${length}\0${format}\0${columnList}`,
    role: roleOf(type, name, columns),
    fieldNames,
    fieldTypes,
    fieldColumns,
    ops: Uint8Array.from(ops),
    offsets: Uint16Array.from(offsets),
    sizes: Uint8Array.from(sizes),
    bootOp: boot ? FORMAT_CHARS[format[boot.index]!]!.op : -1,
    bootOffset: boot ? columnOffsets[boot.index]! : 0,
    bootScale: boot?.scale ?? 1,
    unitIds: null,
    multIds: null,
    instanceOp: -1,
    instanceOffset: 0,
    instances: new Map(),
    lastInstance: Number.NaN,
    lastState: null,
    scratch: new Array<LogValue>(ops.length).fill(0),
  };
}

/** Applies a FMTU message's unit and multiplier ids (one character per column) to a format. */
function setUnitIds(format: Format, unitIds: string, multIds: string | null): void {
  format.unitIds = unitIds;
  format.multIds = multIds;
  // '#' marks the instance field. Only an integer one makes separate types: a text "instance" (NVF's
  // Name) stays an ordinary field of one type, since LogMessageType.instance is a number.
  const index = unitIds.indexOf('#');
  const char = index >= 0 && index < format.columns.length ? format.format[index]! : '';
  const spec = FORMAT_CHARS[char];
  if (spec?.integer && char !== 'q' && char !== 'Q') {
    format.instanceOp = spec.op;
    format.instanceOffset = 3 + [...format.format.slice(0, index)].reduce((n, c) => n + FORMAT_CHARS[c]!.size, 0);
  } else {
    format.instanceOp = -1;
  }
  format.lastInstance = Number.NaN;
  format.lastState = null;
}

/** Python's `'%.4g' % x`, which DFReader uses for a multiplier without a prefix (`3.6 A.s`). */
function formatG4(x: number): string {
  if (x === 0 || !Number.isFinite(x)) return String(x);
  const [mantissa, exponentText] = x.toExponential(3).split('e') as [string, string];
  const exponent = Number(exponentText);
  const trim = (s: string) => (s.includes('.') ? s.replace(/\.?0+$/, '') : s);
  if (exponent < -4 || exponent >= 4) {
    return `${trim(mantissa)}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  return trim(x.toFixed(3 - exponent));
}

// ---------------------------------------------------------------------------------------------------
// Reading values

const UTF8_STRICT = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * A char[n] field as DFReader gives it: the whole field decoded as UTF-8, or as ISO-8859-1 when it is not
 * valid UTF-8 (bytes after the NUL included, as DFReader decodes them too), then cut at the first NUL.
 * Nearly every string is ASCII, read without a decoder.
 */
function readText(bytes: Uint8Array, start: number, size: number): string {
  const end = start + size;
  let nul = end;
  let ascii = true;
  for (let i = start; i < end; i++) {
    const b = bytes[i]!;
    if (b === 0) {
      if (nul === end) nul = i;
    } else if (b >= 0x80) {
      ascii = false;
    }
  }
  if (!ascii) {
    try {
      const text = UTF8_STRICT.decode(bytes.subarray(start, end));
      const cut = text.indexOf('\0');
      return cut < 0 ? text : text.slice(0, cut);
    } catch {
      // not UTF-8: ISO-8859-1, one character per byte, read below (TextDecoder's 'latin1' is windows-1252)
    }
  }
  let text = '';
  for (let i = start; i < nul; i++) text += String.fromCharCode(bytes[i]!);
  return text;
}

/** IEEE 754 half precision (format 'g'); exact, as every half is a double. */
function readFloat16(view: DataView, at: number): number {
  const h = view.getUint16(at, true);
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const fraction = h & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 0x1f) return fraction === 0 ? sign * Infinity : Number.NaN;
  return sign * (1024 + fraction) * 2 ** (exponent - 25);
}

/** One numeric value as a number (a uint64 boot clock fits: 2^53 µs is 285 years). */
function readNumber(view: DataView, op: number, at: number): number {
  switch (op) {
    case OP_I8:
      return view.getInt8(at);
    case OP_U8:
      return view.getUint8(at);
    case OP_I16:
      return view.getInt16(at, true);
    case OP_U16:
      return view.getUint16(at, true);
    case OP_I32:
      return view.getInt32(at, true);
    case OP_U32:
      return view.getUint32(at, true);
    case OP_U64:
      return view.getUint32(at, true) + view.getUint32(at + 4, true) * 4294967296;
    case OP_I64:
      return view.getUint32(at, true) + view.getInt32(at + 4, true) * 4294967296;
    default:
      return Number.NaN;
  }
}

/** Reads the message at `at` into `out`, in the format's field order. */
function readValues(format: Format, view: DataView, bytes: Uint8Array, at: number, out: LogValue[]): void {
  const { ops, offsets, sizes } = format;
  for (let i = 0; i < ops.length; i++) {
    const p = at + offsets[i]!;
    switch (ops[i]) {
      case OP_I8:
        out[i] = view.getInt8(p);
        break;
      case OP_U8:
        out[i] = bytes[p]!;
        break;
      case OP_I16:
        out[i] = view.getInt16(p, true);
        break;
      case OP_U16:
        out[i] = view.getUint16(p, true);
        break;
      case OP_I32:
        out[i] = view.getInt32(p, true);
        break;
      case OP_U32:
        out[i] = view.getUint32(p, true);
        break;
      case OP_I64:
        out[i] = view.getBigInt64(p, true);
        break;
      case OP_U64:
        out[i] = view.getBigUint64(p, true);
        break;
      case OP_F16:
        out[i] = readFloat16(view, p);
        break;
      case OP_F32:
        out[i] = view.getFloat32(p, true);
        break;
      case OP_F64:
        out[i] = view.getFloat64(p, true);
        break;
      case OP_TEXT:
        out[i] = readText(bytes, p, sizes[i]!);
        break;
      case OP_I16_CENTI:
        out[i] = view.getInt16(p, true) / CENTI_DIVISOR;
        break;
      case OP_U16_CENTI:
        out[i] = view.getUint16(p, true) / CENTI_DIVISOR;
        break;
      case OP_I32_CENTI:
        out[i] = view.getInt32(p, true) / CENTI_DIVISOR;
        break;
      case OP_U32_CENTI:
        out[i] = view.getUint32(p, true) / CENTI_DIVISOR;
        break;
      case OP_I32_E7:
        out[i] = view.getInt32(p, true) / E7_DIVISOR;
        break;
    }
  }
}

const hex2 = (b: number | undefined) => (b ?? 0).toString(16).padStart(2, '0');

// ---------------------------------------------------------------------------------------------------
// The parser

/**
 * Room to finish a message split across pushes: the unfinished bytes (under 255: a message is at most
 * 255 bytes) and enough of the next chunk to complete it.
 */
const JOIN_SIZE = 512;

const NO_VALUES: readonly LogValue[] = [];

class DataFlashParser implements LogParser {
  private readonly sink: LogSink;
  private readonly clockOnly: boolean;
  private readonly formats: (Format | undefined)[] = new Array(256);
  /** UNIT id → label, MULT id → multiplier. */
  private readonly unitLabels = new Map<string, string>();
  private readonly multipliers = new Map<string, number>();
  /** Types by name, instance and layout, so that a repeated FMT (a log restarted in the same file) keeps its types. */
  private readonly typesByKey = new Map<string, TypeState>();
  private nextTypeId = 0;

  /** Bytes pushed so far. */
  private received = 0;
  /** The unfinished message (or header) at the end of the last push: join[0, joinLength). */
  private readonly join = new Uint8Array(JOIN_SIZE);
  private readonly joinView = new DataView(this.join.buffer);
  private joinLength = 0;

  /** File offset where the current bad stretch began, -1 outside one, and what began it. */
  private badStart = -1;
  private badReason = '';

  private lastBootUs = 0;
  private bootSeen = false;
  private firmwareSeen = false;
  private refused: NotThisFormatError | null = null;

  constructor(sink: LogSink, clockOnly: boolean) {
    this.sink = sink;
    this.clockOnly = clockOnly;
    this.formats[FMT_TYPE] = compileFormat(FMT_TYPE, 'FMT', FMT_LENGTH, FMT_FORMAT, FMT_COLUMNS) as Format;
  }

  get offset(): number {
    return this.received - this.joinLength;
  }

  push(chunk: Uint8Array): void {
    if (this.refused) throw this.refused;
    if (chunk.length === 0) return;
    this.checkMagic(chunk);
    const chunkStart = this.received;
    this.received += chunk.length;
    const view = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let pos = 0;

    if (this.joinLength > 0) {
      // Finish the message begun in the last push: copy enough of this chunk behind its bytes, read up
      // to where the chunk's own bytes begin, then go on in the chunk itself.
      const held = this.joinLength;
      const take = Math.min(chunk.length, JOIN_SIZE - held);
      this.join.set(chunk.subarray(0, take), held);
      const joinStart = chunkStart - held;
      const stop = this.parse(this.join, this.joinView, 0, held + take, held, joinStart);
      if (stop < held) {
        // Still unfinished: the chunk was too short. Keep the remaining bytes, now with the chunk's.
        this.join.copyWithin(0, stop, held + take);
        this.joinLength = held + take - stop;
        return;
      }
      pos = stop - held;
    }

    pos = this.parse(chunk, view, pos, chunk.length, chunk.length, chunkStart);
    this.join.set(chunk.subarray(pos));
    this.joinLength = chunk.length - pos;
  }

  end(): void {
    if (this.refused) throw this.refused;
    if (this.received < 3) {
      this.refused = new NotThisFormatError(this.received === 0 ? 'empty file' : `${this.received} bytes: too short for a DataFlash log`);
      throw this.refused;
    }
    if (this.badStart >= 0) {
      this.sink.skipped(this.badStart, this.received - this.badStart, `${this.badReason}; no message header after it`);
    } else if (this.joinLength > 0) {
      const start = this.received - this.joinLength;
      const format = this.joinLength >= 3 ? this.formats[this.join[2]!] : undefined;
      const what = format
        ? `${format.name} message of ${format.length} bytes, ${this.joinLength} present`
        : `${this.joinLength} bytes, too few for a message header`;
      this.sink.skipped(start, this.joinLength, `truncated tail: ${what}`);
    }
    this.badStart = -1;
    this.joinLength = 0;
  }

  /** Refuses a file whose first three bytes are not a FMT message's header, before anything reaches the sink. */
  private checkMagic(chunk: Uint8Array): void {
    const magic = [HEAD1, HEAD2, FMT_TYPE];
    for (let i = 0; this.received + i < 3 && i < chunk.length; i++) {
      if (chunk[i] !== magic[this.received + i]) {
        const head = Array.from(chunk.subarray(0, 3 - this.received), hex2).join(' ');
        this.refused = new NotThisFormatError(`not a DataFlash log: it does not begin with A3 95 80 (a FMT message) but ${head}`);
        throw this.refused;
      }
    }
  }

  /**
   * Reads the messages that begin in bytes[pos, stopAt) and are complete before `end`; returns where it
   * stopped: at stopAt or later, or earlier at an unfinished message. `base` is the file offset of bytes[0].
   */
  private parse(bytes: Uint8Array, view: DataView, pos: number, end: number, stopAt: number, base: number): number {
    const formats = this.formats;
    while (pos < stopAt && end - pos >= 3) {
      const format = bytes[pos] === HEAD1 && bytes[pos + 1] === HEAD2 ? formats[bytes[pos + 2]!] : undefined;
      if (format === undefined) {
        if (this.badStart < 0) {
          this.badStart = base + pos;
          this.badReason =
            bytes[pos] === HEAD1 && bytes[pos + 1] === HEAD2
              ? `message type ${bytes[pos + 2]} has no FMT`
              : `no message header (A3 95) but ${hex2(bytes[pos])} ${hex2(bytes[pos + 1])}`;
        }
        pos++;
        continue;
      }
      if (this.badStart >= 0) {
        this.sink.skipped(this.badStart, base + pos - this.badStart, `${this.badReason}; resynchronised at the next message header`);
        this.badStart = -1;
      }
      if (end - pos < format.length) break;
      this.message(format, bytes, view, pos, base);
      pos += format.length;
    }
    return pos;
  }

  private message(format: Format, bytes: Uint8Array, view: DataView, at: number, base: number): void {
    if (format.bootOp >= 0) {
      this.lastBootUs = readNumber(view, format.bootOp, at + format.bootOffset) * format.bootScale;
      this.bootSeen = true;
    }
    const bootUs = this.lastBootUs;
    if (this.clockOnly && format.role === Role.Data) {
      this.sink.data(-1, bootUs, NO_VALUES);
      return;
    }
    if (format.role >= Role.Fmt) {
      readValues(format, view, bytes, at, format.scratch);
      this.schema(format, base + at);
      return;
    }
    const state = this.typeOf(format, view, at);
    readValues(format, view, bytes, at, state.values);
    this.sink.data(state.type.id, bootUs, state.values);
    if (format.role !== Role.Data) this.special(format, state, bootUs);
  }

  /** The type of a message: its format's, per instance when the format has an instance field. */
  private typeOf(format: Format, view: DataView, at: number): TypeState {
    const instance = format.instanceOp < 0 ? 0 : readNumber(view, format.instanceOp, at + format.instanceOffset);
    if (instance === format.lastInstance) return format.lastState!;
    let state = format.instances.get(instance);
    if (state === undefined) {
      state = this.announce(format, instance);
      format.instances.set(instance, state);
    }
    format.lastInstance = instance;
    format.lastState = state;
    return state;
  }

  private announce(format: Format, instance: number): TypeState {
    const key = `${format.name}\0${instance}\0${format.format}\0${format.columns.join(',')}`;
    const known = this.typesByKey.get(key);
    if (known) return known;
    const units = format.columns.map((_, c) => this.unitOf(format, c));
    const fields: LogField[] = format.fieldNames.map((name, i) => {
      const unit = units[format.fieldColumns[i]!];
      return unit === undefined ? { name, type: format.fieldTypes[i]! } : { name, type: format.fieldTypes[i]!, unit };
    });
    const type: LogMessageType = { id: this.nextTypeId++, name: format.name, instance, fields };
    const state: TypeState = { type, values: new Array<LogValue>(fields.length).fill(0) };
    this.typesByKey.set(key, state);
    this.sink.type(type);
    return state;
  }

  /** A column's unit as DFReader derives it: the UNIT label, prefixed by the MULT multiplier (`cm`, `µs`). */
  private unitOf(format: Format, column: number): string | undefined {
    const id = format.unitIds?.[column];
    if (id === undefined || NO_UNIT_IDS.has(id)) return undefined;
    const label = this.unitLabels.get(id);
    if (!label) return undefined;
    if (FORMAT_CHARS[format.format[column]!]!.scaled) return label;
    const multId = format.multIds?.[column];
    const mult = multId === undefined ? undefined : this.multipliers.get(multId);
    if (mult === undefined) return label;
    const prefix = MULT_PREFIX.get(mult);
    return prefix === undefined ? `${formatG4(mult)} ${label}` : prefix + label;
  }

  private field(format: Format, values: readonly LogValue[], name: string): LogValue | undefined {
    const i = format.fieldNames.indexOf(name);
    return i < 0 ? undefined : values[i];
  }

  /** FMT, FMTU, UNIT, MULT: they configure the reader. */
  private schema(format: Format, offset: number): void {
    const v = format.scratch;
    switch (format.role) {
      case Role.Fmt: {
        const [type, length, name, formatChars, columns] = v as [number, number, string, string, string];
        // A FMT repeating the current definition (each log restart in one file repeats them all) changes
        // nothing: the type keeps its units, instance field and announced types (as DFReader's oldfmt).
        const signature = `${name}\0${length}\0${formatChars}\0${columns}`;
        if (this.formats[type]?.signature === signature) return;
        // The log's FMT for FMT itself: the reader's own layout is the one ArduPilot always writes.
        if (type === FMT_TYPE && length === FMT_LENGTH && formatChars === FMT_FORMAT) return;
        const compiled =
          type === FMT_TYPE ? 'FMT cannot be redefined' : compileFormat(type, name, length, formatChars, columns);
        if (typeof compiled === 'string') {
          // Its messages cannot be framed: without a FMT they are skipped as unknown bytes.
          if (type !== FMT_TYPE) this.formats[type] = undefined;
          this.sink.skipped(offset, format.length, `bad FMT for type ${type} (${name}): ${compiled}`);
          return;
        }
        this.formats[type] = compiled;
        return;
      }
      case Role.Fmtu: {
        const target = this.formats[Number(this.field(format, v, 'FmtType'))];
        const unitIds = this.field(format, v, 'UnitIds');
        const multIds = this.field(format, v, 'MultIds');
        if (target && typeof unitIds === 'string') setUnitIds(target, unitIds, typeof multIds === 'string' ? multIds : null);
        return;
      }
      case Role.Unit: {
        const id = Number(this.field(format, v, 'Id'));
        this.unitLabels.set(String.fromCharCode(id & 0xff), String(this.field(format, v, 'Label')));
        return;
      }
      case Role.Mult: {
        const id = Number(this.field(format, v, 'Id'));
        // Logged as doubles made from floats; DFReader rounds to 7 significant digits so that 1e-7 is 1e-7.
        this.multipliers.set(String.fromCharCode(id & 0xff), Number(Number(this.field(format, v, 'Mult')).toPrecision(7)));
        return;
      }
    }
  }

  /** PARM, MSG, ERR, EV, VER, GPS: besides their data, parameters, timeline texts, metadata and the clock. */
  private special(format: Format, state: TypeState, bootUs: number): void {
    const v = state.values;
    const at = this.bootSeen ? bootUs : null;
    switch (format.role) {
      case Role.Parm:
        this.sink.param(at, String(this.field(format, v, 'Name')), Number(this.field(format, v, 'Value')));
        return;
      case Role.Msg: {
        const text = String(this.field(format, v, 'Message'));
        this.sink.text(at, LEVEL_INFO, text, 'dataflash.MSG');
        if (!this.firmwareSeen && FIRMWARE_LINE.test(text)) {
          this.firmwareSeen = true;
          this.sink.info('firmware', text);
        }
        return;
      }
      case Role.Err: {
        const subsys = Number(this.field(format, v, 'Subsys'));
        const ecode = Number(this.field(format, v, 'ECode'));
        const name = ERROR_SUBSYSTEMS.get(subsys) ?? `subsystem ${subsys}`;
        // Code 0 is "resolved" for every subsystem (ERROR_RESOLVED, FAILSAFE_RESOLVED, EKFCHECK_VARIANCE_CLEARED).
        const text = `ERR ${name} code ${ecode}${ecode === 0 ? ' (resolved)' : ''}`;
        this.sink.text(at, LEVEL_ERROR, text, 'dataflash.ERR', { subsys, ecode });
        return;
      }
      case Role.Ev: {
        const id = Number(this.field(format, v, 'Id'));
        const name = EVENT_NAMES.get(id);
        this.sink.text(at, LEVEL_INFO, name ?? `EV ${id}`, 'dataflash.EV', name === undefined ? { id } : { id, name });
        return;
      }
      case Role.Ver:
        for (let i = 0; i < v.length; i++) {
          const value = v[i]!;
          if (value === '') continue;
          this.sink.info(`ver.${format.fieldNames[i]}`, typeof value === 'bigint' ? value.toString() : value);
        }
        return;
      case Role.Gps: {
        if (state.type.instance !== 0) return;
        const modern = format.fieldNames.includes('GWk');
        const week = Number(this.field(format, v, modern ? 'GWk' : 'Week'));
        const ms = Number(this.field(format, v, modern ? 'GMS' : 'TimeMS'));
        if (Number(this.field(format, v, 'Status')) >= GPS_FIX_3D && week > 0) {
          this.sink.clock(bootUs, GPS_EPOCH_US - GPS_LEAP_US + week * GPS_WEEK_US + ms * 1000);
        }
        return;
      }
    }
  }
}

/** A streaming reader of an ArduPilot DataFlash (.BIN) log; see the top of this file. */
/**
 * `clockOnly`: a first look at the file for its clock (the importer's pre-pass). Plain data messages are
 * passed to data() with their boot time only (type id -1, no values), undecoded; the messages that say
 * something of time or the log (GPS, PARM, MSG, ERR, EV, VER) are read in full, as always.
 */
export function createDataFlashParser(sink: LogSink, options: ParserOptions = {}): LogParser {
  return new DataFlashParser(sink, options.clockOnly ?? false);
}
