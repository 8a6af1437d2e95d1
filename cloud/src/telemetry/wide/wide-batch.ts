import { MAX_TIMESTAMP_SECONDS, TIMESTAMP_RANGE_MESSAGE, type TelemetryPoint } from '@sortie/contracts';
import type { ChannelRow } from '../../db/schema.ts';
import { ServiceError } from '../../platform/errors.ts';
import { ACCEPTED_CASES, isNumericColumn, type PointValueCase } from './point-values.ts';
import { quotedBytea, quotedText } from '../sql/sql-arrays.ts';

/** A writable column of a wide dataset: `ch_<index>` with its physical type. */
export interface WideColumnInfo {
  index: number;
  name: string;
  physicalType: string;
  /** Charted and rolled up (as doubles). */
  numeric: boolean;
  /** Bit per accepted oneof case (see CASE_BIT). */
  accepts: number;
}

/** One bit per oneof member, for a cheap acceptance test on the hot path. */
const CASE_BIT: Record<PointValueCase, number> = {
  string: 1 << 0,
  double: 1 << 1,
  float: 1 << 2,
  bool: 1 << 3,
  int32: 1 << 4,
  uint32: 1 << 5,
  int64: 1 << 6,
  uint64: 1 << 7,
  bitField: 1 << 8,
  enum: 1 << 9,
  empty: 1 << 10,
  bytes: 1 << 11,
};

/**
 * One column of a batch, aligned with WideBatch.times. `present[i]` says whether row i sets the column.
 * Double precision columns carry `values` only (sent as doubles); the others carry element texts in
 * `cells`, and numeric ones `values` too, for rollups.
 */
export interface WideBatchColumn {
  info: WideColumnInfo;
  present: Uint8Array;
  values: Float64Array | undefined;
  cells: Array<string | undefined> | undefined;
}

/** Points pivoted into rows: one row per distinct timestamp, times ascending. */
export interface WideBatch {
  /** µs since the epoch, strictly ascending. */
  times: Float64Array;
  columns: WideBatchColumn[];
  /** Cells holding a value (after merging points that share timestamp and channel). */
  cells: number;
  /** Points that landed on a cell an earlier point of the same batch had set (the later one wins). */
  mergedInBatch: number;
}

/** Ignored channel ids reported back are capped so a stream of random ids cannot grow the response. */
export const MAX_REPORTED_IGNORED_IDS = 100;

/** The channel index of a wide point's channel_id: decimal, canonical (no sign, no leading zero), or -1. */
export function channelIndexOf(id: string): number {
  const n = id.length;
  if (n === 0 || n > 9 || (n > 1 && id.charCodeAt(0) === 48)) return -1;
  let index = 0;
  for (let i = 0; i < n; i++) {
    const d = id.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    index = index * 10 + d;
  }
  return index;
}

export function writableColumns(channels: readonly ChannelRow[]): Map<number, WideColumnInfo> {
  const out = new Map<number, WideColumnInfo>();
  for (const ch of channels) {
    // Only the known physical types: the type text is spliced into SQL casts.
    if (ch.col_index === null || ch.physical_type === null || !Object.hasOwn(ACCEPTED_CASES, ch.physical_type)) continue;
    const accepts = ACCEPTED_CASES[ch.physical_type]!.reduce((bits, c) => bits | CASE_BIT[c], 0);
    out.set(ch.col_index, { index: ch.col_index, name: ch.col_name, physicalType: ch.physical_type, numeric: isNumericColumn(ch.physical_type), accepts });
  }
  return out;
}

/** A point addressed a `ch_N` this dataset has no physical column for. Callers may refresh the channel list and retry. */
export class UnknownColumnError extends ServiceError {
  readonly channelIndex: number;
  constructor(message: string, channelIndex: number) {
    super('invalid_request', message);
    this.channelIndex = channelIndex;
  }
}

/**
 * Names the point at `index` in error messages (`message 3, batch.points[17]`). Called only when
 * something is wrong; taking (locate, index) instead of a closure per point keeps the hot path free
 * of garbage.
 */
export type Locate = (index: number) => string;

/** The payload of a value beside its double: the exact 64-bit integer, the string, or the bytes. */
export type ValueExtra = bigint | string | Uint8Array | undefined;

interface ColumnState extends WideBatchColumn {
  values: Float64Array | undefined;
}

const INITIAL_ROWS = 1024;

/**
 * Validates points against a wide dataset's columns and pivots them into columnar rows. A point whose
 * channel_id is not a decimal index (a channel UUID, a name) is counted as ignored and never stored,
 * the spec's "accepted but writes nothing". Points sharing a timestamp share a row; a second point for
 * the same timestamp and channel replaces the first. A call that throws changes nothing.
 */
