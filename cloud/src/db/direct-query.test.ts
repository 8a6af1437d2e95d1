import { CompiledQuery } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../testing/test-database.ts';
import { binaryArrays } from '../telemetry/sql/sql-arrays.ts';
import { BinaryParam, encodeStatement, runDirect } from './direct-query.ts';

/** A BinaryParam of raw bytes (a bytea's binary form is its bytes). */
class Bytes extends BinaryParam {
  readonly byteLength: number;
  readonly #bytes: Uint8Array;
  constructor(bytes: Uint8Array) {
    super();
    this.#bytes = bytes;
    this.byteLength = bytes.byteLength;
  }
  writeTo(buf: Buffer, at: number): void {
    buf.set(this.#bytes, at);
  }
}

/** The frontend messages of a buffer: type letter and body. */
function messages(buf: Buffer): Array<{ type: string; body: Buffer }> {
  const out: Array<{ type: string; body: Buffer }> = [];
  for (let at = 0; at < buf.length; ) {
    const length = buf.readInt32BE(at + 1);
    out.push({ type: String.fromCharCode(buf[at]!), body: buf.subarray(at + 5, at + 1 + length) });
    at += 1 + length;
  }
  return out;
}

describe('encodeStatement', () => {
  it('writes Parse, Bind, Describe, Execute and Sync with each message length right, parameters in their formats', () => {
    const buf = encodeStatement('s1', 'select $1, $2, $3', ['x', 7, new Bytes(Uint8Array.of(1, 2, 3))], true);
    const parsed = messages(buf);
    expect(parsed.map((m) => m.type)).toEqual(['P', 'B', 'D', 'E', 'S']);
    expect(parsed[0]!.body.toString('latin1')).toBe('s1\0select $1, $2, $3\0\0\0');
    const bind = parsed[1]!.body;
    // portal '', statement 's1', 3 format codes (text, text, binary), 3 values, 1 result format (text)
    expect([...bind]).toEqual([0, ...Buffer.from('s1\0'), 0, 3, 0, 0, 0, 0, 0, 1, 0, 3, 0, 0, 0, 1, 0x78, 0, 0, 0, 1, 0x37, 0, 0, 0, 3, 1, 2, 3, 0, 1, 0, 0]);
  });

  it('leaves Parse out for a statement the connection has prepared, and sends NULL as length -1', () => {
    const parsed = messages(encodeStatement('s1', 'select $1', [null], false));
    expect(parsed.map((m) => m.type)).toEqual(['B', 'D', 'E', 'S']);
    expect([...parsed[0]!.body.subarray(-8, -4)]).toEqual([0xff, 0xff, 0xff, 0xff]);
  });

  it('refuses a parameter it cannot send as node-postgres would', () => {
    expect(() => encodeStatement('', 'select $1', [{ a: 1 }], true)).toThrow(/takes text, numbers/);
  });
});

describe('runDirect against PostgreSQL', () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  beforeAll(async () => {
    database = await createTestDatabase();
    pool = new pg.Pool({ connectionString: database.url, max: 1 });
  });
  afterAll(async () => {
    await pool?.end();
    await database?.drop();
  });

  const query = <R>(text: string, values: unknown[]) => CompiledQuery.raw(text, values) as CompiledQuery<R>;

  it('binds text, numbers, booleans, bytes, binary arrays and NULL; rows come back parsed', async () => {
    const rows = await runDirect<{ t: string; n: number; b: boolean; raw: Buffer; sum: number; len: number; z: null }>(
      pool,
      '',
      query('select $1::text as t, $2::int4 as n, $3::bool as b, $4::bytea as raw, (select sum(x) from unnest($5::float8[]) as x)::float8 as sum, array_length($6::int8[], 1) as len, $7::text as z', [
        'ünïcode',
        42,
        true,
        Uint8Array.of(0, 255, 10),
        binaryArrays.float8([1.5, 2.5, 99], Uint8Array.of(1, 1, 0)),
        binaryArrays.int8([2 ** 53 - 1, -(2 ** 53 - 1)]),
        null,
      ]),
    );
    expect(rows).toEqual([{ t: 'ünïcode', n: 42, b: true, raw: Buffer.from([0, 255, 10]), sum: 4, len: 2, z: null }]);
  });

  it('prepares a named statement once per connection and runs it again unparsed', async () => {
    const text = 'select $1::int4 + 1 as n';
    for (const n of [1, 2, 3]) expect(await runDirect<{ n: number }>(pool, 'direct_test_plus', query(text, [n]))).toEqual([{ n: n + 1 }]);
    const prepared = await pool.query<{ name: string; runs: number }>(`select name, (generic_plans + custom_plans)::int as runs from pg_prepared_statements where name = 'direct_test_plus'`);
    expect(prepared.rows).toEqual([{ name: 'direct_test_plus', runs: 3 }]);
  });

  it('rejects with the server error and leaves the connection in step', async () => {
    await expect(runDirect(pool, '', query('select 1 / $1::int4', [0]))).rejects.toMatchObject({ code: '22012' });
    // A named statement that fails to parse is not remembered as prepared: the next run parses it again.
    await expect(runDirect(pool, 'direct_test_bad', query('select nope', []))).rejects.toMatchObject({ code: '42703' });
    await expect(runDirect(pool, 'direct_test_bad', query('select nope', []))).rejects.toMatchObject({ code: '42703' });
    expect(await runDirect<{ one: number }>(pool, '', query('select 1 as one', []))).toEqual([{ one: 1 }]);
  });

  it('refuses a parameter it cannot encode before sending anything, and keeps the connection', async () => {
    const pid = async () => (await runDirect<{ pid: number }>(pool, '', query('select pg_backend_pid() as pid', [])))[0]!.pid;
    const before = await pid();
    await expect(runDirect(pool, '', query('select $1', [new Date()]))).rejects.toThrow(/takes text, numbers/);
    // A statement error too leaves the session in step: the pool's one connection serves on.
    await expect(runDirect(pool, '', query('select 1 / 0', []))).rejects.toMatchObject({ code: '22012' });
    expect(await pid()).toBe(before);
  });
});
