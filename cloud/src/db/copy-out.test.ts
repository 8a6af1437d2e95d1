import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.ts';
import { BinaryCopyParser, copyRowsOut, copyStatementText, CopyFormatError, type CopyRow } from './copy-out.ts';
import { isDatabaseUnavailable } from './errors.ts';
import type { Database } from './schema.ts';

/** A binary COPY stream as PostgreSQL writes it: rows of (timestamptz µs since 2000, float8) fields, null as undefined. */
function binaryCopy(rows: ReadonlyArray<ReadonlyArray<{ ts: bigint } | number | undefined>>): Buffer {
  const parts: Buffer[] = [Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.from([0, 0, 0, 0, 0, 0, 0, 4, 9, 9, 9, 9])];
  for (const row of rows) {
    const head = Buffer.alloc(2);
    head.writeInt16BE(row.length);
    parts.push(head);
    for (const field of row) {
      const b = Buffer.alloc(field === undefined ? 4 : 12);
      if (field === undefined) b.writeInt32BE(-1);
      else {
        b.writeInt32BE(8);
        if (typeof field === 'number') b.writeDoubleBE(field, 4);
        else b.writeBigInt64BE(field.ts, 4);
      }
      parts.push(b);
    }
  }
  parts.push(Buffer.from([0xff, 0xff]));
  return Buffer.concat(parts);
}

const readRow = (row: CopyRow) => [row.timestampUs(), row.float8()];

describe('BinaryCopyParser', () => {
  // Times in PostgreSQL's binary form count µs from 2000-01-01; the reader answers µs from 1970.
  const PG_EPOCH_US = 946_684_800_000_000n;
  const rows = [
    [{ ts: 1_777_000_000_123_456n - PG_EPOCH_US }, 1.5],
    [{ ts: -PG_EPOCH_US - 1n }, undefined],
    [{ ts: 0n }, -0],
    [{ ts: 5n }, Number.NaN],
  ];
  const expected = [
    [1_777_000_000_123_456, 1.5],
    [-1, null],
    [946_684_800_000_000, -0],
    [946_684_800_000_005, Number.NaN],
  ];

  it('reads every row whichever byte the chunks are cut at, a header extension included', () => {
    const bytes = binaryCopy(rows);
    for (let cut = 0; cut <= bytes.length; cut++) {
      const seen: unknown[] = [];
      const parser = new BinaryCopyParser((row) => seen.push(readRow(row)));
      parser.push(bytes.subarray(0, cut));
      parser.push(bytes.subarray(cut));
      parser.finish();
      expect(seen, `cut at ${cut}`).toEqual(expected);
      expect(parser.rows).toBe(4);
    }
  });

  it('reads a stream fed one byte at a time', () => {
    const bytes = binaryCopy(rows);
    const seen: unknown[] = [];
    const parser = new BinaryCopyParser((row) => seen.push(readRow(row)));
    for (let i = 0; i < bytes.length; i++) parser.push(bytes.subarray(i, i + 1));
    parser.finish();
    expect(seen).toEqual(expected);
  });

  it('refuses a stream that ends before its trailer, and bytes that are not binary COPY', () => {
    const bytes = binaryCopy(rows);
    const cut = new BinaryCopyParser(() => {});
    cut.push(bytes.subarray(0, bytes.length - 5));
    expect(() => cut.finish()).toThrow(CopyFormatError);
    expect(() => new BinaryCopyParser(() => {}).push(Buffer.from('time,value\n1,2\n3,4\n5,6\n7,8\n'))).toThrow(/signature/);
  });

  it('refuses a field of another width than the one read', () => {
    const bytes = binaryCopy([[{ ts: 0n }, 1]]);
    bytes.writeInt32BE(4, 23 + 2 + 12); // after the 23-byte header, the row's field count and its time: the float8 now claims 4 bytes
    const parser = new BinaryCopyParser((row) => readRow(row));
    expect(() => parser.push(bytes)).toThrow(/4 bytes where 8/);
  });
});

