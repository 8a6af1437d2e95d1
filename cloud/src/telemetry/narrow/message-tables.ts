import { MAVLINK_REGISTRY, parseSignalName, unknownSignalName } from '@sortie/contracts/mavlink';
import { sql, type RawBuilder } from 'kysely';
import type { Executor } from '../../db/executor.ts';
import { quoteIdent } from '../../db/sql-text.ts';
import { makeNarrowHypertable } from './narrow-timescale.ts';
import { CHAR, F32, F64, I16, I32, I64, I8, messageLayoutOf, TEXT, U16, U32, U64, U8 } from './decode.ts';

/**
 * The physical shape of narrow datasets (docs/decisions/0006-narrow-mavlink.md, "one row per message"):
 * one typed table per (dataset, MAVLink message id), one row per frame, one column per signal the
 * message yields (a field, one element of a numeric array, or the raw payload of an id outside the
 * dialect), like a wide dataset's ch_N columns. Every row carries the frame's clock columns
 * (frame_seq, time, received_at, boot_us, boot_session, time_source). `narrow_message_tables` lists a
 * dataset's tables and the signals each has stored a value of (so the channel list and NOT_FOUND read
 * one small row per message, never the data).
 */

/** PostgreSQL column type of a signal; each holds the field's values exactly. */
export type ColumnType = 'int2' | 'int4' | 'int8' | 'uint64' | 'float4' | 'float8' | 'text' | 'bytea';

export interface SignalColumn {
  signal: string;
  /** Column name in the message table: `f_<field>` or `f_<field>_<i>`, or `raw`. */
  column: string;
  type: ColumnType;
  /** A log field's unit where the log gives one (DataFlash FMTU); MAVLink units come from the dialect. */
  unit?: string;
}

export interface MessageColumns {
  msgid: number;
  /** The message's name for a log's table (`vehicle_attitude`, `IMU[1]`); MAVLink tables are named by the dialect. */
  message?: string;
  /** In the order the decoder yields a frame's samples (wire order): column k takes sample k. */
  columns: readonly SignalColumn[];
}

// The narrowest PostgreSQL type that holds every value of the MAVLink type. uint64 is stored as int8
// two's complement (8 bytes, exact) and read back unsigned (unsignedSql).
const TYPE_OF_KIND: Record<number, ColumnType> = {
  [U8]: 'int2',
  [I8]: 'int2',
  [U16]: 'int4',
  [I16]: 'int2',
  [U32]: 'int8',
  [I32]: 'int4',
  [U64]: 'uint64',
  [I64]: 'int8',
  [F32]: 'float4',
  [F64]: 'float8',
  [CHAR]: 'text',
  [TEXT]: 'text',
};

export const SQL_TYPE: Record<ColumnType, string> = {
  int2: 'int2',
  int4: 'int4',
  int8: 'int8',
  uint64: 'int8',
  float4: 'float4',
  float8: 'float8',
  text: 'text',
  bytea: 'bytea',
};

const BY_MSGID = new Map<number, MessageColumns>();

/** The columns of a message id's table; an id outside the dialect has one `raw` bytea column. */
export function messageColumns(msgid: number): MessageColumns {
  let found = BY_MSGID.get(msgid);
  if (found) return found;
  const layout = messageLayoutOf(msgid);
  const columns: SignalColumn[] = [];
  if (!layout) columns.push({ signal: unknownSignalName(msgid), column: 'raw', type: 'bytea' });
  else {
    for (const field of layout.fields) {
      const type = TYPE_OF_KIND[field.kind]!;
      if (field.signals.length === 1) columns.push({ signal: field.signals[0]!, column: `f_${field.source}`, type });
      else field.signals.forEach((signal, i) => columns.push({ signal, column: `f_${field.source}_${i}`, type }));
    }
  }
  found = { msgid, columns };
  BY_MSGID.set(msgid, found);
  return found;
}

