import { parseLogSignalName } from '@sortie/contracts';
import { sql, type RawBuilder } from 'kysely';
import type { Executor } from '../../db/executor.ts';
import { sessionShift, type SessionShift } from './alignment.ts';
import { messageLayoutOf } from './decode.ts';
import { isLogTable, type ColumnType, type MessageTable, type SignalColumn, messageRelationSql } from './message-tables.ts';
import { quoteIdent } from '../../db/sql-text.ts';
import { loadBootSessions } from './session-store.ts';

/**
 * Whole MAVLink frames of a narrow dataset in aligned time order, read straight from its message
 * tables (one row = one frame), for export. Each table is read in keyset pages on (aligned time,
 * frame_seq), and the tables' pages are merged, so the frames of every message type come out in one
 * time order while only one page per table is in memory. Each row is turned into JSON text in SQL
 * (the per-field work stays in PostgreSQL, where it is cheapest), as one of two shapes:
 *
 *  - `frameObjectSql`: the frame as a JSON object, one key per field (a numeric array as a JSON array,
 *    text as a string, an unknown id's payload as base64), for MCAP.
 *  - `frameValuesSql`: the chosen signals' values as a flat JSON array, one item per signal column,
 *    for CSV.
 *
 * Aligned time is computed per row as Query computes it (query.ts, alignment.ts): raw time plus the
 * row's boot-session shift for its time source, so exported times equal Query's to the microsecond,
 * and two frames at one instant keep frame_seq order, as Query's samples do.
 */

/** One message table to read, with what to select of each row. */
export interface FrameSource {
  msgid: number;
  /** The message's table as loadMessageTables gave it (its rows may be in the shared table too). */
  table: MessageTable;
  /** SQL over the row alias `m`: the JSON text each frame is read as. */
  select: string;
  /** SQL over `m`: the rows to read (a chosen column holds a value). */
  where: string;
  /** Rows per keyset page of this table. */
  pageRows: number;
}

export interface FrameRow {
  /** Aligned time, µs since 1970. */
  t: number;
  seq: number;
  msgid: number;
  /** The JSON text `select` made of the row. */
  json: string;
}

/** A field of a message table: a scalar or text column, a numeric array's columns, or `raw`. */
export interface FrameField {
  /** The field's name as in the dialect XML (`roll`, `voltages`), or `raw` for an id outside the dialect. */
  name: string;
  columns: readonly SignalColumn[];
  array: boolean;
  type: ColumnType;
  /** A MAVLink 2 extension field: NULL in a v1 frame's row. */
  extension: boolean;
}

/**
 * The fields of a message table, in wire order, each with the columns that hold it. A log's table:
 * every column is a field of its own, named by its flattened name (`q[0]`), since the log's arrays were
 * flattened when read and every row carries every field.
 */
export function frameFields(table: Pick<MessageTable, 'msgid' | 'columns'>): FrameField[] {
  const msgid = table.msgid;
  const columns = table.columns;
  if (isLogTable(msgid)) return columns.map((c) => ({ name: logFieldName(c.signal), columns: [c], array: false, type: c.type, extension: false }));
  const layout = messageLayoutOf(msgid);
  if (!layout) return columns.map((c) => ({ name: 'raw', columns: [c], array: false, type: c.type, extension: false }));
  const fields: FrameField[] = [];
  let next = 0;
  // messageColumns lists each field's signals in layout order, one column per signal.
  for (const field of layout.fields) {
    const own = columns.slice(next, next + field.signals.length);
    next += field.signals.length;
    fields.push({ name: field.source, columns: own, array: field.signals.length > 1, type: own[0]!.type, extension: field.extension });
  }
  return fields;
}

/** `q[0]` of `ulog.vehicle_attitude.q[0]`: what follows the message part of a log signal name. */
function logFieldName(signal: string): string {
  return parseLogSignalName(signal)?.field ?? signal;
}

const MAX_SAFE = '9007199254740991';
const NON_FINITE = `('NaN'::float8, 'Infinity'::float8, '-Infinity'::float8)`;

/**
 * A column's value as JSON text (NULL when the column is NULL): integers as numbers, a 64-bit integer
 * beyond 2^53 as its exact decimal in a string, floats as their float8 (the double Query answers),
 * text as a JSON string, bytes as base64. JSON has no NaN or infinity: `nonFinite` says whether those
 * become null (MCAP, as JSON.stringify does) or a string naming them (CSV, which prints `NaN`).
 */
