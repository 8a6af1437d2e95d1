/**
 * What a log reader hands the importer: a push parser is fed the file's bytes in chunks of any size
 * (an upload as it arrives, or a file read in order) and calls its sink as records complete. Nothing
 * is kept whole in memory: a reader holds at most the bytes of one unfinished message and the file's
 * formats. The sink's methods are called synchronously from push()/end(), in file order.
 *
 * Names follow one rule for every format: a message type's signals are `<namespace>.<type>.<field>`
 * for instance 0 (or a type without instances) and `<namespace>.<type>[<n>].<field>` for instance n;
 * array fields are flattened to `field[i]`, nested ULog structs to `field.sub` / `field[i].sub`
 * (as pyulog names them).
 */

/** How a logged field's values are stored: the narrow tables' column types (int8 holds uint32). */
export type LogColumnType = 'int2' | 'int4' | 'int8' | 'uint64' | 'float4' | 'float8' | 'text';

export interface LogField {
  /** Flattened field name: `roll`, `q[0]`, `esc[2].esc_rpm`. */
  name: string;
  type: LogColumnType;
  /** Unit where the log says (DataFlash FMTU/UNIT), e.g. `m/s`, `deg`; absent when unknown. */
  unit?: string;
}

/**
 * One message type of the file as stored: one table, one row per message. A ULog multi-instance topic
 * and a DataFlash message with an instance field are one type per instance.
 */
export interface LogMessageType {
  /** Dense id assigned by the reader, from 0, in the order types are first announced. */
  id: number;
  /** Topic (ULog) or message name (DataFlash), e.g. `vehicle_attitude`, `IMU`. */
  name: string;
  /** Multi-instance id (ULog multi_id, DataFlash instance field); 0 for types without instances. */
  instance: number;
  /** Fields in the order values are given; the boot timestamp (ULog `timestamp`, DataFlash `TimeUS`) is not among them. */
  fields: readonly LogField[];
}

/** A field's value: numbers for every numeric type up to 32 bits and floats, bigint for 64-bit integers, string for text. */
export type LogValue = number | bigint | string;

/** Severity of a logged string, syslog numbering as ULog and MAVLink use it: 0 emergency … 7 debug. */
export type LogLevel = 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7;

export interface LogSink {
  /** A message type, announced once before its first data(). */
  type(type: LogMessageType): void;
  /**
   * One logged message. `bootUs`: the log's boot clock in µs (ULog timestamp; DataFlash TimeUS, or the
   * last TimeUS seen for a message without one). `values` follows the type's fields and may be reused
   * by the reader after the call returns: copy what you keep.
   */
  data(typeId: number, bootUs: number, values: readonly LogValue[]): void;
  /**
   * A logged string or event for the timeline. `source` names where it came from: `ulog.logging`
   * (ULog L/C messages; `tag` set for C), `ulog.event` (PX4 events; `data` holds id, name when known,
   * arguments), `dataflash.MSG`, `dataflash.ERR`, `dataflash.EV`. bootUs null = before any timestamp.
   */
  text(bootUs: number | null, level: LogLevel, text: string, source: string, data?: Record<string, unknown>): void;
  /** A parameter value: bootUs null for the values in the file's header (ULog definitions section), else when it was logged. */
  param(bootUs: number | null, name: string, value: number): void;
  /** Metadata about the vehicle and the log (ULog information messages; DataFlash VER fields and firmware line). */
  info(key: string, value: string | number): void;
  /**
   * A pairing of the boot clock with UTC (µs since the Unix epoch) from the log's GPS time (ULog
   * vehicle_gps_position / sensor_gps time_utc_usec with a fix; DataFlash GPS week and milliseconds).
   * Called for every such message; the importer uses the first.
   */
  clock(bootUs: number, unixUs: number): void;
  /** Bytes the reader could not read as messages: a corrupted stretch (resynchronised after) or a truncated tail. */
  skipped(offset: number, bytes: number, reason: string): void;
}

export interface LogParser {
  /** Feed the next bytes of the file (any chunk size; the chunk may be reused after the call returns). */
  push(chunk: Uint8Array): void;
  /** The file ended: a partial message left over is reported as skipped (truncated tail). */
  end(): void;
  /** Bytes consumed so far (for progress). */
  readonly offset: number;
}

export interface ParserOptions {
  /**
   * Only the clock is wanted (the importer's first look for GPS time and the boot clock's span): plain
   * data messages reach data() with type id -1 and no values, undecoded. Types are not announced for them.
   */
  clockOnly?: boolean;
}

/** A file that is not of the reader's format at all (bad magic, unsupported version): refused, nothing imported. */
export class NotThisFormatError extends Error {}