/**
 * Table keys at or above this are the message types of an imported log (message type and instance,
 * described by the log itself, logs/ in imports): their columns are stored with the table
 * (narrow_message_tables.columns), named `f<k>` in field order. Below it, keys are MAVLink message ids
 * (24-bit), whose columns the dialect gives.
 */
export const LOG_TABLE_KEY_BASE = 0x1_00_00_00;

export function isLogTable(msgid: number): boolean {
  return msgid >= LOG_TABLE_KEY_BASE;
}

const MSGID_OF_NAME: ReadonlyMap<string, number> = new Map([...MAVLINK_REGISTRY.values()].map((c) => [c.MSG_NAME, c.MSG_ID]));

/** Where a signal is stored: its message id and column; undefined for a name no frame can yield. */
export function signalColumn(signal: string): { msgid: number; column: SignalColumn } | undefined {
  const parsed = parseSignalName(signal);
  if (!parsed) return undefined;
  const msgid = parsed.unknown ?? MSGID_OF_NAME.get(parsed.message);
  if (msgid === undefined) return undefined;
  const column = messageColumns(msgid).columns.find((c) => c.signal === signal);
  return column && { msgid, column };
}

/** The table of one message id of one dataset: `narrow_m_<dataset uuid hex>_<msgid>` (≤ 49 characters). */
export function messageTableName(datasetId: string, msgid: number): string {
  return `narrow_m_${datasetId.replaceAll('-', '')}_${msgid}`;
}

/** A value column read as float8 (Query reads numbers); uint64 back from its two's complement. */
export function numericSql(column: SignalColumn, alias = ''): string {
  const c = `${alias}${quoteIdent(column.column)}`;
  if (column.type === 'uint64') return `(case when ${c} < 0 then (${c}::numeric + 18446744073709551616)::float8 else ${c}::float8 end)`;
  return `${c}::float8`;
}

/** Whether a column holds numbers (Query and limits read those; text and raw payloads are exported only). */
export function holdsNumber(column: SignalColumn): boolean {
  return column.type !== 'text' && column.type !== 'bytea';
}

/**
 * The DDL of a message table. The key is frame_seq: a frame is one row, so a redelivered frame
 * collides with the row it wrote and `on conflict do nothing` drops it; the key is also the only index
 * (reads of one signal read its message's table, which holds nothing else). Clock columns first,
 * fixed-width and widest first; field columns follow in wire order, which MAVLink sorts by size.
 */
export function createTableSql(table: string, columns: readonly SignalColumn[], keyed = true): string {
  const fields = columns.map((c) => `${quoteIdent(c.column)} ${SQL_TYPE[c.type]}`).join(', ');
  return `create table if not exists ${quoteIdent(table)} (
    frame_seq bigint ${keyed ? 'primary key' : 'not null'}, time timestamptz not null, received_at timestamptz not null, boot_us bigint,
    boot_session integer not null, time_source "char" not null, ${fields})`;
}

/**
 * A short flight's rows in one table (docs/decisions/0015-short-flights-stored-small.md). Every relation
 * has a fixed cost whatever it holds: its free space map (24 KiB once the heap passes one page), its key
 * index (16 KiB at least), its last page half empty. With one table per message id that is ~90 bytes per
 * frame of a 4-minute SITL flight (41 tables, 23,894 frames), more than the key and the free space of a
 * long flight together. So a new MAVLink dataset's first SHARED_FRAMES frames go to one table of its own,
 * `narrow_s_<dataset hex>`: the clock columns, the message id, and typed slots a message's columns are
 * placed in (its k-th int4 column in i4_k, and so on), widest first so rows pad little; its message
 * tables are made at once but stay empty and unkeyed. When a frame at or past SHARED_FRAMES comes, the
 * writer moves every row into its message table, keys the tables, and empties the shared table
 * (narrow-writer.ts): from then on the dataset is laid out as a long flight always was.
 *
 * Readers read a message of such a dataset as its table and its rows in the shared table together
 * (`messageRelationSql`), so they never need to know which holds the rows: before the move the table is
 * empty, after it the shared table is.
 */
export const SHARED_FRAMES = 50_000;

