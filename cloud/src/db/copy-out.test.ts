import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.ts';
import { copyRowsOut, copyStatementText, CopyFormatError, CopyOutReader, type CopyRow } from './copy-out.ts';
import { isDatabaseUnavailable } from './errors.ts';
import type { Database } from './schema.ts';

type Field = { ts: bigint } | number | undefined;

/** One row of PostgreSQL's binary COPY format: (timestamptz µs since 2000, float8) fields, undefined as NULL. */
function binaryRow(row: readonly Field[]): Buffer {
  const parts: Buffer[] = [Buffer.from([row.length >> 8, row.length & 0xff])];
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
  return Buffer.concat(parts);
}

/** A backend message: its type, its length, its body. */
function message(type: string, body: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(4 + body.length, 1);
  return Buffer.concat([head, body]);
}

/** The file header (signature, flags, a 4-byte header extension) and the trailer of a binary COPY. */
const FILE_HEADER = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.from([0, 0, 0, 0, 0, 0, 0, 4, 9, 9, 9, 9])]);
const TRAILER = Buffer.from([0xff, 0xff]);

/**
 * What the backend sends for a COPY TO STDOUT in binary, as PostgreSQL does it: CopyOutResponse, one
 * CopyData per row (the first with the file header before its row), the trailer, CopyDone; then the
 * messages the driver reads (CommandComplete, ReadyForQuery), returned apart as `after`.
 */
function copyOut(rows: ReadonlyArray<readonly Field[]>, extra: { noticeAt?: number } = {}): { bytes: Buffer; after: Buffer } {
  const parts = [message('H', Buffer.from([1, 0, 2, 0, 1, 0, 1]))];
  rows.forEach((row, i) => {
    if (i === extra.noticeAt) parts.push(message('N', Buffer.from('SWARNING\0Mslow\0\0', 'latin1')));
    parts.push(message('d', i === 0 ? Buffer.concat([FILE_HEADER, binaryRow(row)]) : binaryRow(row)));
  });
  parts.push(message('d', rows.length === 0 ? Buffer.concat([FILE_HEADER, TRAILER]) : TRAILER), message('c'));
  const after = Buffer.concat([message('C', Buffer.from(`COPY ${rows.length}\0`, 'latin1')), message('Z', Buffer.from('I', 'latin1'))]);
  return { bytes: Buffer.concat([...parts, after]), after };
}

/** Feeds the chunks to a reader as a socket would; what it hands back, and every chunk after, is the driver's. */
function feed(reader: CopyOutReader, chunks: Buffer[]): Buffer | undefined {
  const driver: Buffer[] = [];
  let handedBack = false;
  for (const chunk of chunks) {
    if (handedBack) driver.push(chunk);
    else {
      const rest = reader.push(chunk);
      if (rest !== undefined) {
        handedBack = true;
        driver.push(rest);
      }
    }
  }
  return handedBack ? Buffer.concat(driver) : undefined;
}

const readRow = (row: CopyRow) => [row.timestampUs(), row.float8()];