export function valueJsonSql(c: SignalColumn, nonFinite: 'null' | 'string'): string {
  const col = `m.${quoteIdent(c.column)}`;
  const quoted = (text: string) => `('"' || ${text} || '"')`;
  switch (c.type) {
    case 'int2':
    case 'int4':
      return `${col}::text`;
    case 'int8':
      return `(case when ${col} > ${MAX_SAFE} or ${col} < -${MAX_SAFE} then ${quoted(`${col}::text`)} else ${col}::text end)`;
    case 'uint64':
      // Stored as int8 two's complement: a negative value is a uint64 above 2^63.
      return `(case when ${col} < 0 then ${quoted(`(${col}::numeric + 18446744073709551616)::text`)} when ${col} > ${MAX_SAFE} then ${quoted(`${col}::text`)} else ${col}::text end)`;
    case 'float4':
    case 'float8': {
      const f = `${col}::float8`;
      return `(case when ${f} in ${NON_FINITE} then ${nonFinite === 'null' ? `'null'` : quoted(`${f}::text`)} else ${f}::text end)`;
    }
    case 'text':
      return `to_json(${col})::text`;
    case 'bytea':
      // PostgreSQL's base64 breaks lines every 76 characters; the JSON string must not.
      return quoted(`translate(encode(${col}, 'base64'), E'\\n', '')`);
  }
}

/** A numeric array field as a JSON array (NULL when the frame did not carry it: a v1 frame's extension). */
function arrayJsonSql(field: FrameField): string {
  const first = `m.${quoteIdent(field.columns[0]!.column)}`;
  const items = field.columns.map((c) => {
    const col = `m.${quoteIdent(c.column)}`;
    if (c.type === 'float4' || c.type === 'float8') return `(case when ${col}::float8 in ${NON_FINITE} then null else ${col}::float8 end)`;
    if (c.type === 'uint64') return `(case when ${col} < 0 then ${col}::numeric + 18446744073709551616 else ${col}::numeric end)`;
    return col;
  });
  // ARRAY[…] has no argument limit (a function has 100; a payload array has up to 251 elements).
  return `(case when ${first} is null then null else array_to_json(array[${items.join(', ')}])::text end)`;
}

/**
 * The frame as a JSON object of the given fields in wire order; a field the frame did not carry (a v1
 * frame's extension fields) is left out. array_to_string drops the NULL items, so absent fields
 * leave no empty entry.
 */
export function frameObjectSql(fields: readonly FrameField[]): string {
  const entries = fields.map((f) => `'${JSON.stringify(f.name).replaceAll("'", "''")}:' || ${f.array ? arrayJsonSql(f) : valueJsonSql(f.columns[0]!, 'null')}`);
  return `('{' || array_to_string(array[${entries.join(', ')}]::text[], ',') || '}')`;
}

/** The columns' values as a flat JSON array, `null` where the frame has no value. */
export function frameValuesSql(columns: readonly SignalColumn[]): string {
  return `('[' || array_to_string(array[${columns.map((c) => `coalesce(${valueJsonSql(c, 'string')}, 'null')`).join(', ')}]::text[], ',') || ']')`;
}

/**
 * Rows of a message id's table that hold a value of at least one of the columns. Every row holds every
 * base (non-extension) field (a v1 frame lacks only extensions; a v2 frame's truncated zeros decode as
 * values), so with a base column among them that is every row, and the scan tests nothing per row.
 */
export function anyValueSql(table: Pick<MessageTable, 'msgid' | 'columns'>, columns: readonly SignalColumn[]): string {
  const chosen = new Set(columns.map((c) => c.column));
  if (frameFields(table).some((f) => !f.extension && f.columns.some((c) => chosen.has(c.column)))) return 'true';
  return columns.map((c) => `m.${quoteIdent(c.column)} is not null`).join(' or ');
}

/**
 * Aligned time of a row `m` (query.ts computes the same value): raw µs plus the shift of the row's boot
 * session for its time source. Sessions are numbered in sequence per dataset (boot-sessions.ts), so
 * the shifts go as two arrays indexed by session number (`[lo:hi]={…}`), which costs a page's scan less
 * than joining a table of sessions; NULL (no such session) shifts by 0, as query.ts's outer join does.
 */
