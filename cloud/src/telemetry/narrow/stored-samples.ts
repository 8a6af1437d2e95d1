import { sql } from 'kysely';
import type { Executor } from '../../db/executor.ts';
import { loadMessageTables, SOURCE_NAME_SQL, type SignalColumn, messageRelationSql } from './message-tables.ts';
import { quoteIdent } from '../../db/sql-text.ts';

/** One stored sample of a narrow dataset, as a client-visible rule sees it (spec: "Narrow storage"). */
export interface StoredSample {
  frameSeq: number;
  signal: string;
  /** Raw time on the clock `timeSource` names, µs since the epoch. */
  timeUs: number;
  timeSource: string;
  bootUs: number | null;
  bootSession: number;
  receivedUs: number;
  /** A number (exact decimal text for a 64-bit integer beyond 2^53), text, or raw bytes as hex (`\x…`). */
  value: number | string | null;
}

/** A column's value as JSON: numbers as numbers, 64-bit integers beyond 2^53 as their exact decimal text. */
function valueSql(c: SignalColumn): string {
  const col = `m.${quoteIdent(c.column)}`;
  switch (c.type) {
    case 'bytea':
      return `to_jsonb('\\x' || encode(${col}, 'hex'))`;
    case 'text':
      return `to_jsonb(${col})`;
    case 'int8':
    case 'uint64': {
      const exact = c.type === 'uint64' ? `(case when ${col} < 0 then ${col}::numeric + 18446744073709551616 else ${col}::numeric end)` : `${col}::numeric`;
      return `(case when abs(${exact}) > 9007199254740991 then to_jsonb(${exact}::text) else to_jsonb(${exact}) end)`;
    }
    default:
      return `to_jsonb(${col}::float8)`;
  }
}

/** jsonb_build_array takes at most 100 arguments; a message can have 250 columns (a uint8[251] payload). */
function jsonArray(items: readonly string[]): string {
  const parts: string[] = [];
  for (let i = 0; i < items.length; i += 90) parts.push(`jsonb_build_array(${items.slice(i, i + 90).join(', ')})`);
  return parts.join(' || ');
}

/**
 * Every sample of a narrow dataset in (frame_seq, signal) order, one per non-NULL column of each
 * message row: what the property test compares upload against upload, and the migration test the
 * former one-row-per-field shape against this one.
 */
export async function readStoredSamples(db: Executor, datasetId: string): Promise<StoredSample[]> {
  const tables = await loadMessageTables(db, datasetId);
  const out: StoredSample[] = [];
  for (const t of tables.values()) {
    const columns = t.columns;
    const result = await sql<Omit<StoredSample, 'signal' | 'value'> & { v: Array<number | string | null> }>`
      select m.frame_seq::float8 as "frameSeq", round(date_part('epoch', m.time) * 1000000)::float8 as "timeUs",
             ${sql.raw(SOURCE_NAME_SQL.replace('time_source', 'm.time_source'))} as "timeSource", m.boot_us::float8 as "bootUs",
             m.boot_session as "bootSession", round(date_part('epoch', m.received_at) * 1000000)::float8 as "receivedUs",
             ${sql.raw(jsonArray(columns.map(valueSql)))} as v
      from ${messageRelationSql(t)} m`.execute(db);
    for (const row of result.rows) {
      const { v, ...clock } = row;
      columns.forEach((c, i) => {
        if (v[i] !== null) out.push({ ...clock, signal: c.signal, value: v[i]! });
      });
    }
  }
  return out.sort((a, b) => a.frameSeq - b.frameSeq || (a.signal < b.signal ? -1 : a.signal > b.signal ? 1 : 0));
}
