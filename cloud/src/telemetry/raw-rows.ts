import { parseLogSignalName } from '@sortie/contracts';
import { parseSignalName } from '@sortie/contracts/mavlink';
import { sql, type RawBuilder } from 'kysely';
import type { DatasetRow } from '../db/schema.ts';
import type { Executor } from '../db/executor.ts';
import { listChannelRows } from '../datasets/queries.ts';
import { invalidRequest } from '../platform/errors.ts';
import { anyValueSql, frameFields, frameObjectSql, framePages, frameValuesSql, type FrameRow, type FrameSource } from './narrow/frame-pages.ts';
import { findSignal, isLogTable, loadMessageTables, type ColumnType, type MessageTable, type SignalColumn } from './narrow/message-tables.ts';
import { signalInfo } from './narrow/signal-info.ts';
import { timestampToUs, usToTimestamp } from './sql/sql-time.ts';
import { writableColumns } from './wide/wide-batch.ts';

/**
 * Raw rows of a dataset, for export: every stored value, never downsampled, in time order, read a page
 * at a time so a long flight never sits whole in memory (the reader asks for the next page only when it
 * has written the last one). The second read entry of the wing beside read.ts's Query.
 */

export type RawValue = number | string | boolean | Uint8Array;

/** A value's type as an export writes it (CSV cell, JSON Schema of an MCAP message). */
export type RawValueType = 'number' | 'integer' | 'boolean' | 'string' | 'bytes';

export interface RawColumn {
  /** The channel's name (wide) or the signal's name (narrow: `mavlink.<MESSAGE>.<field>`). */
  name: string;
  type: RawValueType;
  /** Narrow: the MAVLink message type and field the signal belongs to (one MCAP channel per message). */
  message?: string;
  field?: string;
}

/**
 * One stored row (wide) or one MAVLink frame's chosen fields (narrow), at `t` µs on the dataset's time
 * axis (aligned time for narrow). `values[i]` belongs to `columns[i]`; undefined where there is none.
 * Records come in time order, and the samples of a signal in the order Query returns them.
 */
export interface RawRecord {
  t: number;
  values: (RawValue | undefined)[];
}

export interface RawRowsRequest {
  /** Channel (wide: name or `ch_N`) or signal (narrow) names; empty = every channel of the dataset. */
  channels: readonly string[];
  /** µs, from inclusive, to exclusive; undefined = unbounded. */
  from: number | undefined;
  to: number | undefined;
  /** Values per page (default PAGE_VALUES); tests make pages small to cross many of them. */
  pageValues?: number;
}

export interface RawRows {
  columns: RawColumn[];
  /** Pages of records in time order. Each page is read when the previous one has been taken. */
  pages(): AsyncGenerator<RawRecord[]>;
}

/** About this many values per page: a few MB in memory at most, and few enough round trips. */
const PAGE_VALUES = 50_000;

/**
 * Resolve the columns and check the request before anything is written, so every refusal is still an
 * error envelope; then hand back the pages to stream.
 */
export async function openRawRows(db: Executor, dataset: DatasetRow, request: RawRowsRequest): Promise<RawRows> {
  if (request.from !== undefined && request.to !== undefined && request.from > request.to) {
    throw invalidRequest('`start` is after `end`', [{ field: 'start', message: 'is after end' }]);
  }
  return dataset.storage_shape === 'narrow' ? openNarrow(db, dataset, request) : openWide(db, dataset, request);
}

function unknownChannel(index: number, name: string, why: string) {
  return invalidRequest(`channel ${JSON.stringify(name)} ${why}; GET /api/datasets/channels lists this dataset's channels`, [
    { field: 'channel', message: `${JSON.stringify(name)} (channel[${index}]) ${why}` },
  ]);
}

// ---- wide ------------------------------------------------------------------------------------------

/** A page row: the time and the chosen columns as `v0`, `v1`, … (a column's own name may be any `ch_N`). */
type WideRawRow = { t: number } & Partial<Record<`v${number}`, RawValue | null>>;

interface WideColumn extends RawColumn {
  column: string;
  select: RawBuilder<unknown>;
}

