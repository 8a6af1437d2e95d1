import { sql, type Kysely } from 'kysely';
import pg from 'pg';
import { Migrator } from 'kysely/migration';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../../auth/organizations.ts';
import { migrateToLatest, openDatabase, type DatabaseHandle } from '../../db/connect.ts';
import { migrationProvider } from '../../db/migrations/index.ts';
import type { Database } from '../../db/schema.ts';
import { createTestDatabase, type TestDatabase } from '../../testing/test-database.ts';
import { wideChannelRows } from '../../testing/wide-channels.ts';
import { ROLLUP_WIDTHS_MS } from './rollup-levels.ts';
import { binaryArrays, textArrays, type ArrayEncoder } from '../sql/sql-arrays.ts';
import { WideBatchBuilder, writableColumns } from './wide-batch.ts';
import { writeWideBatch, type WideTarget } from './wide-writer.ts';
import { storedRollups } from './rollups.ts';
import { PackCache } from './pack-cache.ts';

// The writer against the real Postgres: after any mix of appends, overwrites and out-of-order
// batches, the rollups must equal an aggregate of the raw rows computed from scratch.

const TYPES = ['double precision', 'bigint', 'boolean', 'text'];
const COLUMNS = writableColumns(wideChannelRows(TYPES));

let database: TestDatabase;
let handle: DatabaseHandle;
let organizationId: string;
let experimentId: string;

async function newTarget(arrays: ArrayEncoder, remember = false): Promise<WideTarget> {
  const id = crypto.randomUUID();
  const table = `wide_${id.replaceAll('-', '')}`;
  await handle.db
    .insertInto('datasets')
    .values({ id, organization_id: organizationId, experiment_id: experimentId, name: id, storage_shape: 'wide', codec: null, dialect: null, format: null, table_name: table })
    .execute();
  await sql.raw(`create table ${table} (time timestamptz primary key, ch_0 double precision, ch_1 bigint, ch_2 boolean, ch_3 text)`).execute(handle.db);
  // With node-postgres's arrays the one-statement append goes straight to the pool (db/direct-query.ts), as in the server.
  return { datasetId: id, table, arrays, packs: remember ? new PackCache() : undefined, pool: remember && arrays === binaryArrays ? handle.pool : undefined };
}

/** Another writer of the same dataset (another stream's sink): its own memory of the packs. */
function otherWriter(target: WideTarget): WideTarget {
  return { ...target, packs: target.packs && new PackCache() };
}

type Cell = [us: number, channel: number, value: number | string | boolean];

function batchOf(cells: readonly Cell[]) {
  const builder = new WideBatchBuilder(COLUMNS);
  for (const [us, channel, value] of cells) {
    const column = COLUMNS.get(channel)!;
    if (channel === 0) builder.putChecked(us, column, value as number, undefined);
    else if (channel === 1) builder.putChecked(us, column, Number(value), String(value));
    else if (channel === 2) builder.putChecked(us, column, value ? 1 : 0, value ? 't' : 'f');
    else builder.putChecked(us, column, NaN, `"${value}"`);
  }
  return builder.take();
}

