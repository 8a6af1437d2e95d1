import { sql } from 'kysely';
import type { Executor } from '../../db/executor.ts';
import { quoteIdent, quoteLiteral } from '../../db/sql-text.ts';

/**
 * With TimescaleDB, each narrow message table becomes a hypertable with compression
 * (docs/decisions/0007-timescale.md, "narrow message tables"). The partitioning column must be in
 * every unique index, and the key is frame_seq alone (what makes a redelivered frame collapse), so the
 * tables are partitioned on frame_seq: integers, so compression's age is measured in frame_seq too, by
 * a per-table "now" (the highest frame_seq stored).
 *  - Chunks of NARROW_CHUNK_FRAMES frame_seq: the dataset's frames of all message ids share the
 *    sequence, so at ~115 frames/s a chunk spans ~2.4 hours of flight whatever the message's rate.
 *  - No segmentby: a table holds one dataset and one message id; there is no id left to segment by.
 *    Ordered by frame_seq, the key and the order rows arrive and Query's alignment reads them in.
 *  - Compressed once NARROW_COMPRESS_AFTER_FRAMES behind the table's newest frame (~5 hours of a
 *    115 frames/s flight): an agent's spool replay after an outage lands before that, and redelivery
 *    into a compressed chunk would decompress it.
 * narrow-timescale.test.ts checks these statements with PostgreSQL's parser and the API's parameter
 * names, as db/timescale.test.ts does; telemetry/timescale-compression.test.ts runs them on a real
 * TimescaleDB, compressed chunks included.
 */

export const NARROW_CHUNK_FRAMES = 1_000_000;
export const NARROW_COMPRESS_AFTER_FRAMES = 2_000_000;

const TABLE = /^narrow_m_[0-9a-f]{32}_[0-9]{1,7}$/;

export function checkMessageTable(table: string): string {
  if (!TABLE.test(table)) throw new Error(`not a narrow message table: ${JSON.stringify(table)}`);
  return table;
}

/** The statements that turn one message table into a compressed hypertable; each idempotent. */
export function narrowHypertableStatements(table: string): string[] {
  const t = quoteIdent(checkMessageTable(table));
  const now = quoteIdent(`${table}_now`);
  return [
    `select create_hypertable(relation => ${quoteLiteral(t)}, dimension => by_range(column_name => 'frame_seq', partition_interval => ${NARROW_CHUNK_FRAMES}::bigint), ` +
      'create_default_indexes => false, if_not_exists => true, migrate_data => true)',
    `create or replace function ${now}() returns bigint language sql stable as ${quoteLiteral(`select coalesce(max(frame_seq), 0) from ${t}`)}`,
    `select set_integer_now_func(hypertable => ${quoteLiteral(t)}, integer_now_func => ${quoteLiteral(now)}, replace_if_exists => true)`,
    `alter table ${t} set (timescaledb.compress, timescaledb.compress_segmentby = '', timescaledb.compress_orderby = 'frame_seq')`,
    `select add_compression_policy(hypertable => ${quoteLiteral(t)}, compress_after => ${NARROW_COMPRESS_AFTER_FRAMES}::bigint, if_not_exists => true)`,
  ];
}

export async function makeNarrowHypertable(db: Executor, table: string): Promise<void> {
  for (const statement of narrowHypertableStatements(table)) await sql.raw(statement).execute(db);
}

/**
 * Message tables not yet hypertables (made before TimescaleDB was present); run at start-up with TimescaleDB.
 * A short flight's shared table (listed under a negative key, message-tables.ts) stays a plain table: it
 * holds a few thousand frames at most and is emptied when the flight grows long.
 */
export async function applyNarrowTimescaleLayout(db: Executor): Promise<string[]> {
  const pending = await sql<{ table_name: string }>`
    select t.table_name from narrow_message_tables t left join timescaledb_information.hypertables h
      on h.hypertable_schema = current_schema() and h.hypertable_name = t.table_name
    where h.hypertable_name is null and t.msgid >= 0 order by t.table_name`.execute(db);
  for (const { table_name } of pending.rows) await makeNarrowHypertable(db, table_name);
  return pending.rows.map((r) => r.table_name);
}