const WIDE_TYPES: Record<string, { type: RawValueType; cast: (ref: RawBuilder<unknown>) => RawBuilder<unknown> }> = {
  'double precision': { type: 'number', cast: (ref) => sql`${ref}::float8` },
  // int8 and numeric(20,0) as text: exact, where a JS number would round above 2^53.
  bigint: { type: 'integer', cast: (ref) => sql`${ref}::text` },
  'numeric(20,0)': { type: 'integer', cast: (ref) => sql`${ref}::text` },
  boolean: { type: 'boolean', cast: (ref) => ref },
  text: { type: 'string', cast: (ref) => ref },
  bytea: { type: 'bytes', cast: (ref) => ref },
};

async function openWide(db: Executor, dataset: DatasetRow, request: RawRowsRequest): Promise<RawRows> {
  const rows = await listChannelRows(db, dataset.id);
  const physical = writableColumns(rows);
  const usable = rows.filter((r) => r.col_index !== null && physical.has(r.col_index));
  const byName = new Map<string, (typeof usable)[number]>();
  for (const r of usable) {
    byName.set(r.name, r);
    byName.set(r.col_name, r);
  }
  const chosen = request.channels.length === 0 ? usable : request.channels.map((name, i) => byName.get(name) ?? fail(unknownChannel(i, name, 'is not a channel of this dataset with a column')));
  const columns: WideColumn[] = chosen.map((r) => {
    const info = physical.get(r.col_index!)!;
    const mapping = WIDE_TYPES[info.physicalType]!;
    const ref = sql.ref(`w.${info.name}`);
    return { name: r.name, type: mapping.type, column: info.name, select: mapping.cast(ref) };
  });
  const table = dataset.table_name!;
  const pageRows = Math.max(1, Math.floor((request.pageValues ?? PAGE_VALUES) / Math.max(1, columns.length)));
  return {
    columns: columns.map(({ name, type }) => ({ name, type })),
    async *pages() {
      if (columns.length === 0) return;
      const anyValue = sql.join(columns.map((c) => sql`${sql.ref(`w.${c.column}`)} is not null`), sql` or `);
      const selects = sql.join(columns.map((c, i) => sql`${c.select} as ${sql.ref(`v${i}`)}`));
      let after: number | undefined;
      for (;;) {
        const bounds = [sql`(${anyValue})`];
        if (after !== undefined) bounds.push(sql`w.time > ${usToTimestamp(after)}`);
        else if (request.from !== undefined) bounds.push(sql`w.time >= ${usToTimestamp(request.from)}`);
        if (request.to !== undefined) bounds.push(sql`w.time < ${usToTimestamp(request.to)}`);
        // Keyset pages on the primary key (time): each page is an index range scan, whatever its offset.
        const result = await sql<WideRawRow>`
          select ${timestampToUs('w.time')} as t, ${selects} from ${sql.table(table)} as w
          where ${sql.join(bounds, sql` and `)} order by w.time limit ${pageRows}`.execute(db);
        if (result.rows.length === 0) return;
        yield result.rows.map((row) => ({
          t: row.t,
          values: columns.map((_, i) => nullToUndefined(row[`v${i}`])),
        }));
        if (result.rows.length < pageRows) return;
        after = result.rows[result.rows.length - 1]!.t;
      }
    },
  };
}

// ---- narrow ----------------------------------------------------------------------------------------

/** How an export names a narrow column's values (RawColumn.type). */
const NARROW_TYPES: Record<ColumnType, RawValueType> = {
  int2: 'number',
  int4: 'number',
  float4: 'number',
  float8: 'number',
  int8: 'integer',
  uint64: 'integer',
  text: 'string',
  bytea: 'bytes',
};

/** A chosen signal of a narrow dataset: where it is stored. */
interface NarrowChoice {
  signal: string;
  msgid: number;
  table: string;
  column: SignalColumn;
  /** The table's message name (`ATTITUDE`, `vehicle_attitude`, `IMU[1]`) and its columns. */
  message: string;
  source: MessageTable;
}

/**
 * The signals of a MAVLink dataset an export reads: the named ones (each stored by the dataset, of any
 * kind: numbers, text, raw bytes), or every signal it stored, in name order (the channel list's).
 */