export class WideBatchBuilder {
  accepted = 0;
  ignored = 0;
  readonly ignoredIds = new Set<string>();
  #columns: ReadonlyMap<number, WideColumnInfo>;
  #capacity = INITIAL_ROWS;
  #times = new Float64Array(INITIAL_ROWS);
  #rows = 0;
  #maxTime = -Infinity;
  #lastTime = NaN;
  #lastRow = -1;
  /** Row by time; built only once points arrive out of time order. */
  #rowOf: Map<number, number> | undefined;
  #sorted = true;
  #batchColumns = new Map<number, ColumnState>();
  #cells = 0;
  #merged = 0;

  constructor(columns: ReadonlyMap<number, WideColumnInfo>) {
    this.#columns = columns;
  }

  /** Replace the column set (after the dataset was widened); pending cells are kept. */
  setColumns(columns: ReadonlyMap<number, WideColumnInfo>): void {
    this.#columns = columns;
  }

  /** Points staged and not yet taken. */
  get size(): number {
    return this.#cells + this.#merged;
  }

  /** Counters and size, to return to if staging a message fails halfway (see rollback). */
  mark(): { accepted: number; ignored: number; size: number } {
    return { accepted: this.accepted, ignored: this.ignored, size: this.size };
  }

  /**
   * Undo what was staged since `mark`. Staged cells can only be dropped all together, so a message of
   * several points must be staged into an empty builder.
   */
  rollback(mark: { accepted: number; ignored: number; size: number }): void {
    if (this.size !== mark.size) {
      if (mark.size !== 0) throw new Error('rollback over earlier staged points: stage multi-point messages into an empty builder');
      this.take();
    }
    this.accepted = mark.accepted;
    this.ignored = mark.ignored;
  }

  /** A point whose channel_id is not an index: accepted, counted, never stored. */
  ignore(channelId: string): void {
    this.accepted++;
    this.ignored++;
    if (this.ignoredIds.size < MAX_REPORTED_IGNORED_IDS) this.ignoredIds.add(channelId);
  }

  /** Stage a decoded TelemetryPoint (the JSON path); the binary path decodes straight into `put`. */
  addPoint(point: TelemetryPoint, locate: Locate, at: number): void {
    const index = channelIndexOf(point.channelId);
    if (index < 0) return this.ignore(point.channelId);
    if (point.frameSeq !== 0n) throw invalid(locate, at, 'frame_seq must be 0 outside mavlink-raw-v1 streams');
    const us = timestampMicros(point.timestamp?.seconds, point.timestamp?.nanos, locate, at);
    const value = point.type;
    switch (value.case) {
      case undefined:
        throw invalid(locate, at, 'the point carries no value (the `type` oneof is unset)');
      case 'double':
      case 'float':
      case 'int32':
      case 'uint32':
      case 'enum':
        return this.put(us, index, value.case, value.value, undefined, locate, at);
      case 'int64':
      case 'uint64':
        return this.put(us, index, value.case, Number(value.value), value.value, locate, at);
      case 'bool':
        return this.put(us, index, 'bool', value.value ? 1 : 0, undefined, locate, at);
      case 'empty':
        return this.put(us, index, 'empty', 1, undefined, locate, at);
      case 'string':
      case 'bytes':
      case 'bitField':
        return this.put(us, index, value.case, NaN, value.value, locate, at);
    }
  }

  /**
   * Stage one value for `ch_<index>` at `us`. `num` is the value as a double (bool 0/1, empty 1);
   * `extra` the exact 64-bit integer (when beyond 2^53), string or bytes.
   */
  put(us: number, index: number, kind: PointValueCase, num: number, extra: ValueExtra, locate: Locate, at: number): void {
    const column = this.#columns.get(index);
    if (!column) throw new UnknownColumnError(`${locate(at)}: channel ${index} (ch_${index}) has no physical column in this dataset`, index);
    if ((column.accepts & CASE_BIT[kind]) === 0) {
      throw invalid(
        locate,
        at,
        `channel ${index}: a ${kind} value does not fit the channel's ${column.physicalType} column; send one of ${ACCEPTED_CASES[column.physicalType]!.join(', ')}`,
      );
    }
    let text: string | undefined;
    if (column.physicalType !== 'double precision') {
      text = cellText(kind, num, extra);
      if (text === undefined) throw invalid(locate, at, `channel ${index}: a string value contains a NUL character, which text columns cannot store`);
    }

    this.#store(this.#rowFor(us), column, num, text);
  }

