import type { RawBuilder } from 'kysely';
import type pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { isDatabaseUnavailable } from './errors.ts';
import type { Executor } from './executor.ts';

/**
 * Rows out of PostgreSQL in its binary COPY format, read as they stream in.
 *
 * node-postgres reads every result field as text: a float8 is formatted by the server and parsed here,
 * and a bytea doubles in size as hex. `COPY (query) TO STDOUT (FORMAT binary)` sends each field as its
 * binary send form instead (a float8 or an int8 is 8 bytes), through pg-copy-streams, which hands over
 * the CopyData bytes as they arrive. The reader below walks them without building a row object.
 *
 * COPY takes no bind parameters, so the query is complete text: built with Kysely's `sql`, every value
 * in it inlined by Kysely (`sql.lit`, `sql.ref`, `sql.table`) and compiled by `copyStatementText`.
 */

/** The 11-byte signature of PostgreSQL's binary COPY format, then a flags word and a header extension length. */
const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/** µs from the Unix epoch to PostgreSQL's epoch (2000-01-01), the origin of a binary timestamptz. */
const PG_EPOCH_US = 946_684_800_000_000;

/**
 * One row of a binary COPY, read field by field in order. Valid only inside the `onRow` call it is
 * handed to: the same reader moves on to the next row.
 */
export class CopyRow {
  // A DataView rather than Buffer's read methods: V8 inlines its getters (a 40,000-row read spent a
  // third of its parsing time in Buffer's bounds-checked readers).
  #view: DataView = new DataView(new ArrayBuffer(0));
  #pos = 0;

  /** @internal */
  at(view: DataView, pos: number): void {
    this.#view = view;
    this.#pos = pos;
  }

  #length(size: number): number {
    const length = this.#view.getInt32(this.#pos);
    this.#pos += 4;
    if (length !== -1 && length !== size) throw new CopyFormatError(`a field of ${length} bytes where ${size} were expected`);
    return length;
  }

  /** A float8 field; null for SQL NULL. */
  float8(): number | null {
    if (this.#length(8) === -1) return null;
    const v = this.#view.getFloat64(this.#pos);
    this.#pos += 8;
    return v;
  }

  /** A timestamptz field as µs since the Unix epoch (exact below 2^53 µs); null for SQL NULL. */
  timestampUs(): number | null {
    if (this.#length(8) === -1) return null;
    // Two 32-bit halves: exact for every safe integer without BigInt.
    const v = this.#view.getInt32(this.#pos) * 4294967296 + this.#view.getUint32(this.#pos + 4);
    this.#pos += 8;
    return v + PG_EPOCH_US;
  }
}

/** The bytes were not the binary COPY format this reader expects (a bug in the query that produced them). */
export class CopyFormatError extends Error {
  override name = 'CopyFormatError';
}

/**
 * Splits a binary COPY stream into rows as chunks arrive; a row cut between chunks waits for the rest.
 * Holds at most one partial row between chunks, so memory does not grow with the result.
 */
export class BinaryCopyParser {
  readonly #row = new CopyRow();
  readonly #onRow: (row: CopyRow) => void;
  #pending: Buffer | undefined;
  #headerRead = false;
  #ended = false;
  rows = 0;

  constructor(onRow: (row: CopyRow) => void) {
    this.#onRow = onRow;
  }

  push(chunk: Buffer): void {
    const buf = this.#pending ? Buffer.concat([this.#pending, chunk]) : chunk;
    let pos = 0;
    if (!this.#headerRead) {
      if (buf.length < SIGNATURE.length + 8) {
        this.#pending = buf;
        return;
      }
      if (!buf.subarray(0, SIGNATURE.length).equals(SIGNATURE)) throw new CopyFormatError('no binary COPY signature');
      const extension = buf.readInt32BE(SIGNATURE.length + 4);
      if (buf.length < SIGNATURE.length + 8 + extension) {
        this.#pending = buf;
        return;
      }
      pos = SIGNATURE.length + 8 + extension;
      this.#headerRead = true;
    }
    const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    while (pos + 2 <= buf.length) {
      const fields = view.getInt16(pos);
      if (fields === -1) {
        this.#ended = true;
        pos += 2;
        break;
      }
      // Is the whole row here? Walk its field lengths before handing it over.
      let end = pos + 2;
      let complete = true;
      for (let f = 0; f < fields; f++) {
        if (end + 4 > buf.length) {
          complete = false;
          break;
        }
        const length = view.getInt32(end);
        end += 4 + (length > 0 ? length : 0);
        if (end > buf.length) {
          complete = false;
          break;
        }
      }
      if (!complete) break;
      this.#row.at(view, pos + 2);
      this.#onRow(this.#row);
      this.rows++;
      pos = end;
    }
    this.#pending = pos < buf.length ? buf.subarray(pos) : undefined;
  }

  /** Throws unless the stream ended with the format's trailer and nothing after it. */
  finish(): void {
    if (!this.#ended || this.#pending !== undefined) throw new CopyFormatError('the binary COPY stream ended early');
  }
}

/**
 * Runs `COPY (query) TO STDOUT (FORMAT binary)` on a connection of `pool`, handing each row to `onRow` as
 * it arrives; resolves with the number of rows. An error in the statement rejects and the connection
 * goes back to the pool (the session is still usable); a session the server ended, a failed socket or
 * bytes the reader could not walk reject and the connection is closed.
 */
export async function copyRowsOut(pool: pg.Pool, query: string, onRow: (row: CopyRow) => void): Promise<number> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    const parser = new BinaryCopyParser(onRow);
    await new Promise<void>((resolve, reject) => {
      const stream = client.query(copyTo(`copy (${query}) to stdout (format binary)`));
      stream.on('data', (chunk: Buffer) => {
        try {
          parser.push(chunk);
        } catch (error) {
          // The connection is mid-COPY: it cannot serve another statement, so it is not reused.
          broken = error as Error;
          stream.destroy(broken);
        }
      });
      stream.on('error', reject);
      stream.on('end', resolve);
    }).catch((error: unknown) => {
      // A statement error (a SQLSTATE the server answered with) leaves the session usable. A session the
      // server ended, or a socket that failed, must not go back to the pool for the next query to find.
      if (isDatabaseUnavailable(error) || typeof (error as { code?: unknown }).code !== 'string') broken ??= error as Error;
      throw error;
    });
    parser.finish();
    return parser.rows;
  } finally {
    client.release(broken);
  }
}

/**
 * The text of a statement built with Kysely's `sql` for `copyRowsOut`. COPY takes no bind parameters, so
 * every value must have been inlined (`sql.lit` for numbers and strings, `sql.ref` and `sql.table` for
 * names, which Kysely quotes and escapes); a statement that still binds one is refused here, not sent.
 */
export function copyStatementText(statement: RawBuilder<unknown>, db: Executor): string {
  const compiled = statement.compile(db);
  if (compiled.parameters.length > 0) throw new Error(`a COPY statement cannot bind parameters (${compiled.parameters.length} here): inline its values with sql.lit`);
  return compiled.sql;
}
