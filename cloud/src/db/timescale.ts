import { sql, type Kysely } from 'kysely';
import type { Database } from './schema.ts';
import type { Executor } from './executor.ts';
import { quoteIdent, quoteLiteral } from './sql-text.ts';

/**
 * Every TimescaleDB statement the cloud issues, as SQL text, and the two steps that run them. Nothing
 * here runs unless start-up found a supported TimescaleDB (`DatabaseHandle.timescale`); plain
 * PostgreSQL and PGlite never see these statements. Reasons: docs/decisions/0007-timescale.md.
 *
 * What becomes a hypertable, and what does not:
 * - `wide_<id>`: yes. One table per dataset, keyed by `time` alone, written in time order at up to
 *   tens of kHz: exactly what chunking and compression are for.
 * - narrow message tables (`narrow_m_<dataset>_<msgid>`, one row per MAVLink frame): yes, partitioned
 *   on their key `frame_seq` (never on time: it mixes clocks, and in the key it would weaken the
 *   redelivery dedupe). Their statements are in telemetry/narrow/narrow-timescale.ts.
 * - `telemetry_rollup_packs`: no, and no continuous aggregates either. Ingest keeps it exact in the
 *   transaction of every raw write; a continuous aggregate lags its refresh and misses late or
 *   overwritten data below its watermark, and cannot follow a wide table that gains columns.
 *
 * Statements use named arguments only, so a renamed parameter fails loudly instead of binding to the
 * wrong position; timescale.test.ts parses every statement and checks the names against the API.
 */

/**
 * 2.13 introduced the generalized `create_hypertable(relation, dimension => by_range(...))`; upserts
 * (`on conflict do update`, the wide writer's merge path) into compressed chunks arrived in 2.11.
 * An older TimescaleDB is treated as plain PostgreSQL: the plain path works there unchanged.
 */
export const TIMESCALE_MIN_VERSION = '2.13';

/**
 * Chunks of 1 hour. At the design rate (20 kHz rows of 8 doubles, ~100 bytes a row) an hour is
 * ~72 M rows: ~7 GB of heap and ~1.5 GB of primary-key index, a size one compression job handles
 * in minutes. A day would be ~170 GB per chunk, far past the rule of thumb that the recent chunks
 * and their indexes fit in a quarter of memory, and one compression job per day-sized chunk would
 * hold it for an hour. Slow datasets lose little: a chunk only exists for an hour that has rows, so
 * a two-hour sortie at 50 Hz is two or three small chunks.
 */
export const WIDE_CHUNK_INTERVAL = '1 hour';

/**
 * Compress chunks once their data is 7 days old. Before that, late data is likely (an edge agent
 * replays its spool after an outage; a rig re-sends a run) and the merge path rewrites rows, which
 * on a compressed chunk means decompressing batches first. After it, raw rows are read only at the
 * edges of a Query (the middle comes from telemetry_rollup_packs), so columnar storage costs little on
 * read and saves most of the disk: doubles sampled at a fixed rate compress well.
 */
export const WIDE_COMPRESS_AFTER = '7 days';

const WIDE_TABLE = /^wide_[0-9a-f]{32}$/;

/** Wide table names derive from dataset ids (datasets/wide-table.ts); anything else is refused. */
export function checkWideTable(table: string): string {
  if (!WIDE_TABLE.test(table)) throw new Error(`not a wide table name: ${JSON.stringify(table)}`);
  return table;
}

/** A regclass argument: the quoted identifier, as a string literal. */
function relation(table: string): string {
  return quoteLiteral(quoteIdent(checkWideTable(table)));
}

/** Run only when the server offers the extension in a supported version (connect.ts). */
export const CREATE_EXTENSION_SQL = 'create extension if not exists timescaledb';

/**
 * The wide table as a hypertable on `time`. No default indexes: the primary key on `time` already
 * serves every range read and the writer's overlap probe, and a second time index would only slow
 * ingest. `migrate_data` moves rows of a table created before TimescaleDB was present into chunks
 * (a no-op on a new, empty table); `if_not_exists` makes a repeated start-up harmless.
 */
export function wideHypertableSql(table: string): string {
  return (
    `select create_hypertable(relation => ${relation(table)}, ` +
    `dimension => by_range(column_name => 'time', partition_interval => interval '${WIDE_CHUNK_INTERVAL}'), ` +
    'create_default_indexes => false, if_not_exists => true, migrate_data => true)'
  );
}