async function narrowChoices(db: Executor, dataset: DatasetRow, channels: readonly string[]): Promise<NarrowChoice[]> {
  const tables = await loadMessageTables(db, dataset.id);
  if (channels.length === 0) {
    const all: NarrowChoice[] = [];
    for (const table of tables.values()) {
      for (const column of table.columns) {
        if (table.signals.has(column.signal)) all.push({ signal: column.signal, msgid: table.msgid, table: table.table, column, message: table.message, source: table });
      }
    }
    return all.sort((a, b) => (a.signal < b.signal ? -1 : a.signal > b.signal ? 1 : 0));
  }
  return channels.map((name, i) => {
    const at = findSignal(tables, name);
    if (!at || !at.table.signals.has(name)) {
      throw unknownChannel(
        i,
        name,
        parseSignalName(name) || parseLogSignalName(name) ? 'was never stored by this dataset' : 'is not a signal name (mavlink.<MESSAGE>.<field>, ulog.<topic>.<field>, dataflash.<MESSAGE>.<field>)',
      );
    }
    return { signal: name, msgid: at.table.msgid, table: at.table.table, column: at.column, message: at.table.message, source: at.table };
  });
}

/**
 * Rows per keyset page of one message table: half a page of values, at most 8,192 rows. Each page scans
 * its table (there is no index on aligned time), so larger pages mean fewer scans; one page per table is
 * in memory at a time (~20 MB at most for the SITL flight's 41 tables, measured by bench:export).
 */
function tablePageRows(pageValues: number, columns: number): number {
  return Math.max(1, Math.min(8192, Math.floor(pageValues / 2 / Math.max(1, columns))));
}

/**
 * A MAVLink dataset's signals, read straight from its message tables (narrow/frame-pages.ts): one
 * record per stored frame, in (aligned time, frame_seq) order, holding the chosen signals that frame
 * carried. Numbers are the doubles Query answers (a 64-bit integer beyond 2^53 as its exact decimal),
 * text signals their text, an unknown id's payload base64.
 */
async function openNarrow(db: Executor, dataset: DatasetRow, request: RawRowsRequest): Promise<RawRows> {
  const choices = await narrowChoices(db, dataset, request.channels);
  const columns: RawColumn[] = choices.map((c) => ({ name: c.signal, type: NARROW_TYPES[c.column.type], message: c.message, field: fieldOf(c.signal) }));
  const pageValues = request.pageValues ?? PAGE_VALUES;
  // One source per message table; its `indexes` place the flat values it reads in the export's columns.
  const byMsgid = new Map<number, { table: string; indexes: number[]; columns: SignalColumn[]; source: MessageTable }>();
  choices.forEach((c, i) => {
    const entry = byMsgid.get(c.msgid) ?? { table: c.table, indexes: [], columns: [], source: c.source };
    entry.indexes.push(i);
    entry.columns.push(c.column);
    byMsgid.set(c.msgid, entry);
  });
  const sources: FrameSource[] = [...byMsgid].map(([msgid, e]) => ({
    msgid,
    table: e.source,
    select: frameValuesSql(e.columns),
    where: anyValueSql(e.source, e.columns),
    pageRows: tablePageRows(pageValues, e.columns.length),
  }));
  const width = columns.length;
  return {
    columns,
    async *pages() {
      // About a page of values per page of frames: a frame holds its table's chosen columns.
      const perFrame = Math.max(1, width / Math.max(1, byMsgid.size));
      const frames = framePages(db, dataset.id, sources, request, Math.max(1, Math.floor(pageValues / perFrame)));
      for await (const page of frames) {
        yield page.map((frame) => {
          const values: (RawValue | undefined)[] = new Array(width);
          const indexes = byMsgid.get(frame.msgid)!.indexes;
          (JSON.parse(frame.json) as (number | string | null)[]).forEach((v, k) => {
            if (v !== null) values[indexes[k]!] = v;
          });
          return { t: frame.t, values };
        });
      }
    },
  };
}

/** One MCAP channel of a MAVLink export: a message type, its JSON Schema, and the fields its messages hold. */
export interface MavlinkChannel {
  msgid: number;
  /** `ATTITUDE`, or `UNKNOWN_<id>` for an id outside the dialect; an imported log's `vehicle_attitude`, `IMU[1]`. */
  message: string;
  /** `mavlink`, or the log's namespace (`ulog`, `dataflash`): the MCAP topic is `/<namespace>/<message>`. */
  namespace: string;
  /** JSON Schema of the channel's messages, in the subset Foxglove reads (one `type` per field). */
  schema: Record<string, unknown>;
}

