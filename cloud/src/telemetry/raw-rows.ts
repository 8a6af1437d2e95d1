import { parseSignalName } from '@sortie/contracts/mavlink';
import { sql, type RawBuilder } from 'kysely';
import type { DatasetRow } from '../db/schema.ts';
import type { Executor } from '../db/executor.ts';
import { listChannelRows } from '../datasets/queries.ts';
import { invalidRequest, notFound } from '../http/api-error.ts';
import { materialiseChannels, readSeries, type SeriesResult } from './read.ts';
import { MAX_CHANNELS_PER_QUERY, MAX_POINTS_PER_CHANNEL } from './series/series.ts';
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
export async function openRawRows(db: Executor, organizationId: string, dataset: DatasetRow, request: RawRowsRequest, now: Date): Promise<RawRows> {
  if (request.from !== undefined && request.to !== undefined && request.from > request.to) {
    throw invalidRequest('`start` is after `end`', [{ field: 'start', message: 'is after end' }]);
  }
  return dataset.storage_shape === 'narrow' ? openNarrow(db, organizationId, dataset, request, now) : openWide(db, dataset, request);
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

/**
 * A MAVLink dataset's numeric signals, read through Query's read entry (readSeries) one window of
 * aligned time at a time: with a budget above the window's samples, Query answers every raw sample in
 * order, so the export is the very samples Query has, whatever the narrow storage's physical shape.
 * A window that Query had to downsample is halved and read again; a sparse one doubles the next.
 */
async function openNarrow(db: Executor, organizationId: string, dataset: DatasetRow, request: RawRowsRequest, now: Date): Promise<RawRows> {
  await materialiseChannels(db, dataset, now);
  const stored = new Map((await listChannelRows(db, dataset.id)).map((r) => [r.col_name, r]));
  const readable = (dataType: string) => dataType !== 'string' && dataType !== 'bytes';
  const names =
    request.channels.length === 0
      ? [...stored.values()].filter((r) => readable(r.data_type)).map((r) => r.col_name)
      : request.channels.map((name, i) => {
          const row = stored.get(name);
          if (!row) throw unknownChannel(i, name, parseSignalName(name) ? 'was never stored by this dataset' : 'is not a MAVLink signal name (mavlink.<MESSAGE>.<field>)');
          if (!readable(row.data_type)) throw unknownChannel(i, name, `holds ${row.data_type === 'string' ? 'text' : 'raw bytes'}; exports read numeric signals, as Query does`);
          return name;
        });
  const columns: RawColumn[] = names.map((name) => {
    const message = parseSignalName(name)!.message;
    return { name, type: 'number', message, field: name.slice(`mavlink.${message}.`.length) };
  });
  return { columns, pages: () => narrowPages(db, organizationId, dataset.id, columns, request) };
}

async function* narrowPages(db: Executor, organizationId: string, datasetId: string, columns: readonly RawColumn[], request: RawRowsRequest): AsyncGenerator<RawRecord[]> {
  if (columns.length === 0) return;
  const groups: number[][] = [];
  for (let i = 0; i < columns.length; i += MAX_CHANNELS_PER_QUERY) groups.push(columns.slice(i, i + MAX_CHANNELS_PER_QUERY).map((_, k) => i + k));
  const read = async (from: number | undefined, to: number | undefined, maxPointsPerChannel: number): Promise<SeriesResult[]> => {
    const answers = await Promise.all(
      groups.map((group) => readSeries(db, organizationId, { datasetId, experimentId: '', channelIds: group.map((i) => columns[i]!.name), from, to, maxPointsPerChannel })),
    );
    return answers.flat();
  };
  // The extent and size first: a downsampled answer keeps each series' first and last sample and counts every one.
  const probe = await read(request.from, request.to, 4);
  const total = probe.reduce((n, s) => n + s.rawPoints, 0);
  const times = probe.flatMap((s) => s.samples.map((p) => p.t));
  if (total === 0 || times.length === 0) return;
  const end = Math.max(...times) + 1;
  let from = Math.min(...times);
  const pageValues = request.pageValues ?? PAGE_VALUES;
  let width = Math.max(1, Math.ceil(((end - from) * pageValues) / total));
  while (from < end) {
    const to = Math.min(end, from + width);
    // A window holds about a page; a signal with more than a page in it is downsampled, and the window halves.
    const series = await read(from, to, Math.min(MAX_POINTS_PER_CHANNEL, pageValues));
    if (series.some((s) => s.samples.length < s.rawPoints)) {
      if (width === 1) throw new Error(`more than ${Math.min(MAX_POINTS_PER_CHANNEL, pageValues)} samples of one signal at one instant`);
      width = Math.max(1, Math.floor(width / 2));
      continue;
    }
    const records = windowRecords(columns, series);
    if (records.length > 0) yield records;
    const values = series.reduce((n, s) => n + s.rawPoints, 0);
    if (values < pageValues / 4) width *= 2;
    from = to;
  }
}

/**
 * A window's samples as records: a signal's k-th sample at an instant joins the k-th record of its
 * message at that instant (the fields one frame carried share a record, as in the frame), in (time,
 * message, k) order. Samples of one signal keep Query's order.
 */
function windowRecords(columns: readonly RawColumn[], series: readonly SeriesResult[]): RawRecord[] {
  const byKey = new Map<string, RawRecord & { message: string; k: number }>();
  series.forEach((s, i) => {
    const message = columns[i]!.message!;
    let previous: number | undefined;
    let k = 0;
    for (const sample of s.samples) {
      k = sample.t === previous ? k + 1 : 0;
      previous = sample.t;
      const key = `${sample.t}|${message}|${k}`;
      let record = byKey.get(key);
      if (!record) byKey.set(key, (record = { t: sample.t, message, k, values: new Array(columns.length) }));
      record.values[i] = sample.v;
    }
  });
  return [...byKey.values()]
    .sort((a, b) => a.t - b.t || (a.message < b.message ? -1 : a.message > b.message ? 1 : 0) || a.k - b.k)
    .map(({ t, values }) => ({ t, values }));
}

function nullToUndefined(value: unknown): RawValue | undefined {
  if (value === null || value === undefined) return undefined;
  if (value instanceof Uint8Array) return new Uint8Array(value);
  return value as RawValue;
}

function fail(error: Error): never {
  throw error;
}