describe('CopyOutReader', () => {
  // Times in PostgreSQL's binary form count µs from 2000-01-01; the reader answers µs from 1970.
  const PG_EPOCH_US = 946_684_800_000_000n;
  const rows: Field[][] = [
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

  it('reads every row whichever byte the socket cuts at, a notice between rows skipped, and hands back what follows the COPY', () => {
    const { bytes, after } = copyOut(rows, { noticeAt: 2 });
    for (let cut = 0; cut <= bytes.length; cut++) {
      for (const second of [cut, Math.min(bytes.length, cut + 7)]) {
        const seen: unknown[] = [];
        const reader = new CopyOutReader((row) => seen.push(readRow(row)));
        const rest = feed(reader, [bytes.subarray(0, cut), bytes.subarray(cut, second), bytes.subarray(second)]);
        expect(seen, `cut at ${cut} and ${second}`).toEqual(expected);
        expect(rest, `cut at ${cut} and ${second}`).toEqual(after);
        expect(reader.rowError).toBeUndefined();
        reader.finish();
        expect(reader.rows).toBe(4);
      }
    }
  });

  it('reads a stream fed one byte at a time, and an empty result', () => {
    const { bytes, after } = copyOut(rows);
    const seen: unknown[] = [];
    const reader = new CopyOutReader((row) => seen.push(readRow(row)));
    expect(feed(reader, [...bytes].map((b) => Buffer.from([b])))).toEqual(after);
    expect(seen).toEqual(expected);
    const empty = copyOut([]);
    const none = new CopyOutReader(() => {
      throw new Error('no row expected');
    });
    expect(feed(none, [empty.bytes])).toEqual(empty.after);
    none.finish();
    expect(none.rows).toBe(0);
  });

  it('hands an error from the server back to the driver, from its first byte', () => {
    const { bytes } = copyOut(rows);
    const error = Buffer.concat([message('E', Buffer.from('SERROR\0C57P01\0Mterminating connection\0\0', 'latin1'))]);
    const cutAt = bytes.indexOf(message('d', binaryRow(rows[2]!)));
    for (let cut = 0; cut <= error.length; cut++) {
      const reader = new CopyOutReader(() => {});
      const rest = feed(reader, [bytes.subarray(0, cutAt), error.subarray(0, cut), error.subarray(cut)]);
      expect(rest, `cut at ${cut}`).toEqual(error);
      expect(reader.rows).toBe(2);
      expect(() => reader.finish()).toThrow(CopyFormatError);
    }
  });

  it('keeps reading to the end of the COPY after a row it cannot read, and reports the first such error', () => {
    // A field of another width than the one read, bytes that are not binary COPY, a row read past its end:
    // the rows stop, the messages do not, so the session stays in step.
    const wrongWidth = new CopyOutReader((row) => row.int4());
    const { bytes, after } = copyOut(rows);
    expect(feed(wrongWidth, [bytes])).toEqual(after);
    expect(wrongWidth.rowError).toBeInstanceOf(CopyFormatError);
    expect(String(wrongWidth.rowError)).toMatch(/8 bytes where 4/);
    expect(wrongWidth.rows).toBe(0);

    const text = Buffer.concat([message('H', Buffer.from([0, 0, 1, 0, 0])), message('d', Buffer.from('1,2\n')), message('c'), message('Z', Buffer.from('I'))]);
    const notBinary = new CopyOutReader(() => {});
    expect(feed(notBinary, [text])).toEqual(message('Z', Buffer.from('I')));
    expect(String(notBinary.rowError)).toMatch(/signature/);

    const pastEnd = new CopyOutReader((row) => {
      readRow(row);
      row.float8();
    });
    feed(pastEnd, [bytes]);
    expect(String(pastEnd.rowError)).toMatch(/past the end of its row/);
  });

  it('refuses messages that cannot be split: a length below its own four bytes', () => {
    const bad = Buffer.from([0x64, 0, 0, 0, 2, 0, 0]);
    expect(() => new CopyOutReader(() => {}).push(bad)).toThrow(CopyFormatError);
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
    const extremes: unknown[] = [];
    await copyRowsOut(pool, `select t, 0::float8 from unnest(array['infinity', '-infinity', '2255-01-01']::timestamptz[]) as t`, (row) => extremes.push(readRow(row)));
    expect(extremes).toEqual([[Infinity, 0], [-Infinity, 0], [Date.UTC(2255, 0, 1) * 1000, 0]]);
  });

  it('reads int4 and int8 fields as sent, exact to ±2^53, negatives and nulls included', async () => {
    const seen: unknown[] = [];
    await copyRowsOut(
      pool,
      `select v::int4, w from (values (0, 0::int8), (-1, -1), (2147483647, 9007199254740991), (-2147483648, -9007199254740991),
                                      (7, 4294967296), (8, -4294967297), (null, null), (9, 1796428862490000)) as x(v, w)`,
      (row) => seen.push([row.int4(), row.int8()]),
    );
    expect(seen).toEqual([
      [0, 0],
      [-1, -1],
      [2147483647, 9007199254740991],
      [-2147483648, -9007199254740991],
      [7, 4294967296],
      [8, -4294967297],
      [null, null],
      [9, 1796428862490000],
    ]);
    // Read at the wrong width, a field is refused rather than misread.
    await expect(copyRowsOut(pool, 'select 1::int8', (row) => row.int4())).rejects.toThrow(/8 bytes where 4/);
  });

  it('rejects with the statement error, and the connection serves the next statement', async () => {
    await expect(copyRowsOut(pool, 'select 1 / 0', () => {})).rejects.toThrow(/division by zero/);
    const after = await pool.query('select 41 + 1 as n');
    expect(after.rows[0].n).toBe(42);
  });

  it('rejects when a row cannot be read, after reading the COPY to its end, and the connection serves the next statement', async () => {
    // A text field read as a float8: the rows stop, the messages are read to the end, the session stays usable.
    const pid = (await pool.query('select pg_backend_pid() as pid')).rows[0].pid;
    await expect(copyRowsOut(pool, `select now(), 'abc'::text from generate_series(1, 10000)`, (row) => readRow(row))).rejects.toThrow(CopyFormatError);
    const after = await pool.query('select 2 as n, pg_backend_pid() as pid');
    expect(after.rows[0]).toEqual({ n: 2, pid });
  });

  it('rejects with what onRow throws, and the connection serves the next statement', async () => {
    const failure = new Error('the fold failed');
    await expect(copyRowsOut(pool, `select now(), g::float8 from generate_series(1, 100000) as g`, () => {
      throw failure;
    })).rejects.toBe(failure);
    expect((await pool.query('select 4 as n')).rows[0].n).toBe(4);
  });

  it('rejects even when onRow throws undefined', async () => {
    await expect(copyRowsOut(pool, `select now(), g::float8 from generate_series(1, 10) as g`, () => {
      throw undefined;
    })).rejects.toBeUndefined();
    expect((await pool.query('select 5 as n')).rows[0].n).toBe(5);
  });

  it('refuses a query text that holds a second statement after the COPY, and the pool recovers', async () => {
    // Kysely inlines values as escaped literals, so no value can do this; the reader must still not hang.
    await expect(copyRowsOut(pool, 'select 1::float8) to stdout (format binary); copy (select 2::float8', () => {})).rejects.toThrow(/more than one statement/);
    expect((await pool.query('select 6 as n')).rows[0].n).toBe(6);
  });

  it('clears the query_timeout timer node-postgres arms for it, so it never fires after the COPY', async () => {
    const timed = new pg.Pool({ connectionString: database.url, max: 1, query_timeout: 100 });
    let drains = 0;
    timed.on('connect', (client) => client.on('drain', () => drains++));
    try {
      expect(await copyRowsOut(timed, `select now(), g::float8 from generate_series(1, 3) as g`, () => {})).toBe(3);
      await new Promise((r) => setTimeout(r, 250));
      // One 'drain' for the COPY's end; a timer left armed would pulse the queue again when it fired.
      expect(drains).toBe(1);
      await expect(copyRowsOut(timed, `select now(), g::float8 from generate_series(1, 3) as g, pg_sleep(0.3)`, () => {})).rejects.toThrow(/timeout/);
      expect((await timed.query('select 7 as n')).rows[0].n).toBe(7);
    } finally {
      await timed.end();
    }
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