/** The rollups of one channel as stored, and as recomputed from the raw rows. */
async function rollupsVsRaw(target: { datasetId: string; table: string }, channel: number, boolean = channel === 2, db: Kysely<Database> = handle.db) {
  const column = `ch_${channel}`;
  const value = boolean ? sql`(${sql.ref(column)})::int::float8` : sql`(${sql.ref(column)})::float8`;
  const recomputed = await sql<Record<string, number>>`
    with raw as (
      select round(date_part('epoch', time) * 1000000) as t, ${value} as v from ${sql.table(target.table)} where ${sql.ref(column)} is not null
    )
    select w::float8 as width_ms, (floor(t / (w * 1000)) * w * 1000)::float8 as bucket, count(*)::float8 as count,
           (min(array[v, t]))[1] as min_value, (min(array[v, t]))[2] as min_time,
           (max(array[v, -t]))[1] as max_value, -(max(array[v, -t]))[2] as max_time,
           min(t) as first_time, (min(array[t, v]))[2] as first_value, max(t) as last_time, (max(array[t, v]))[2] as last_value
    from raw cross join unnest(${`{${ROLLUP_WIDTHS_MS.join(',')}}`}::int8[]) as w
    group by 1, 2 order by 1, 2`.execute(db);
  const stored = (await storedRollups(db, target.datasetId))
    .filter((r) => r.channel === channel)
    .map((r) => ({
      width_ms: r.widthMs, bucket: r.bucket, count: r.count, min_value: r.minV, min_time: r.minT, max_value: r.maxV, max_time: r.maxT,
      first_time: r.firstT, first_value: r.firstV, last_time: r.lastT, last_value: r.lastV,
    }));
  return { stored, recomputed: recomputed.rows };
}

async function expectRollupsExact(target: WideTarget) {
  for (const channel of [0, 1, 2]) {
    const { stored, recomputed } = await rollupsVsRaw(target, channel);
    expect(stored.length).toBeGreaterThan(0);
    expect(stored).toEqual(recomputed);
  }
  expect((await storedRollups(handle.db, target.datasetId)).filter((r) => r.channel === 3)).toHaveLength(0);
}

beforeAll(async () => {
  database = await createTestDatabase();
  handle = await openDatabase({ url: database.url, dataDir: '.' });
  await migrateToLatest(handle.db);
  ({ organizationId } = await createOrganization(handle.db, 'writer'));
  experimentId = crypto.randomUUID();
  await handle.db.insertInto('experiments').values({ id: experimentId, organization_id: organizationId, name: 'e', description: '' }).execute();
});
afterAll(async () => {
  await handle?.close();
  await database?.drop();
});

const T0 = Date.UTC(2026, 2, 1) * 1000;