export interface MavlinkMessages {
  channels: MavlinkChannel[];
  /** The system id the dataset is bound to (its frames'), null before the first frame. */
  systemId: number | null;
  /** Pages of frames in (aligned time, frame_seq) order; `json` is the message's JSON object. */
  pages(): AsyncGenerator<FrameRow[]>;
}

const FIELD_SCHEMA: Record<ColumnType, Record<string, unknown>> = {
  int2: { type: 'integer' },
  int4: { type: 'integer' },
  int8: { type: 'integer' },
  uint64: { type: 'integer' },
  float4: { type: 'number' },
  float8: { type: 'number' },
  text: { type: 'string' },
  bytea: { type: 'string', contentEncoding: 'base64' },
};

/**
 * A MAVLink dataset as whole messages, for MCAP: one channel per message type, one message per stored
 * frame with every field it carried (numeric arrays as arrays, text as strings, an unknown id's payload
 * as base64; NaN and infinities, which JSON lacks, as null). Named channels (signal names) choose the
 * message types and, of each, the fields they name (an element of an array brings its whole array).
 */
export async function openMavlinkMessages(db: Executor, dataset: DatasetRow, request: RawRowsRequest): Promise<MavlinkMessages> {
  if (request.from !== undefined && request.to !== undefined && request.from > request.to) {
    throw invalidRequest('`start` is after `end`', [{ field: 'start', message: 'is after end' }]);
  }
  const choices = await narrowChoices(db, dataset, request.channels);
  const chosen = new Map<number, { table: string; signals: Set<string>; source: MessageTable }>();
  for (const c of choices) {
    const entry = chosen.get(c.msgid) ?? { table: c.table, signals: new Set(), source: c.source };
    entry.signals.add(c.signal);
    chosen.set(c.msgid, entry);
  }
  const pageValues = request.pageValues ?? PAGE_VALUES;
  const channels: MavlinkChannel[] = [];
  const sources: FrameSource[] = [];
  for (const [msgid, entry] of [...chosen].sort((a, b) => a[0] - b[0])) {
    const fields = frameFields(entry.source).filter((f) => f.columns.some((c) => entry.signals.has(c.signal)));
    const chosenColumns = fields.flatMap((f) => f.columns).filter((c) => entry.signals.has(c.signal));
    const message = entry.source.message;
    const namespace = isLogTable(msgid) ? (parseLogSignalName(fields[0]!.columns[0]!.signal)?.namespace ?? 'log') : 'mavlink';
    const properties = Object.fromEntries(
      fields.map((f) => {
        const unit = signalInfo(f.columns[0]!.signal)?.unit ?? f.columns[0]!.unit;
        const scalar = { ...FIELD_SCHEMA[f.type], ...(unit && { description: unit }) };
        return [f.name, f.array ? { type: 'array', items: FIELD_SCHEMA[f.type], ...(unit && { description: unit }) } : scalar];
      }),
    );
    channels.push({ msgid, message, namespace, schema: { title: `${namespace}.${message}`, type: 'object', properties } });
    const width = fields.reduce((n, f) => n + f.columns.length, 0);
    sources.push({ msgid, table: entry.source, select: frameObjectSql(fields), where: anyValueSql(entry.source, chosenColumns), pageRows: tablePageRows(pageValues, width) });
  }
  const bound = await sql<{ sysid: number | null }>`select sysid from narrow_datasets where dataset_id = ${dataset.id}::uuid`.execute(db);
  // About a page of values per page of frames (a frame of the SITL capture holds ~8).
  const pageFrames = Math.max(1, Math.floor(pageValues / 8));
  return { channels, systemId: bound.rows[0]?.sysid ?? null, pages: () => framePages(db, dataset.id, sources, request, pageFrames) };
}

/** The field part of a signal name: `roll` of `mavlink.ATTITUDE.roll`, `q[0]` of `ulog.vehicle_attitude.q[0]`. */
function fieldOf(signal: string): string {
  const log = parseLogSignalName(signal);
  if (log) return log.field;
  const mavlink = parseSignalName(signal);
  return mavlink ? signal.slice(`mavlink.${mavlink.message}.`.length) : signal;
}

function nullToUndefined(value: unknown): RawValue | undefined {
  if (value === null || value === undefined) return undefined;
  if (value instanceof Uint8Array) return new Uint8Array(value);
  return value as RawValue;
}

function fail(error: Error): never {
  throw error;
}
