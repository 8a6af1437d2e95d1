import { sql } from 'kysely';
import type { Executor } from '../../db/executor.ts';

/**
 * What narrow storage costs in PostgreSQL bytes, measured as bench:mavlink reports it: the total
 * relation size (every fork of the heap, its TOAST table and TOAST index, every index) of each message
 * table of the datasets, plus the whole of the three bookkeeping tables (narrow_boot_sessions,
 * narrow_message_tables, narrow_datasets; in a database holding only the measured datasets that is
 * their share, and an upper bound on it otherwise), divided by the frames stored (one row each).
 * bench:mavlink, bench:short-flight and storage-size.test.ts all measure with this.
 */
export interface NarrowStorage {
  /** Frames stored: rows over the datasets' message tables. */
  frames: number;
  /** Message tables (relations, or a view's slices) the frames are in. */
  tables: number;
  /** Bytes counted: message tables plus the bookkeeping tables. */
  bytes: number;
  /** The same bytes by where they sit. */
  parts: StorageParts;
}

export interface StorageParts {
  /** Message tables' heap main fork, split into tuples (headers + data + line pointers), page headers and free space. */
  heapTuples: number;
  heapPageHeaders: number;
  heapFree: number;
  /** Free space map and visibility map forks of the heaps. */
  heapMaps: number;
  /** Every index of the message tables (the frame_seq key, or what replaces it). */
  indexes: number;
  /** TOAST tables (every fork) and their indexes. */
  toastHeap: number;
  toastIndex: number;
  /** narrow_boot_sessions, narrow_message_tables, narrow_datasets: total relation size each. */
  bookkeeping: number;
}

/** Measure `datasetIds`' narrow storage; `rows` counts frames by scanning each table (exact, not an estimate). */
export async function narrowStorage(db: Executor, datasetIds: readonly string[]): Promise<NarrowStorage> {
  const tables = await sql<{ table_name: string }>`
    select table_name from narrow_message_tables where dataset_id = any(${`{${datasetIds.join(',')}}`}::uuid[]) order by table_name`.execute(db);
  const parts: StorageParts = { heapTuples: 0, heapPageHeaders: 0, heapFree: 0, heapMaps: 0, indexes: 0, toastHeap: 0, toastIndex: 0, bookkeeping: 0 };
  let frames = 0;
  let bytes = 0;
  for (const { table_name } of tables.rows) {
    const t = await relationParts(db, table_name);
    frames += t.rows;
    bytes += t.total;
    parts.heapTuples += t.tuples;
    parts.heapPageHeaders += t.pageHeaders;
    parts.heapFree += t.main - t.tuples - t.pageHeaders;
    parts.heapMaps += t.maps;
    parts.indexes += t.indexes;
    parts.toastHeap += t.toastHeap;
    parts.toastIndex += t.toastIndex;
  }
  const extra = await sql<{ b: number }>`
    select (pg_total_relation_size('narrow_boot_sessions') + pg_total_relation_size('narrow_message_tables') + pg_total_relation_size('narrow_datasets'))::float8 as b`.execute(db);
  parts.bookkeeping = extra.rows[0]!.b;
  bytes += parts.bookkeeping;
  return { frames, tables: tables.rows.length, bytes, parts };
}

interface RelationParts {
  rows: number;
  /** pg_total_relation_size: what the figure counts. */
  total: number;
  main: number;
  /** MAXALIGNed tuples plus a 4-byte line pointer each. */
  tuples: number;
  pageHeaders: number;
  maps: number;
  indexes: number;
  toastHeap: number;
  toastIndex: number;
}

// A heap page's header is 24 bytes; each tuple takes a 4-byte line pointer and its length rounded up to 8.
// pg_column_size of the whole row is the tuple's length (its 23-byte header, null bitmap, data).
async function relationParts(db: Executor, table: string): Promise<RelationParts> {
  const t = sql.table(table);
  const r = await sql<RelationParts>`
    with c as (select oid, reltoastrelid from pg_class where oid = to_regclass(${`"${table}"`})),
    rows as (select count(*)::float8 as n, coalesce(sum(((pg_column_size(x.*) + 7) / 8) * 8 + 4), 0)::float8 as tuples from ${t} x)
    select rows.n as rows, rows.tuples,
      pg_total_relation_size(c.oid)::float8 as total,
      pg_relation_size(c.oid, 'main')::float8 as main,
      (pg_relation_size(c.oid, 'main') / 8192 * 24)::float8 as "pageHeaders",
      (pg_relation_size(c.oid, 'fsm') + pg_relation_size(c.oid, 'vm'))::float8 as maps,
      pg_indexes_size(c.oid)::float8 as indexes,
      (case when c.reltoastrelid = 0 then 0 else pg_table_size(c.reltoastrelid) end)::float8 as "toastHeap",
      (case when c.reltoastrelid = 0 then 0 else pg_indexes_size(c.reltoastrelid) end)::float8 as "toastIndex"
    from c, rows`.execute(db);
  return r.rows[0]!;
}

/** The breakdown as lines of bytes per frame, for the benches. */
export function describeStorage(s: NarrowStorage): string[] {
  const per = (b: number) => `${(b / s.frames).toFixed(1).padStart(6)} B/frame  ${(b / 1024).toFixed(0).padStart(6)} KiB`;
  const p = s.parts;
  return [
    `  heap tuples          ${per(p.heapTuples)}  (row headers, clock and field columns, line pointers)`,
    `  heap page headers    ${per(p.heapPageHeaders)}`,
    `  heap free space      ${per(p.heapFree)}  (unfilled pages)`,
    `  heap FSM + VM forks  ${per(p.heapMaps)}`,
    `  indexes              ${per(p.indexes)}`,
    `  TOAST heaps          ${per(p.toastHeap)}`,
    `  TOAST indexes        ${per(p.toastIndex)}`,
    `  bookkeeping tables   ${per(p.bookkeeping)}  (narrow_boot_sessions, narrow_message_tables, narrow_datasets)`,
    `  total                ${per(s.bytes)}  over ${s.tables} message tables, ${s.frames} frames`,
  ];
}
