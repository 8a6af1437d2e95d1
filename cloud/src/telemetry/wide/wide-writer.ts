import { sql, type RawBuilder } from 'kysely';
import type pg from 'pg';
import { POOL_CONNECTION_LIFETIME_S, type Db } from '../../db/connect.ts';
import { runDirect } from '../../db/direct-query.ts';
import { PreparedShapes } from '../../db/prepared-shapes.ts';
import type { Executor } from '../../db/executor.ts';
import { FINEST_WIDTH_US, bucketStart } from './rollup-levels.ts';
import { applyRollupDeltas, knownPacksSql, packDeltas, recomputeRollups, rollupDeltas, storedPacksSql, type Pack, type PackSet, type RollupRow, type StoredPackRow } from './rollups.ts';
import type { KnownPack, PackCache } from './pack-cache.ts';
import { arrayLiteral, type ArrayEncoder } from '../sql/sql-arrays.ts';
import { columnValueSql, usToTimestamp } from '../sql/sql-time.ts';
import { timestamptzArray } from '../sql/sql-timestamps.ts';
import type { WideBatch, WideBatchColumn } from './wide-batch.ts';

export interface WideTarget {
  datasetId: string;
  /** The dataset's physical table, `wide_<id>`. */
  table: string;
  /** How numeric arrays travel to this database (binary with node-postgres, text with PGlite). */
  arrays: ArrayEncoder;
  /**
   * The rollup packs this writer stored last (a stream's sink keeps one): with it, a batch appended in
   * time order merges into them without reading them, in one statement. Without it, or when it does not
   * know a pack, the packs are read first.
   */
  packs?: PackCache;
  /** The pg pool with node-postgres: the one-statement append of a stream runs prepared on it (db/prepared-shapes.ts). */
  pool?: pg.Pool;
}

export interface WideWriteResult {
  /** Cells that were empty before and now hold a value. */
  written: number;
  /** Points that replaced a value: an earlier point of the batch, or a stored value (last write wins). */
  duplicates: number;
  /** Distinct timestamps (rows) the batch touched. */
  rows: number;
  /** Per column of the batch, the rows whose cell was empty before and now holds the batch's value (what limits evaluate). */
  fresh: ReadonlyArray<Uint8Array>;
}

/**
 * Write one batch to a wide dataset with as few round trips as the common case allows:
 *
 * - Append (nothing stored yet in the batch's time range — a stream writing in time order): a CTE
 *   probes the range and, when it is empty, inserts the raw rows (`unnest` of binary arrays, see
 *   docs/decisions/0004) in the same statement; when it is not, the statement changes nothing and says
 *   so. The rollup packs the batch touches are written by the same statement when the target's
 *   `PackCache` knows them (the packs this writer stored last, checked against what is stored under a
 *   row lock); otherwise the statement reads and locks them, they are merged here and written back by one
 *   more statement of the same transaction.
 * - Overlap (some rows exist, or a concurrent writer inserted the same instant first): a transaction
 *   that locks the table against other writers (SHARE ROW EXCLUSIVE; readers are not blocked), reads
 *   the stored cells of the batch's timestamps, upserts the rows (a cell the batch does not carry keeps
 *   its value), folds only the previously empty cells into the rollups and recomputes the buckets
 *   whose stored value changed.
 *
 * Either way the rollups equal the aggregate of the raw rows at every commit.
 */
export async function writeWideBatch(db: Db, target: WideTarget, batch: WideBatch): Promise<WideWriteResult> {
  if (batch.times.length === 0 || batch.columns.length === 0) return { written: 0, duplicates: batch.mergedInBatch, rows: 0, fresh: [] };
  const appended = { written: batch.cells, duplicates: batch.mergedInBatch, rows: batch.times.length, fresh: batch.columns.map((c) => c.present) };
  const deltas = deltasOf(batch, appended.fresh);
  try {
    const known = target.packs?.plan(deltas.values());
    const outcome = known ? await appendWithKnownPacks(db, target, batch, known) : 'unknown';
    if (outcome === 'written') {
      target.packs!.remember(known!);
      return appended;
    }
    if (outcome !== 'overlap') {
      const written = await appendIfNew(db, target, batch, deltas);
      if (written) {
        target.packs?.remember(written);
        return appended;
      }
    }
  } catch (error) {
    // Another writer inserted one of these instants or packs between our probe and our insert (or the
    // two deadlocked): nothing of this statement was applied, so take the locked path.
    if (!isRetryableConflict(error)) throw error;
  }
  // The merge changes packs this writer has not merged itself: read them next time.
  target.packs?.forget();
  return writeOverlapping(db, target, batch);
}