describe('copyRowsOut against PostgreSQL', () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  beforeAll(async () => {
    database = await createTestDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 1 });
    // As openDatabase's pool does: a checked-out client whose session dies also emits 'error', which the
    // reading call already rejects with.
    pool.on('connect', (client) => client.on('error', () => {}));
  });
  afterAll(async () => {
    await pool?.end();
    await database?.drop();
  });

  it('hands over every row with exact times and doubles, nulls as null', async () => {
    const seen: unknown[] = [];
    const count = await copyRowsOut(
      pool,
      `select timestamptz 'epoch' + t::int8 * 1000003 * interval '1 microsecond',
              case when t % 7 = 0 then null when t = 1 then 'NaN'::float8 when t = 2 then '-Infinity'::float8 else t / 3.0::float8 end
       from generate_series(0, 99999) as t`,
      (row) => seen.push(readRow(row)),
    );
    expect(count).toBe(100_000);
    expect(seen).toHaveLength(100_000);
    expect(seen[0]).toEqual([0, null]);
    expect(seen[1]).toEqual([1_000_003, Number.NaN]);
    expect(seen[2]).toEqual([2_000_006, -Infinity]);
    expect(seen[99_999]).toEqual([99_999 * 1_000_003, 99_999 / 3]);
  });

  it('rejects with the statement error, and the connection serves the next statement', async () => {
    await expect(copyRowsOut(pool, 'select 1 / 0', () => {})).rejects.toThrow(/division by zero/);
    const after = await pool.query('select 41 + 1 as n');
    expect(after.rows[0].n).toBe(42);
  });

  it('gives up a connection whose rows could not be read, and the pool opens another', async () => {
    // A text field read as a float8: the reader throws mid-stream, so that connection is not reused.
    await expect(copyRowsOut(pool, `select now(), 'abc'::text from generate_series(1, 10000)`, (row) => readRow(row))).rejects.toThrow(CopyFormatError);
    const after = await pool.query('select 2 as n');
    expect(after.rows[0].n).toBe(2);
  });

  it('a backend ended mid-COPY is the database going away, not a bad query, and the pool recovers', async () => {
    // What a fast shutdown or a failover does to a Query reading rows: the server ends the session
    // while the rows stream. The Query must answer `unavailable` (retry), not a fault.
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    try {
      let rows = 0;
      let terminated: Promise<unknown> | undefined;
      // generate_series in the select list streams its rows (in FROM it would be materialised first).
      const failed = copyRowsOut(pool, `select now(), generate_series(1, 50000000)::float8`, () => {
        // Once rows flow, end this backend from another session.
        if (++rows === 1000) terminated = admin.query(`select pg_terminate_backend(pid) from pg_stat_activity where query like 'copy (select now(), generate_series(1, 50000000)%' and pid <> pg_backend_pid()`);
      }).then(
        () => undefined,
        (error: unknown) => error,
      );
      const error = await failed;
      await terminated;
      expect(rows).toBeGreaterThanOrEqual(1000);
      expect(isDatabaseUnavailable(error)).toBe(true);
      const after = await pool.query('select 3 as n');
      expect(after.rows[0].n).toBe(3);
    } finally {
      await admin.end();
    }
  });

  it('runs a Kysely statement with its values inlined, and refuses one that still binds a parameter', async () => {
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    const name = `it's "quoted"`;
    const statement = sql`select ${sql.ref('g')}::float8, ${sql.lit(name)}::text = ${sql.lit(name)} from generate_series(1, ${sql.lit(3)}) as g`;
    const text = copyStatementText(statement, db);
    expect(text).not.toContain('$1');
    const seen: number[] = [];
    expect(
      await copyRowsOut(pool, `select now(), g from (${text}) as s(g, same) where same`, (row) => {
        row.timestampUs();
        seen.push(row.float8()!);
      }),
    ).toBe(3);
    expect(seen).toEqual([1, 2, 3]);
    expect(() => copyStatementText(sql`select ${3}::float8`, db)).toThrow(/cannot bind parameters/);
  });
});