  #store(row: number, column: WideColumnInfo, num: number, text: string | undefined): void {
    let state = this.#batchColumns.get(column.index);
    if (!state) {
      state = {
        info: column,
        present: new Uint8Array(this.#capacity),
        values: column.numeric ? new Float64Array(this.#capacity) : undefined,
        cells: column.physicalType === 'double precision' ? undefined : [],
      };
      this.#batchColumns.set(column.index, state);
    }
    if (state.present[row]) this.#merged++;
    else {
      state.present[row] = 1;
      this.#cells++;
    }
    if (state.values) state.values[row] = num;
    if (state.cells) state.cells[row] = text;
    this.accepted++;
  }

  /**
   * Stage a value already checked against the column by the caller (HTTP append coerces JSON itself):
   * `num` as a double for numeric columns, `text` the element text for non-double columns.
   */
  putChecked(us: number, column: WideColumnInfo, num: number, text: string | undefined): void {
    const row = this.#rowFor(us);
    this.#store(row, column, num, text);
  }

  /** The pending rows, times ascending; the builder starts empty again (its counters keep running). */
  take(): WideBatch {
    const n = this.#rows;
    let times = this.#times.subarray(0, n);
    let columns: WideBatchColumn[] = [...this.#batchColumns.values()]
      .sort((a, b) => a.info.index - b.info.index)
      .map((c) => ({ info: c.info, present: c.present.subarray(0, n), values: c.values?.subarray(0, n), cells: c.cells }));
    if (!this.#sorted) {
      const order = Array.from({ length: n }, (_, i) => i).sort((a, b) => times[a]! - times[b]!);
      const permute = <T extends Float64Array | Uint8Array>(from: T, to: T): T => {
        for (let i = 0; i < n; i++) to[i] = from[order[i]!]!;
        return to;
      };
      times = permute(times, new Float64Array(n));
      columns = columns.map((c) => ({
        info: c.info,
        present: permute(c.present, new Uint8Array(n)),
        values: c.values && permute(c.values, new Float64Array(n)),
        cells: c.cells && order.map((i) => c.cells![i]),
      }));
    }
    const batch: WideBatch = { times, columns, cells: this.#cells, mergedInBatch: this.#merged };
    this.#capacity = INITIAL_ROWS;
    this.#times = new Float64Array(INITIAL_ROWS);
    this.#rows = 0;
    this.#maxTime = -Infinity;
    this.#lastTime = NaN;
    this.#lastRow = -1;
    this.#rowOf = undefined;
    this.#sorted = true;
    this.#batchColumns = new Map();
    this.#cells = 0;
    this.#merged = 0;
    return batch;
  }

  /** The row of time `us`, appended if new. Points in time order never touch the map. */
  #rowFor(us: number): number {
    if (us === this.#lastTime) return this.#lastRow;
    let row: number | undefined;
    if (us > this.#maxTime) {
      row = this.#append(us);
    } else {
      if (!this.#rowOf) {
        this.#rowOf = new Map();
        for (let i = 0; i < this.#rows; i++) this.#rowOf.set(this.#times[i]!, i);
      }
      row = this.#rowOf.get(us);
      if (row === undefined) {
        this.#sorted = false;
        row = this.#append(us);
      }
    }
    this.#lastTime = us;
    this.#lastRow = row;
    return row;
  }

  #append(us: number): number {
    if (this.#rows === this.#capacity) this.#grow();
    const row = this.#rows++;
    this.#times[row] = us;
    this.#rowOf?.set(us, row);
    if (us > this.#maxTime) this.#maxTime = us;
    return row;
  }

  #grow(): void {
    const capacity = this.#capacity * 2;
    const times = new Float64Array(capacity);
    times.set(this.#times);
    this.#times = times;
    for (const state of this.#batchColumns.values()) {
      const present = new Uint8Array(capacity);
      present.set(state.present);
      state.present = present;
      if (state.values) {
        const values = new Float64Array(capacity);
        values.set(state.values);
        state.values = values;
      }
    }
    this.#capacity = capacity;
  }
}

/** Element text of a non-double column; undefined for a string PostgreSQL text cannot hold (NUL). */
function cellText(kind: PointValueCase, num: number, extra: ValueExtra): string | undefined {
  switch (kind) {
    case 'int64':
    case 'uint64':
      return extra === undefined ? String(num) : String(extra);
    case 'bool':
      return num ? 't' : 'f';
    case 'empty':
      return 't';
    case 'string':
      return (extra as string).includes('\u0000') ? undefined : quotedText(extra as string);
    case 'bytes':
    case 'bitField':
      return quotedBytea(extra as Uint8Array);
    default:
      return String(num);
  }
}

function invalid(locate: Locate, at: number, message: string): ServiceError {
  return new ServiceError('invalid_request', `${locate(at)}: ${message}`);
}

/**
 * µs since the epoch of a protobuf Timestamp. PostgreSQL keeps microseconds, so nanoseconds below a
 * microsecond are dropped (floored): points less than 1 µs apart share a row.
 */
export function timestampMicros(seconds: bigint | number | undefined, nanos: number | undefined, locate: Locate, at: number): number {
  if (seconds === undefined || nanos === undefined) throw invalid(locate, at, 'timestamp is required');
  const s = Number(seconds);
  if (!(Math.abs(s) <= MAX_TIMESTAMP_SECONDS)) throw invalid(locate, at, `timestamp ${TIMESTAMP_RANGE_MESSAGE}`);
  if (!(nanos >= 0 && nanos <= 999_999_999)) throw invalid(locate, at, 'timestamp nanos must be within 0..999999999');
  return s * 1_000_000 + Math.floor(nanos / 1000);
}
