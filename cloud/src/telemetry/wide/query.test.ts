import { sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../../auth/organizations.ts';
import { migrateToLatest, openDatabase, type DatabaseHandle } from '../../db/connect.ts';
import { createTestDatabase, type TestDatabase } from '../../testing/test-database.ts';
import { wideChannelRows } from '../../testing/wide-channels.ts';
import { bucketsForBudget } from '../series/series.ts';
import { binaryArrays } from '../sql/sql-arrays.ts';
import { planQuery, rawReadRanges } from './query-plan.ts';
import { queryWide, type WideQuery } from './query.ts';
import { WideBatchBuilder, writableColumns, type WideColumnInfo } from './wide-batch.ts';
import { writeWideBatch } from './wide-writer.ts';

// A wide Query reads its rows two ways: by binary COPY, folded in the server (node-postgres), or grouped in
// SQL (PGlite, which cannot COPY to a client). Both must answer the same samples and counts, over every
// kind of plan (raw rows only; rollups with raw edges), for one channel or several, with nulls, booleans,
// NaN and infinities, and ties.

const COLUMNS = writableColumns(wideChannelRows(['double precision', 'bigint', 'boolean', 'double precision']));
const ALL = [...COLUMNS.values()].filter((c) => c.numeric);

let database: TestDatabase;
let handle: DatabaseHandle;
let datasetId: string;
let table: string;
/** The pool a COPY read takes its connection from, apart from the statements' pool, so its checkouts can be counted. */
let copyPool: pg.Pool;
let copyCheckouts = 0;

const T0 = Date.UTC(2026, 2, 1) * 1000;
/** 120,000 rows at 4 kHz (30 s): ch_0 every row, ch_1 every third, ch_2 every row, ch_3 only in the first 10 s. */
const ROWS = 120_000;
const STEP_US = 250;

beforeAll(async () => {
  database = await createTestDatabase();
  handle = await openDatabase({ url: database.url, dataDir: '.' });
  await migrateToLatest(handle.db);
  copyPool = new pg.Pool({ connectionString: database.url, max: 2 });
  copyPool.on('acquire', () => copyCheckouts++);
  const { organizationId } = await createOrganization(handle.db, 'query');
  const experimentId = crypto.randomUUID();
  await handle.db.insertInto('experiments').values({ id: experimentId, organization_id: organizationId, name: 'e', description: '' }).execute();
  datasetId = crypto.randomUUID();
  table = `wide_${datasetId.replaceAll('-', '')}`;
  await handle.db
    .insertInto('datasets')
    .values({ id: datasetId, organization_id: organizationId, experiment_id: experimentId, name: 'q', storage_shape: 'wide', codec: null, dialect: null, format: null, table_name: table })
    .execute();
  await sql.raw(`create table ${table} (time timestamptz primary key, ch_0 double precision, ch_1 bigint, ch_2 boolean, ch_3 double precision)`).execute(handle.db);
  const [c0, c1, c2, c3] = [0, 1, 2, 3].map((i) => COLUMNS.get(i)!);
  for (let start = 0; start < ROWS; start += 10_000) {
    const builder = new WideBatchBuilder(COLUMNS);
    for (let i = start; i < start + 10_000; i++) {
      const us = T0 + i * STEP_US;
      // Repeating values make ties for the minimum and maximum; a few NaN and infinities sort as PostgreSQL sorts them.
      const v0 = i % 9973 === 0 ? Number.NaN : i % 7919 === 0 ? -Infinity : Math.round(Math.sin(i / 500) * 20) / 2;
      builder.putChecked(us, c0!, v0, undefined);
      if (i % 3 === 0) builder.putChecked(us, c1!, (i * 7919) % 1001, String((i * 7919) % 1001));
      builder.putChecked(us, c2!, i % 5 === 0 ? 1 : 0, i % 5 === 0 ? 't' : 'f');
      if (us < T0 + 10_000_000) builder.putChecked(us, c3!, (i % 17) - 8, undefined);
    }
    await writeWideBatch(handle.db, { datasetId, table, arrays: binaryArrays }, builder.take());
  }
});
afterAll(async () => {
  await copyPool?.end();
  await handle?.close();
  await database?.drop();
});

function read(columns: readonly WideColumnInfo[], from: number | undefined, to: number | undefined, maxPoints: number, viaCopy: boolean) {
  const query: WideQuery = { datasetId, table, channelIds: columns.map((c) => String(c.index)), from, to, maxPoints };
  return queryWide(handle.db, query, columns, viaCopy ? copyPool : undefined);
}

describe('queryWide: raw rows by binary COPY answer what SQL grouping answers', () => {
  const shapes: Array<[name: string, from: number | undefined, to: number | undefined, maxPoints: number]> = [
    ['the whole range (rollups, raw edges)', undefined, undefined, 2000],
    ['an unaligned 7.3 s window (rollups, raw edges)', T0 + 1_234_567, T0 + 8_534_567, 200],
    ['a 2 s window (raw rows only)', T0 + 20_000_123, T0 + 22_000_123, 2000],
    ['a 5 s window (raw rows only, read as two halves at once)', T0 + 12_000_321, T0 + 17_000_321, 2000],
    ['a 40 ms window across the end of ch_3 (raw rows only)', T0 + 9_980_001, T0 + 10_020_001, 100],
    ['a window with no rows for ch_3', T0 + 15_000_000, T0 + 16_000_000, 300],
    ['a budget of three points', T0 + 5_000_000, T0 + 5_500_000, 3],
  ];

  it.each(shapes)('%s, every channel in one Query', async (_, from, to, maxPoints) => {
    const viaSql = await read(ALL, from, to, maxPoints, false);
    const viaCopy = await read(ALL, from, to, maxPoints, true);
    expect(viaCopy).toEqual(viaSql);
    expect(viaSql.some((s) => s.samples.t.length > 0)).toBe(true);
  });

  it.each(shapes)('%s, each channel alone', async (_, from, to, maxPoints) => {
    for (const column of ALL) {
      const viaSql = await read([column], from, to, maxPoints, false);
      expect(await read([column], from, to, maxPoints, true)).toEqual(viaSql);
    }
  });

  it('the shapes cover both kinds of plan, and COPY reads the rows SQL counts', async () => {
    const density = ROWS / ((ROWS - 1) * STEP_US + 1);
    const lastUs = T0 + (ROWS - 1) * STEP_US;
    const mixed = planQuery(T0 + 1_234_567, T0 + 8_534_567, bucketsForBudget(200), density);
    expect(mixed.blocks.length).toBeGreaterThan(0);
    expect(mixed.raw).toHaveLength(2);
    const rawOnly = planQuery(T0 + 20_000_123, T0 + 22_000_123, bucketsForBudget(2000), density);
    expect(rawOnly.blocks).toHaveLength(0);
    expect(rawOnly.raw).toHaveLength(1);
    // Both kinds of plan read by COPY: a raw-only plan in one statement for every channel, a plan with
    // rollups in one for its packs (the four channels share a group) and one for its raw edges.
    let checkouts = copyCheckouts;
    await read(ALL, T0 + 1_234_567, T0 + 8_534_567, 200, true);
    expect(copyCheckouts).toBe(checkouts + 2);
    checkouts = copyCheckouts;
    const window = await read(ALL, T0 + 20_000_123, T0 + 22_000_123, 2000, true);
    expect(copyCheckouts).toBe(checkouts + 1);
    // 8,000 rows in the window: ch_0 and ch_2 in every row, ch_1 in every third, ch_3 none.
    expect(window.map((s) => s.rawPoints)).toEqual([8000, 2667, 8000, 0]);
    // 20,000 rows: read as two halves, each by a COPY of its own.
    expect(rawReadRanges(planQuery(T0 + 12_000_321, T0 + 17_000_321, bucketsForBudget(2000), density), density)).toHaveLength(2);
    checkouts = copyCheckouts;
    const halves = await read(ALL, T0 + 12_000_321, T0 + 17_000_321, 2000, true);
    expect(copyCheckouts).toBe(checkouts + 2);
    expect(halves.map((s) => s.rawPoints)).toEqual([20_000, 6667, 20_000, 0]);
    const whole = await read(ALL, undefined, undefined, 2000, true);
    expect(whole.map((s) => s.rawPoints)).toEqual([ROWS, ROWS / 3, ROWS, 40_000]);
    expect(whole[0]!.samples.t.at(-1)).toBe(lastUs);
  });
});

describe('queryWide: rollups packed sixteen channels to a row', () => {
  it('reads each channel from its own slot, across groups, alone or together', async () => {
    // ch_1 and ch_21 hold the same series (slot 1 of group 0, slot 5 of group 1); ch_20 holds ch_5's plus 1000.
    const columns = writableColumns(wideChannelRows(Array.from({ length: 22 }, () => 'double precision')));
    const id = crypto.randomUUID();
    const packedTable = `wide_${id.replaceAll('-', '')}`;
    const { organization_id, experiment_id } = await handle.db.selectFrom('datasets').select(['organization_id', 'experiment_id']).where('id', '=', datasetId).executeTakeFirstOrThrow();
    await handle.db
      .insertInto('datasets')
      .values({ id, organization_id, experiment_id, name: 'packed', storage_shape: 'wide', codec: null, dialect: null, format: null, table_name: packedTable })
      .execute();
    await sql.raw(`create table ${packedTable} (time timestamptz primary key, ${[...columns.values()].map((c) => `${c.name} double precision`).join(', ')})`).execute(handle.db);
    for (let start = 0; start < 60_000; start += 10_000) {
      const builder = new WideBatchBuilder(columns);
      for (let i = start; i < start + 10_000; i++) {
        const us = T0 + i * 500;
        const a = Math.sin(i / 300) * 100;
        const b = (i * 7919) % 1009;
        builder.putChecked(us, columns.get(1)!, a, undefined);
        builder.putChecked(us, columns.get(21)!, a, undefined);
        builder.putChecked(us, columns.get(5)!, b, undefined);
        builder.putChecked(us, columns.get(20)!, b + 1000, undefined);
      }
      await writeWideBatch(handle.db, { datasetId: id, table: packedTable, arrays: binaryArrays }, builder.take());
    }
    const ask = async (indices: number[], viaCopy: boolean) => {
      const picked = indices.map((i) => columns.get(i)!);
      const query: WideQuery = { datasetId: id, table: packedTable, channelIds: indices.map(String), from: T0 + 1_111, to: undefined, maxPoints: 1000 };
      return queryWide(handle.db, query, picked, viaCopy ? copyPool : undefined);
    };
    for (const viaCopy of [true, false]) {
      const [c21, c5, c1, c20] = await ask([21, 5, 1, 20], viaCopy);
      const [alone] = await ask([1], viaCopy);
      expect(c1!.rawPoints).toBe(60_000 - 3);
      expect(c1!.samples.t.length).toBeGreaterThan(900);
      expect(c21!.samples).toEqual(c1!.samples);
      expect(alone!.samples).toEqual(c1!.samples);
      expect(c20!.samples.v).toEqual(c5!.samples.v.map((v) => v + 1000));
      expect([c21, c5, c20].map((c) => c!.rawPoints)).toEqual([60_000 - 3, 60_000 - 3, 60_000 - 3]);
    }
  });
});