/** The key narrow_message_tables lists a dataset's shared table under (MAVLink ids are ≥ 0, log keys ≥ 2^24). */
export const SHARED_TABLE_KEY = -1;

/** Slots per column type, in the table's column order (8-byte types first, then 4, 2, 1, variable). */
const SLOT_FAMILIES: ReadonlyArray<{ sqlType: string; prefix: string; count: number }> = [
  { sqlType: 'int8', prefix: 'i8', count: 6 },
  { sqlType: 'float8', prefix: 'f8', count: 2 },
  { sqlType: 'float4', prefix: 'f4', count: 14 },
  { sqlType: 'int4', prefix: 'i4', count: 20 },
  { sqlType: 'int2', prefix: 'i2', count: 12 },
  { sqlType: 'text', prefix: 't', count: 1 },
  { sqlType: 'bytea', prefix: 'b', count: 1 },
];
// 63 columns in all: a row's null bitmap stays within the 32-byte header a row with a NULL has anyway.

export function sharedTableName(datasetId: string): string {
  return `narrow_s_${datasetId.replaceAll('-', '')}`;
}

/**
 * The shared-table slot of each of a message's columns, or undefined when the message cannot be
 * kept there (a log's message type, or more columns of one type than there are slots): such a message
 * has its keyed table from the start.
 */
export function sharedSlots(msgid: number, columns: readonly SignalColumn[]): string[] | undefined {
  if (isLogTable(msgid)) return undefined;
  let found = SLOTS_OF.get(columns);
  if (found === undefined) SLOTS_OF.set(columns, (found = slotsOf(columns) ?? null));
  return found ?? undefined;
}

const SLOTS_OF = new WeakMap<readonly SignalColumn[], string[] | null>();

function slotsOf(columns: readonly SignalColumn[]): string[] | undefined {
  const used = new Map<string, number>();
  const slots: string[] = [];
  for (const c of columns) {
    const family = SLOT_FAMILIES.find((f) => f.sqlType === SQL_TYPE[c.type])!;
    const k = used.get(family.prefix) ?? 0;
    if (k >= family.count) return undefined;
    used.set(family.prefix, k + 1);
    slots.push(`${family.prefix}_${k}`);
  }
  return slots;
}

/** The shared table's DDL: no key (the writer keeps a frame once, under the dataset's row lock), a BRIN on frame_seq for its ranges. */
export function createSharedTableSql(table: string): string[] {
  const slots = SLOT_FAMILIES.map((f) => Array.from({ length: f.count }, (_, k) => `${f.prefix}_${k} ${f.sqlType}`));
  const [i8, f8, f4, i4, i2, t, b] = slots as [string[], string[], string[], string[], string[], string[], string[]];
  return [
    `create table if not exists ${quoteIdent(table)} (
    frame_seq bigint not null, time timestamptz not null, received_at timestamptz not null, boot_us bigint, ${[...i8, ...f8].join(', ')},
    boot_session integer not null, msgid integer not null, ${[...f4, ...i4, ...i2].join(', ')}, time_source "char" not null, ${[...t, ...b].join(', ')})`,
    `create index if not exists ${quoteIdent(`${table}_seq`)} on ${quoteIdent(table)} using brin (frame_seq) with (pages_per_range = 16)`,
  ];
}

/** The clock columns every message table and the shared table begin their rows with, in that order. */
export const CLOCK_COLUMNS = 'frame_seq, time, received_at, boot_us, boot_session, time_source';

/** The shared table's rows of one message, with its table's columns (names, order and types). */
function sharedRowsSql(shared: string, msgid: number, columns: readonly SignalColumn[]): string {
  const slots = sharedSlots(msgid, columns);
  if (!slots) return '';
  const fields = columns.map((c, i) => `${slots[i]} as ${quoteIdent(c.column)}`);
  return `select ${CLOCK_COLUMNS}${fields.length ? ', ' : ''}${fields.join(', ')} from ${quoteIdent(shared)} where msgid = ${msgid}`;
}