describe.each([
  ['binary arrays (node-postgres), packs read', binaryArrays, false],
  ['text arrays (PGlite), packs read', textArrays, false],
  ['binary arrays (node-postgres), packs remembered', binaryArrays, true],
  ['text arrays (PGlite), packs remembered', textArrays, true],
])('writeWideBatch with %s', (_, arrays, remember) => {
  it('appends in time order: every cell written, rollups exact', async () => {
    const target = await newTarget(arrays, remember);
    let written = 0;
    for (let b = 0; b < 5; b++) {
      const cells: Cell[] = [];
      for (let i = 0; i < 700; i++) {
        const us = T0 + (b * 700 + i) * 3_337;
        cells.push([us, 0, Math.sin(i) * 10], [us, 1, (i * 7919) % 1000 - 500], [us, 2, i % 3 === 0], [us, 3, `s${i}`]);
      }
      const result = await writeWideBatch(handle.db, target, batchOf(cells));
      expect(result).toMatchObject({ written: cells.length, duplicates: 0, rows: 700 });
      // Every cell is new, so every one is what limits evaluate.
      expect(result.fresh.map((mask) => mask.reduce((n, bit) => n + bit, 0))).toEqual([700, 700, 700, 700]);
      written += result.written;
    }
    expect(written).toBe(5 * 700 * 4);
    await expectRollupsExact(target);
  });

  it('overwrites, fills, same-value redeliveries and out-of-order batches keep rollups exact and counts honest', async () => {
    const target = await newTarget(arrays, remember);
    const base: Cell[] = [];
    for (let i = 0; i < 2000; i++) base.push([T0 + i * 997, 0, i % 50], [T0 + i * 997, 2, i % 2 === 0]);
    await writeWideBatch(handle.db, target, batchOf(base));

    // Redelivery of the same values: all duplicates, nothing changes.
    const again = await writeWideBatch(handle.db, target, batchOf(base.slice(0, 600)));
    expect(again).toMatchObject({ written: 0, duplicates: 600, rows: 300 });
    // Nothing new was stored: limits see none of it.
    expect(again.fresh.every((mask) => mask.every((bit) => bit === 0))).toBe(true);

    // Overwrite the maximum of a bucket with a small value, and a plain value with a new extreme.
    const overwrite = await writeWideBatch(handle.db, target, batchOf([
      [T0 + 49 * 997, 0, -1],
      [T0 + 1234 * 997, 0, 1e6],
      [T0 + 1234 * 997, 1, 42], // fills an empty cell of an existing row
      [T0 + 3 * 997, 0, NaN],
      [T0 + 7 * 997, 0, -Infinity],
    ]));
    expect(overwrite).toMatchObject({ written: 1, duplicates: 4, rows: 4 });
    // Only the filled cell is new (rows in time order: 3, 7, 49, 1234 × 997 µs; columns ch_0, ch_1).
    expect(overwrite.fresh.map((mask) => [...mask])).toEqual([[0, 0, 0, 0], [0, 0, 0, 1]]);

    // Older data arriving later, interleaved with existing rows, and merged twice inside the batch.
    const late: Cell[] = [];
    for (let i = 0; i < 500; i++) late.push([T0 - 400_000 + i * 1_601, 0, -i], [T0 - 400_000 + i * 1_601, 1, i]);
    late.push([T0 - 400_000, 0, 123]);
    const lateResult = await writeWideBatch(handle.db, target, batchOf(late));
    expect(lateResult.duplicates).toBe(1);

    await expectRollupsExact(target);
    const count = await sql<{ n: number }>`select count(ch_0)::int as n from ${sql.table(target.table)}`.execute(handle.db);
    const finest = (await storedRollups(handle.db, target.datasetId)).filter((r) => r.channel === 0 && r.widthMs === ROLLUP_WIDTHS_MS[0]);
    expect(finest.reduce((n, r) => n + r.count, 0)).toBe(count.rows[0]!.n);
  });

  it('concurrent writers of the same instants: conflicts retried under the table lock, rollups still exact', async () => {
    const target = await newTarget(arrays, remember);
    // Every writer has written once before, so with packs remembered each starts from what it knows.
    await writeWideBatch(handle.db, target, batchOf([[T0 - 1_000_000, 0, 1], [T0 - 1_000_000, 1, 1]]));
    const writers = Array.from({ length: 6 }, async (_, w) => {
      const own = otherWriter(target);
      await writeWideBatch(handle.db, own, batchOf([[T0 - 900_000 + w, 0, w], [T0 - 900_000 + w, 1, w]]));
      const cells: Cell[] = [];
      // Half of each writer's instants are shared with the others, half its own.
      for (let i = 0; i < 400; i++) cells.push([T0 + (i % 2 === 0 ? i : i * 1000 + w) * 500, w % 3, w * 1000 + i]);
      return writeWideBatch(handle.db, own, batchOf(cells));
    });
    const results = await Promise.all(writers);
    expect(results.reduce((n, r) => n + r.written + r.duplicates, 0)).toBe(6 * 400);
    await expectRollupsExact(target);
  });

  it('concurrent appends of adjacent ranges sharing rollup buckets: each merge sees the one before, rollups exact', async () => {
    const target = await newTarget(arrays, remember);
    // Six writers, each appending 5 ms ranges of its own: no instant and no range overlaps (every batch
    // takes the append path), but two writers share each 10 ms bucket and all share the coarser ones.
    // With packs remembered, each writer's memory goes stale as the others write.
    const writers = Array.from({ length: 6 }, async (_, w) => {
      const own = otherWriter(target);
      for (let round = 0; round < 4; round++) {
        const cells: Cell[] = [];
        const start = T0 + (round * 6 + w) * 5_000;
        for (let k = 0; k < 50; k++) cells.push([start + k * 100, 0, Math.cos(w * 50 + k + round)], [start + k * 100, 1, w * 100 - k], [start + k * 100, 2, (k + w) % 2 === 0]);
        const result = await writeWideBatch(handle.db, own, batchOf(cells));
        expect(result.duplicates).toBe(0);
      }
    });
    await Promise.all(writers);
    await expectRollupsExact(target);
  });

  it('keeps doubles bit-exact: -0, NaN, infinities, subnormals', async () => {
    const target = await newTarget(arrays, remember);
    const values = [-0, NaN, Infinity, -Infinity, 5e-324, 0.1 + 0.2, -1.7976931348623157e308];
    await writeWideBatch(handle.db, target, batchOf(values.map((v, i) => [T0 + i, 0, v] as Cell)));
    const rows = await sql<{ v: string }>`select ch_0::text as v from ${sql.table(target.table)} order by time`.execute(handle.db);
    expect(rows.rows.map((r) => r.v)).toEqual(['-0', 'NaN', 'Infinity', '-Infinity', '5e-324', '0.30000000000000004', '-1.7976931348623157e+308']);
  });
});

