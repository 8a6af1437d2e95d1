import { sql } from 'kysely';
import type { Executor } from '../db/executor.ts';
import type { AppContext } from '../platform/context.ts';
import type { DatasetRow } from '../db/schema.ts';
import { deleteDataset } from '../datasets/queries.ts';
import { messageLayoutOf } from './narrow/decode.ts';
import { LOG_TABLE_KEY_BASE, type ColumnType, type MessageColumns } from './narrow/message-tables.ts';
import { NarrowBatch } from './narrow/narrow-batch.ts';
import { openNarrowWriter, type NarrowRowWriter } from './narrow/narrow-sink.ts';
import { readParameterValues } from './narrow/parameter-values.ts';

/**
 * What imports/ needs of telemetry to store a file: a log's message types become narrow message tables
 * whose columns the log described (message-tables.ts, LOG_TABLE_KEY_BASE), and its messages rows of
 * them, written by the same writer as a MAVLink stream (NarrowRowWriter); a MAVLink file's frames go
 * through that writer's stream path (decoding, boot sessions, dedupe by frame_seq).
 */
export { LOG_TABLE_KEY_BASE, NarrowBatch, openNarrowWriter, readParameterValues, type NarrowRowWriter };

export interface LogColumn {
  signal: string;
  type: Exclude<ColumnType, 'bytea'>;
  unit?: string;
}

/** The table layout of a log's message type `id` (dense from 0): columns `f0`, `f1`, … in field order. */
export function logTableLayout(id: number, message: string, columns: readonly LogColumn[]): MessageColumns {
  return {
    msgid: LOG_TABLE_KEY_BASE + id,
    message,
    columns: columns.map((c, k) => ({ signal: c.signal, column: `f${k}`, type: c.type, ...(c.unit ? { unit: c.unit } : {}) })),
  };
}

/** A MAVLink message id's name in the pinned dialect, or `UNKNOWN_<id>`. */
export function mavlinkMessageName(msgid: number): string {
  return messageLayoutOf(msgid)?.name ?? `UNKNOWN_${msgid}`;
}

/**
 * Remove a narrow dataset and everything stored for it: its message tables (DDL, so not cascaded) and
 * its row, which cascades to its sessions, channels, events and import. An import that fails leaves
 * nothing behind this way.
 */
export async function dropNarrowDataset(db: Executor, datasetId: string): Promise<void> {
  await db.transaction().execute(async (tx) => {
    const tables = await sql<{ table_name: string }>`select table_name from narrow_message_tables where dataset_id = ${datasetId}::uuid`.execute(tx);
    for (const t of tables.rows) await sql`drop table if exists ${sql.table(t.table_name)}`.execute(tx);
    await sql`delete from narrow_message_tables where dataset_id = ${datasetId}::uuid`.execute(tx);
    await sql`delete from narrow_boot_sessions where dataset_id = ${datasetId}::uuid`.execute(tx);
    await sql`delete from narrow_datasets where dataset_id = ${datasetId}::uuid`.execute(tx);
    await deleteDataset(tx, datasetId);
  });
}