const UNIQUE_VIOLATION = '23505';
const DEADLOCK_DETECTED = '40P01';

function isRetryableConflict(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === UNIQUE_VIOLATION || code === DEADLOCK_DETECTED;
}

/** Shapes named at once: ~1 per streaming dataset (its table and columns). */
const PREPARED_SHAPES_MAX = 32;
const PREPARED = new PreparedShapes({ prefix: 'sortie_wide_', max: PREPARED_SHAPES_MAX, lifetimeMs: POOL_CONNECTION_LIFETIME_S * 1000 });

/** The CTE that finds whether the batch's time range already holds a row. */
function existingSql(target: WideTarget, batch: WideBatch) {
  const first = batch.times[0]!;
  const last = batch.times[batch.times.length - 1]!;
  return sql`existing as materialized (
    select 1 from ${sql.table(target.table)} where time >= ${usToTimestamp(first)} and time <= ${usToTimestamp(last)} limit 1
  )`;
}

/**
 * The append as one autocommitted statement, the packs merged from what the writer remembers
 * (`PackCache.plan`). It writes only when the range is empty and every remembered pack is still stored
 * as remembered (locked as it is checked, so it stays so until the statement ends); otherwise it writes
 * nothing and says why.
 */
async function appendWithKnownPacks(db: Db, target: WideTarget, batch: WideBatch, known: readonly KnownPack[]): Promise<'written' | 'overlap' | 'stale'> {
  const packs = knownPacksSql(target, known);
  const go = sql`(select ok from go)`;
  const compiled = sql<{ ok: boolean; overlap: boolean }>`
    with ${existingSql(target, batch)},
    ${packs.keys},
    go as materialized (select not exists (select 1 from existing) and (select count(*) from checked) = ${packs.storedCount}::int8 as ok),
    raw as (${insertRowsSql(target, batch, false, go)}),
    ${packs.writes(go)}
    select ${go} as ok, exists (select 1 from existing) as overlap`.compile(db);
  // A stream sends this text batch after batch (same table, same columns): parsed and planned once per
  // connection; and its arrays are written straight into the message (db/direct-query.ts).
  const rows = target.pool ? await runDirect(target.pool, PREPARED.use(compiled.sql, compiled.sql) ?? '', compiled) : (await db.executeQuery(compiled)).rows;
  const { ok, overlap } = rows[0]!;
  return ok ? 'written' : overlap ? 'overlap' : 'stale';
}

/**
 * The append that reads the packs; undefined when the batch's range already holds rows (nothing
 * written), else the packs as written. The raw statement also reads and locks the rollup packs the
 * batch touches, so the merge costs one more statement (the write).
 */
async function appendIfNew(db: Db, target: WideTarget, batch: WideBatch, deltas: PackSet): Promise<Pack[] | undefined> {
  const fresh = sql`not exists (select 1 from existing)`;
  return db.transaction().execute(async (tx) => {
    const result = await sql<StoredPackRow & { overlap: boolean }>`
      with ${existingSql(target, batch)},
      raw as (${insertRowsSql(target, batch, false, fresh)}),
      stored as (${storedPacksSql(target, deltas.values())})
      select e.overlap, s.* from (select exists (select 1 from existing) as overlap) as e left join stored as s on true`.execute(tx);
    if (result.rows[0]!.overlap) return undefined;
    return applyRollupDeltas(tx, target, deltas, result.rows.filter((r) => r.data !== null));
  });
}