describe('writeWideBatch with the packs it stored last remembered', () => {
  /** The statements a writer sends through Kysely (begin and commit are not counted). */
  function counted() {
    const seen: string[] = [];
    const db = handle.db.withPlugin({
      transformQuery: (args) => {
        seen.push(args.node.kind);
        return args.node;
      },
      transformResult: async (args) => args.result,
    });
    return { db, seen };
  }

  function stream(start: number, rows: number, seed: number): Cell[] {
    const cells: Cell[] = [];
    for (let i = 0; i < rows; i++) cells.push([start + i * 250, 0, Math.sin(seed + i) * 100], [start + i * 250, 1, seed * 1000 + i], [start + i * 250, 2, (seed + i) % 3 === 0]);
    return cells;
  }

  it("writes a stream's batches after its first in one statement each, rollups exact", async () => {
    // Through Kysely (no pool), where the plugin sees every statement.
    const target = { ...(await newTarget(binaryArrays, true)), pool: undefined };
    const { db, seen } = counted();
    await writeWideBatch(db, target, batchOf(stream(T0, 400, 1)));
    // The first batch reads the packs (the raw statement, then the packs' write).
    expect(seen).toHaveLength(2);
    for (let b = 1; b < 6; b++) {
      seen.length = 0;
      await writeWideBatch(db, target, batchOf(stream(T0 + b * 100_000, 400, b)));
      expect(seen).toHaveLength(1);
    }
    await expectRollupsExact(target);
  });

  it('writes nothing over packs another writer changed since, and merges into what is stored instead', async () => {
    const target = { ...(await newTarget(binaryArrays, true)), pool: undefined };
    const other = otherWriter(target);
    await writeWideBatch(handle.db, target, batchOf(stream(T0, 400, 1)));
    // The other writer merges into the same 1 s and coarser packs (and into the 10 ms bucket the first ended in).
    await writeWideBatch(handle.db, other, batchOf(stream(T0 + 100_125, 20, 2)));
    const { db, seen } = counted();
    await writeWideBatch(db, target, batchOf(stream(T0 + 200_000, 400, 3)));
    // The remembered packs were stale: one statement that wrote nothing, then the packs read.
    expect(seen).toHaveLength(3);
    await expectRollupsExact(target);
    // And it remembers what it stored then: the next batch is one statement again.
    seen.length = 0;
    await writeWideBatch(db, target, batchOf(stream(T0 + 300_000, 400, 4)));
    expect(seen).toHaveLength(1);
    await expectRollupsExact(target);
  });

  it('runs the one-statement append prepared on its connection, its arrays written into the message', async () => {
    const single = new pg.Pool({ connectionString: database.url, max: 1 });
    try {
      const target = { ...(await newTarget(binaryArrays, true)), pool: single };
      for (let b = 0; b < 4; b++) await writeWideBatch(handle.db, target, batchOf(stream(T0 + b * 100_000, 400, b)));
      await expectRollupsExact(target);
      // Batch 1 reads the packs; 2 runs the statement unnamed, 3 prepares it, 4 runs it prepared.
      const prepared = await single.query<{ runs: number }>(`select (generic_plans + custom_plans)::int as runs from pg_prepared_statements where name like 'sortie_wide_%'`);
      expect(prepared.rows).toEqual([{ runs: 2 }]);
    } finally {
      await single.end();
    }
  });

  it('takes the locked path when a pack it took for new was stored by another writer', async () => {
    const target = await newTarget(binaryArrays, true);
    const other = otherWriter(target);
    const DAY = 86_400_000_000;
    await writeWideBatch(handle.db, target, batchOf(stream(T0, 40, 1)));
    // A day later every bucket, coarsest included, is one the first writer has not written yet.
    await writeWideBatch(handle.db, other, batchOf(stream(T0 + DAY, 4, 2)));
    const result = await writeWideBatch(handle.db, target, batchOf(stream(T0 + DAY + 1_000, 4, 3)));
    expect(result).toMatchObject({ written: 12, duplicates: 0, rows: 4 });
    await expectRollupsExact(target);
  });
});