function alignedSql(shifts: readonly SessionShift[]): RawBuilder<unknown> {
  const raw = sql`round(date_part('epoch', m.time) * 1000000)`;
  if (shifts.length === 0) return raw;
  const lo = Math.min(...shifts.map((s) => s.session));
  const hi = Math.max(...shifts.map((s) => s.session));
  const bySession = new Map(shifts.map((s) => [s.session, s]));
  const array = (pick: (s: SessionShift) => number) => {
    const items: string[] = [];
    for (let k = lo; k <= hi; k++) {
      const shift = bySession.get(k);
      items.push(shift ? String(pick(shift)) : 'NULL');
    }
    return `[${lo}:${hi}]={${items.join(',')}}`;
  };
  const boot = sql`coalesce((${array((s) => s.bootShiftUs)}::float8[])[m.boot_session], 0)`;
  const agent = sql`coalesce((${array((s) => s.agentShiftUs)}::float8[])[m.boot_session], 0)`;
  return sql`(${raw} + case m.time_source when 'b' then ${boot} when 'a' then ${agent} else 0 end)`;
}

interface Cursor {
  source: FrameSource;
  rows: { t: number; seq: number; json: string }[];
  at: number;
  /** The last page was full: there may be more. */
  more: boolean;
}

/**
 * The frames of `sources` in (aligned time, frame_seq) order within [from, to), in pages of about
 * `pageFrames` frames. The dataset's alignment (its boot sessions' offsets) is read once, at the start.
 * Each table's next page is read only when its current one is used up, and only when the caller
 * asks for the next page of frames.
 */
export async function* framePages(
  db: Executor,
  datasetId: string,
  sources: readonly FrameSource[],
  range: { from: number | undefined; to: number | undefined },
  pageFrames: number,
): AsyncGenerator<FrameRow[]> {
  if (sources.length === 0) return;
  const shifts = (await loadBootSessions(db, datasetId)).map(sessionShift);
  const aligned = alignedSql(shifts);

  const read = async (cursor: Cursor, after: { t: number; seq: number } | undefined) => {
    const { source } = cursor;
    const bounds = [sql`true`];
    // Keyset on (aligned time, frame_seq): frame_seq is unique in the dataset, so no frame is read twice.
    if (after) bounds.push(sql`(r.t, r.frame_seq) > (${after.t}::float8, ${after.seq}::int8)`);
    else if (range.from !== undefined) bounds.push(sql`r.t >= ${range.from}::float8`);
    if (range.to !== undefined) bounds.push(sql`r.t < ${range.to}::float8`);
    // The page's keys first (aligned time only, the table's one scan), then the JSON of just those rows by the key.
    const result = await sql<{ t: number; seq: number; json: string }>`
      with k as (
        select r.t, r.frame_seq from (
          select ${aligned} as t, m.frame_seq from ${messageRelationSql(source.table)} m
          where ${sql.raw(source.where)}) r
        where ${sql.join(bounds, sql` and `)}
        order by r.t, r.frame_seq limit ${source.pageRows})
      select k.t, k.frame_seq::float8 as seq, ${sql.raw(source.select)} as json
      from k join ${messageRelationSql(source.table)} m on m.frame_seq = k.frame_seq
      order by k.t, k.frame_seq`.execute(db);
    cursor.rows = result.rows;
    cursor.at = 0;
    cursor.more = result.rows.length === source.pageRows;
  };

  // A binary min-heap of the tables by their current frame's (t, seq).
  const heap: Cursor[] = [];
  const before = (a: Cursor, b: Cursor) => {
    const x = a.rows[a.at]!;
    const y = b.rows[b.at]!;
    return x.t < y.t || (x.t === y.t && x.seq < y.seq);
  };
  const siftDown = (i: number) => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && before(heap[l]!, heap[m]!)) m = l;
      if (r < heap.length && before(heap[r]!, heap[m]!)) m = r;
      if (m === i) return;
      [heap[i], heap[m]] = [heap[m]!, heap[i]!];
      i = m;
    }
  };
  for (const source of sources) {
    const cursor: Cursor = { source, rows: [], at: 0, more: true };
    await read(cursor, undefined);
    if (cursor.rows.length > 0) heap.push(cursor);
  }
  for (let i = Math.floor(heap.length / 2); i >= 0; i--) siftDown(i);

  let page: FrameRow[] = [];
  while (heap.length > 0) {
    const cursor = heap[0]!;
    const row = cursor.rows[cursor.at++]!;
    page.push({ t: row.t, seq: row.seq, msgid: cursor.source.msgid, json: row.json });
    if (cursor.at === cursor.rows.length) {
      if (cursor.more) await read(cursor, row);
      if (cursor.at === cursor.rows.length) {
        // This table is done: the last cursor takes its place.
        const last = heap.pop()!;
        if (heap.length > 0 && last !== cursor) heap[0] = last;
      }
    }
    if (heap.length > 0) siftDown(0);
    if (page.length >= pageFrames) {
      yield page;
      page = [];
    }
  }
  if (page.length > 0) yield page;
}