/**
 * A message's rows as a relation to read from: its table, or, while the dataset's shared table is open
 * (a flight still short of SHARED_FRAMES), its table and its rows there as one (UNION ALL: PostgreSQL
 * pushes conditions and the frame_seq order into both, and the empty one costs nothing). Whether the
 * shared table is read comes with the table from loadMessageTables; a reader holding tables loaded
 * before the move reads the emptied shared table too, which answers the same.
 */
export function messageRelationSql(table: Pick<MessageTable, 'msgid' | 'table' | 'columns' | 'sharedTable'>): RawBuilder<unknown> {
  const own = table.sharedTable === undefined ? '' : sharedRowsSql(table.sharedTable, table.msgid, table.columns);
  if (!own) return sql.table(table.table);
  const columns = table.columns.map((c) => quoteIdent(c.column));
  return sql.raw(`(select ${CLOCK_COLUMNS}${columns.length ? ', ' : ''}${columns.join(', ')} from ${quoteIdent(table.table)} union all ${own})`);
}

/** time_source as stored ("char"), and as clients see it. */
export const SOURCE_CODE = { gps: 'g', boot: 'b', agent: 'a' } as const;
export const SOURCE_NAME_SQL = `(case time_source when 'g' then 'gps' when 'b' then 'boot' else 'agent' end)`;

export interface MessageTable {
  msgid: number;
  table: string;
  /** The message's name: the dialect's (`ATTITUDE`) or the log's (`vehicle_attitude`, `IMU[1]`). */
  message: string;
  /** The table's signal columns, in the order a row's values are given. */
  columns: readonly SignalColumn[];
  /** The oid of the table's row type: the writer sends a table's rows as one array of it (column-arrays.ts). */
  rowType: number;
  /** Signals the table has stored a value of. */
  signals: Set<string>;
  /** The dataset's shared table when it was open as the table was loaded: some of the message's rows may be there. */
  sharedTable?: string;
}

/** A dataset's shared table, as the writer needs it: its name, and whether it still takes frames. */
export interface SharedTable {
  table: string;
  open: boolean;
}

/**
 * A dataset's message tables, by message id (or log table key). Each names the dataset's shared table
 * while that is open (`sharedTable`), so readers read the message's rows wherever they are
 * (messageRelationSql).
 */
export async function loadMessageTables(db: Executor, datasetId: string): Promise<Map<number, MessageTable>> {
  const result = await sql<{ msgid: number; table_name: string; signals: string[]; row_type: number; message: string | null; columns: SignalColumn[] | null; shared_open: boolean | null }>`
    select t.msgid, t.table_name, t.signals, c.reltype::int8::float8 as row_type, t.message, t.columns, d.shared_open
    from narrow_message_tables t join pg_class c on c.oid = to_regclass(quote_ident(t.table_name))
    left join narrow_datasets d on d.dataset_id = t.dataset_id
    where t.dataset_id = ${datasetId}::uuid order by t.msgid`.execute(db);
  const shared = result.rows.find((r) => r.msgid === SHARED_TABLE_KEY && r.shared_open);
  return new Map(
    result.rows.filter((r) => r.msgid !== SHARED_TABLE_KEY).map((r) => [
      r.msgid,
      {
        msgid: r.msgid,
        table: r.table_name,
        rowType: r.row_type,
        signals: new Set(r.signals),
        message: r.message ?? messageNameOf(r.msgid),
        columns: r.columns ?? messageColumns(r.msgid).columns,
        ...(shared && { sharedTable: shared.table_name }),
      },
    ]),
  );
}

/** A MAVLink message id's name in the dialect, or `UNKNOWN_<id>`. */
function messageNameOf(msgid: number): string {
  return messageLayoutOf(msgid)?.name ?? `UNKNOWN_${msgid}`;
}

/** Every table's signals by name, built once per tables map (a map lives as long as its reader's request or cache). */
const SIGNAL_INDEX = new WeakMap<ReadonlyMap<number, MessageTable>, Map<string, { table: MessageTable; column: SignalColumn }>>();