describe('migrations 0003 and 0016: rollups of tables written before rollups existed, then packed', () => {
  it('aggregates wide tables written before rollups existed, and packs them slot by slot', async () => {
    const before = await createTestDatabase();
    const old = await openDatabase({ url: before.url, dataDir: '.' });
    try {
      const migrator = new Migrator({ db: old.db, provider: migrationProvider });
      const { error } = await migrator.migrateTo('0002-commands');
      expect(error).toBeUndefined();
      const { organizationId: org } = await createOrganization(old.db, 'old');
      const exp = crypto.randomUUID();
      await old.db.insertInto('experiments').values({ id: exp, organization_id: org, name: 'e', description: '' }).execute();
      const id = crypto.randomUUID();
      const table = `wide_${id.replaceAll('-', '')}`;
      await old.db
        .insertInto('datasets')
        .values({ id, organization_id: org, experiment_id: exp, name: 'd', storage_shape: 'wide', codec: null, dialect: null, format: null, table_name: table })
        .execute();
      // A text channel first: its slot in the packs stays empty between the numeric ones; ch_17 lands in a second group.
      const types: Array<[number, string]> = [[0, 'text'], [1, 'double precision'], [2, 'boolean'], [17, 'double precision']];
      for (const [i, type] of types) {
        await old.db
          .insertInto('channels')
          .values({ id: crypto.randomUUID(), organization_id: org, dataset_id: id, col_index: i, col_name: `ch_${i}`, name: `c${i}`, unit: '', data_type: 'double', physical_type: type, updated_at: new Date() })
          .execute();
      }
      await sql.raw(`create table ${table} (time timestamptz primary key, ch_0 text, ch_1 double precision, ch_2 boolean, ch_17 double precision)`).execute(old.db);
      await sql
        .raw(`insert into ${table} select timestamptz '2026-03-01' + g * interval '3 ms', 'x', sin(g), g % 2 = 0, case when g % 3 = 0 then cos(g) end from generate_series(1, 5000) g`)
        .execute(old.db);

      await migrateToLatest(old.db);
      for (const [channel, boolean] of [[1, false], [2, true], [17, false]] as const) {
        const { stored, recomputed } = await rollupsVsRaw({ datasetId: id, table }, channel, boolean, old.db);
        expect(stored.length).toBeGreaterThan(0);
        expect(stored).toEqual(recomputed);
      }
      const rollups = await storedRollups(old.db, id);
      expect(rollups.filter((r) => r.channel === 0)).toHaveLength(0);
      expect(rollups.filter((r) => r.channel === 1 && r.widthMs === 10).reduce((n, r) => n + r.count, 0)).toBe(5000);
      expect(rollups.filter((r) => r.channel === 17 && r.widthMs === 10).reduce((n, r) => n + r.count, 0)).toBe(1666);
    } finally {
      await old.close();
      await before.drop();
    }
  });
});
