import type { DataType } from '@sortie/contracts';
import { sql } from 'kysely';
import { makeWideHypertable } from '../db/timescale.ts';
import type { Executor } from '../db/executor.ts';

/**
 * Physical column type for each declared type label. The label picks the type once, when the column
 * is created; relabelling later converts nothing (the spec's rule). Integers stay exact.
 */
export const PHYSICAL_TYPE: Record<DataType, string> = {
  double: 'double precision',
  float: 'double precision',
  int32: 'bigint',
  uint32: 'bigint',
  enum: 'bigint',
  int64: 'bigint',
  uint64: 'numeric(20,0)',
  bool: 'boolean',
  empty: 'boolean',
  string: 'text',
  bytes: 'bytea',
  bit_field: 'bytea',
};

export function physicalTypeOf(dataType: string): string {
  return PHYSICAL_TYPE[dataType as DataType] ?? 'double precision';
}

/** One physical table per wide dataset; the name derives from the id so it never needs quoting tricks. */
export function wideTableName(datasetId: string): string {
  return `wide_${datasetId.replaceAll('-', '')}`;
}

/** Channels one wide table can hold: PostgreSQL's 1,600 columns per table, less the time column. */
export const MAX_WIDE_CHANNELS = 1599;

export function columnName(index: number): string {
  return `ch_${index}`;
}

export async function createWideTable(db: Executor, table: string, timescale: boolean): Promise<void> {
  await sql`create table if not exists ${sql.table(table)} (time timestamptz not null primary key)`.execute(db);
  // With TimescaleDB: hypertable, compression and its policy (db/timescale.ts, decision 0007).
  if (timescale) await makeWideHypertable(db, table);
}

export async function addWideColumns(db: Executor, table: string, columns: Array<{ name: string; type: string }>): Promise<void> {
  if (columns.length === 0) return;
  const parts = columns.map((c) => sql`add column if not exists ${sql.ref(c.name)} ${sql.raw(c.type)}`);
  await sql`alter table ${sql.table(table)} ${sql.join(parts)}`.execute(db);
}