/**
 * Columnar compression for old chunks. No segmentby: the table holds a single dataset and its
 * columns are channels, so there is no id to segment by (set explicitly, so TimescaleDB does not
 * guess one). Ordered by time ascending, the order Query and the writer read in; each compressed
 * batch keeps its time range, so range reads skip the others. TimescaleDB requires a unique
 * constraint's columns among the segmentby/orderby columns: the primary key is (time), so it holds.
 */
export function wideCompressionSql(table: string): string {
  return (
    `alter table ${quoteIdent(checkWideTable(table))} set (timescaledb.compress, ` +
    `timescaledb.compress_segmentby = '', timescaledb.compress_orderby = 'time')`
  );
}

/** The background job that compresses chunks older than WIDE_COMPRESS_AFTER; idempotent. */
export function wideCompressionPolicySql(table: string): string {
  return `select add_compression_policy(hypertable => ${relation(table)}, compress_after => interval '${WIDE_COMPRESS_AFTER}', if_not_exists => true)`;
}

/**
 * Wide tables still missing their hypertable or compression: tables written before TimescaleDB was
 * present, or by a version of the cloud that made hypertables without compression.
 */
export function pendingWideTablesSql(table?: string): string {
  const only = table === undefined ? '' : ` and d.table_name = ${quoteLiteral(checkWideTable(table))}`;
  return (
    'select d.table_name, h.hypertable_name is not null as hypertable, coalesce(h.compression_enabled, false) as compressed ' +
    'from datasets d left join timescaledb_information.hypertables h ' +
    'on h.hypertable_schema = current_schema() and h.hypertable_name = d.table_name ' +
    `where d.storage_shape = 'wide' and d.table_name is not null and to_regclass(d.table_name) is not null${only} ` +
    'and (h.hypertable_name is null or not h.compression_enabled) order by d.table_name'
  );
}

/** Two cloud processes starting together convert each table once. */
export const LAYOUT_LOCK_SQL = "select pg_advisory_xact_lock(hashtext('sortie.timescale-layout'))";

export interface WideLayoutState {
  table: string;
  hypertable: boolean;
  compressed: boolean;
}

/**
 * What a wide table still needs. A table whose compression is already enabled keeps its policy as
 * an operator left it (removing a policy is a deliberate act we do not undo at every start-up).
 */
export function wideLayoutStatements(state: WideLayoutState): string[] {
  const statements: string[] = [];
  if (!state.hypertable) statements.push(wideHypertableSql(state.table));
  if (!state.compressed) statements.push(wideCompressionSql(state.table), wideCompressionPolicySql(state.table));
  return statements;
}

/** A new wide dataset's table, in the registering transaction (datasets/wide-table.ts). */
export async function makeWideHypertable(db: Executor, table: string): Promise<void> {
  for (const statement of wideLayoutStatements({ table, hypertable: false, compressed: false })) {
    await sql.raw(statement).execute(db);
  }
}

/**
 * The one-off start-up step: brings every existing wide table to the layout new ones get. Each table
 * in its own transaction (migrate_data copies rows; one large table should not hold back the rest),
 * re-read under the lock so a concurrent start-up's work is not repeated. Returns the tables changed.
 */
export async function applyTimescaleLayout(db: Kysely<Database>): Promise<string[]> {
  const pending = await sql.raw<{ table_name: string }>(pendingWideTablesSql()).execute(db);
  const changed: string[] = [];
  for (const { table_name } of pending.rows) {
    const did = await db.transaction().execute(async (tx) => {
      await sql.raw(LAYOUT_LOCK_SQL).execute(tx);
      const current = await sql.raw<{ table_name: string; hypertable: boolean; compressed: boolean }>(pendingWideTablesSql(table_name)).execute(tx);
      const row = current.rows[0];
      if (!row) return false;
      for (const statement of wideLayoutStatements({ table: row.table_name, hypertable: row.hypertable, compressed: row.compressed })) {
        await sql.raw(statement).execute(tx);
      }
      return true;
    });
    if (did) changed.push(table_name);
  }
  return changed;
}

/** `2.17.2` → true; anything unparsable counts as unsupported. */
export function timescaleVersionSupported(version: string): boolean {
  const [minMajor, minMinor] = TIMESCALE_MIN_VERSION.split('.').map(Number) as [number, number];
  const match = /^(\d+)\.(\d+)/.exec(version);
  if (!match) return false;
  const major = Number(match[1]);
  const minor = Number(match[2]);
  return major > minMajor || (major === minMajor && minor >= minMinor);
}