/**
 * Where a dataset stores a signal: its table and column, or undefined when none of its tables has a
 * column of that name (MAVLink and log signals alike; whether a value was ever stored is `table.signals`).
 */
export function findSignal(tables: ReadonlyMap<number, MessageTable>, signal: string): { table: MessageTable; column: SignalColumn } | undefined {
  let index = SIGNAL_INDEX.get(tables);
  if (!index || index.size === 0) {
    index = new Map();
    for (const table of tables.values()) for (const column of table.columns) index.set(column.signal, { table, column });
    SIGNAL_INDEX.set(tables, index);
  }
  return index.get(signal);
}

/**
 * Make sure the dataset has a table for each of `msgids` and that `narrow_message_tables` lists the
 * signals given for each; `known` is the caller's copy (updated in place). Run under the dataset's row
 * lock (the writer's transaction), so two writers never race on one table's DDL.
 */
export async function ensureMessageTables(
  db: Executor,
  datasetId: string,
  known: Map<number, MessageTable>,
  present: ReadonlyMap<number, ReadonlySet<string>>,
  timescale: boolean,
  layoutOf: (msgid: number) => MessageColumns = messageColumns,
  shared?: SharedTable,
): Promise<void> {
  for (const [msgid, signals] of present) {
    let table = known.get(msgid);
    if (!table) {
      const name = messageTableName(datasetId, msgid);
      const layout = layoutOf(msgid);
      // While the dataset's shared table takes frames, a message it can hold gets an empty table without
      // a key: no index pages until its rows move in (narrow-writer.ts drainSharedTable keys it then).
      const slots = shared?.open ? sharedSlots(msgid, layout.columns) : undefined;
      await sql.raw(createTableSql(name, layout.columns, slots === undefined)).execute(db);
      if (timescale) await makeNarrowHypertable(db, name);
      // A log's table keeps its columns and name beside it; a MAVLink table's come from the dialect.
      const log = isLogTable(msgid);
      await sql`insert into narrow_message_tables (dataset_id, msgid, table_name, signals, message, columns)
        values (${datasetId}::uuid, ${msgid}::int4, ${name}, '{}', ${log ? (layout.message ?? null) : null}, ${log ? JSON.stringify(layout.columns) : null}::jsonb)
        on conflict (dataset_id, msgid) do nothing`.execute(db);
      const row = await sql<{ row_type: number }>`select reltype::int8::float8 as row_type from pg_class where oid = to_regclass(${quoteIdent(name)})`.execute(db);
      table = { msgid, table: name, rowType: row.rows[0]!.row_type, signals: new Set(), message: layout.message ?? messageNameOf(msgid), columns: layout.columns, ...(shared?.open && { sharedTable: shared.table }) };
      known.set(msgid, table);
    }
    const added = [...signals].filter((s) => !table.signals.has(s));
    if (added.length === 0) continue;
    for (const s of added) table.signals.add(s);
    // A union in SQL: another writer's additions (not in this copy) are kept.
    await sql`update narrow_message_tables set signals = array(select distinct unnest(signals || ${`{${added.map((s) => `"${s}"`).join(',')}}`}::text[]) order by 1)
      where dataset_id = ${datasetId}::uuid and msgid = ${msgid}::int4`.execute(db);
  }
}

/**
 * Make the dataset's shared table and list it (under SHARED_TABLE_KEY, so whatever drops a dataset's
 * listed tables drops it too). Run by the writer for a dataset's first frames, under its row lock.
 */
export async function createSharedTable(db: Executor, datasetId: string): Promise<SharedTable> {
  const table = sharedTableName(datasetId);
  for (const statement of createSharedTableSql(table)) await sql.raw(statement).execute(db);
  await sql`insert into narrow_message_tables (dataset_id, msgid, table_name, signals) values (${datasetId}::uuid, ${SHARED_TABLE_KEY}::int4, ${table}, '{}')
    on conflict (dataset_id, msgid) do nothing`.execute(db);
  return { table, open: true };
}