async function writeOverlapping(db: Db, target: WideTarget, batch: WideBatch): Promise<WideWriteResult> {
  return db.transaction().execute(async (tx) => {
    // Blocks other writers of this table (their inserts take ROW EXCLUSIVE) until commit, so the cells
    // read below stay what the upsert replaces; queries keep reading.
    await sql`lock table ${sql.table(target.table)} in share row exclusive mode`.execute(tx);
    const before = await storedCells(tx, target, batch);
    let overwritten = 0;
    const changed = new Map<WideBatchColumn, Set<number>>();
    // Rollups take only the cells that were empty before; a changed stored value means a recompute.
    const newCells = batch.columns.map((column, c) => {
      const mask = column.present.slice();
      for (let i = 0; i < batch.times.length; i++) {
        if (!mask[i]) continue;
        const old = before.get(batch.times[i]!)?.[`c${c}`];
        if (old === null || old === undefined || old === false) continue;
        overwritten++;
        mask[i] = 0;
        // Only a different value can move a minimum or maximum; the same value changes nothing.
        if (column.values && !sameDouble(old as number, column.values[i]!)) {
          let buckets = changed.get(column);
          if (!buckets) changed.set(column, (buckets = new Set()));
          buckets.add(bucketStart(batch.times[i]!, FINEST_WIDTH_US));
        }
      }
      return mask;
    });
    await insertRowsSql(target, batch, true).execute(tx);
    await applyRollupDeltas(tx, target, deltasOf(batch, newCells));
    await recomputeRollups(tx, target, [...changed].map(([column, buckets]) => ({ channel: column.info, finestBuckets: [...buckets] })));
    return { written: batch.cells - overwritten, duplicates: batch.mergedInBatch + overwritten, rows: batch.times.length, fresh: newCells };
  });
}

/** The rollup packs a batch changes, with the aggregates of each column's samples where `masks` is set. */
function deltasOf(batch: WideBatch, masks: ReadonlyArray<Uint8Array>): PackSet {
  const rows: RollupRow[] = [];
  batch.columns.forEach((column, c) => {
    if (column.values) rows.push(...rollupDeltas(column.info.index, batch.times, column.values, masks[c]!));
  });
  return packDeltas(rows);
}

/** PostgreSQL equality of doubles: NaN equals NaN, -0 equals 0. */
function sameDouble(a: number, b: number): boolean {
  return a === b || (Number.isNaN(a) && Number.isNaN(b));
}

/** The raw rows of a batch as one insert of `unnest`ed arrays; `upsert` merges into stored rows. */
function insertRowsSql(target: WideTarget, batch: WideBatch, upsert: boolean, guard?: RawBuilder<unknown>) {
  const names = batch.columns.map((c) => sql.ref(c.info.name));
  const aliases = batch.columns.map((_, c) => sql.ref(`u.c${c}`));
  const times = timestamptzArray(batch.times, target.arrays.binary, 'u.t');
  const sources = [
    times.param,
    ...batch.columns.map((c) =>
      c.cells
        ? sql`${arrayLiteral(c.cells, batch.times.length)}::${sql.raw(c.info.physicalType)}[]`
        : sql`${target.arrays.float8(c.values!, c.present, batch.times.length)}::double precision[]`,
    ),
  ];
  const unnestAs = sql.raw(`u(t, ${batch.columns.map((_, c) => `c${c}`).join(', ')})`);
  const onConflict = upsert
    ? sql`on conflict (time) do update set ${sql.join(batch.columns.map((c) => sql`${sql.ref(c.info.name)} = coalesce(excluded.${sql.ref(c.info.name)}, t.${sql.ref(c.info.name)})`))}`
    : sql``;
  return sql`
    insert into ${sql.table(target.table)} as t (time, ${sql.join(names)})
    select ${times.value}, ${sql.join(aliases)}
    from unnest(${sql.join(sources)}) as ${unnestAs}
    ${guard ? sql`where ${guard}` : sql``}
    ${onConflict}`;
}

/**
 * The stored cells at the batch's timestamps, by µs: for numeric columns the value as a double (null
 * when empty), for text and bytes whether a value is present.
 */
async function storedCells(db: Executor, target: WideTarget, batch: WideBatch): Promise<Map<number, Record<string, unknown>>> {
  const selections = batch.columns.map((c, i) =>
    c.values ? sql`${columnValueSql(`w.${c.info.name}`, c.info.physicalType)} as ${sql.ref(`c${i}`)}` : sql`(${sql.ref(`w.${c.info.name}`)} is not null) as ${sql.ref(`c${i}`)}`,
  );
  const result = await sql<Record<string, unknown> & { t: number }>`
    select u.t::float8 as t, ${sql.join(selections)}
    from unnest(${target.arrays.int8(batch.times)}::int8[]) as u(t)
    join ${sql.table(target.table)} as w on w.time = ${usToTimestamp(sql`u.t`)}
  `.execute(db);
  return new Map(result.rows.map((r) => [r.t, r]));
}
