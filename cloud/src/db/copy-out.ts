import type { RawBuilder } from 'kysely';
import type pg from 'pg';
import { endsSession } from './errors.ts';
import type { Executor } from './executor.ts';
import { PG_EPOCH_US } from './sql-text.ts';

/**
 * Rows out of PostgreSQL in its binary COPY format, read as they stream in.
 *
 * node-postgres reads every result field as text: a float8 is formatted by the server and parsed here,
 * and a bytea doubles in size as hex. `COPY (query) TO STDOUT (FORMAT binary)` sends each field as its
 * binary send form instead (a float8 or an int8 is 8 bytes). The rows are read off the connection's
 * socket as they arrive and walked where they lie, without building a row object or a Buffer per row.
 *
 * COPY takes no bind parameters, so the query is complete text: built with Kysely's `sql`, every value
 * in it inlined by Kysely (`sql.lit`, `sql.ref`, `sql.table`) and compiled by `copyStatementText`.
 */

/** The 11-byte signature of PostgreSQL's binary COPY format, then a flags word and a header extension length. */
const SIGNATURE = Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1');

/**
 * One row of a binary COPY, read field by field in order. Valid only inside the `onRow` call it is
 * handed to: the same reader moves on to the next row.
 */
export class CopyRow {
  // A DataView rather than Buffer's read methods: V8 inlines its getters (a 40,000-row read spent a
  // third of its parsing time in Buffer's bounds-checked readers).
  #view: DataView = new DataView(new ArrayBuffer(0));
  #pos = 0;
  #end = 0;

  /** @internal The row's fields lie in view[pos, end). */
  at(view: DataView, pos: number, end: number): void {
    this.#view = view;
    this.#pos = pos;
    this.#end = end;
  }

  /** The next field's length (-1 for SQL NULL), checked against `size` when the type has one. */
  #length(size?: number): number {
    if (this.#pos + 4 > this.#end) throw new CopyFormatError('a field read past the end of its row');
    const length = this.#view.getInt32(this.#pos);
    this.#pos += 4;
    if (length === -1) return length;
    if (size === undefined ? length < 0 : length !== size) {
      throw new CopyFormatError(`a field of ${length} bytes${size === undefined ? '' : ` where ${size} were expected`}`);
    }
    if (this.#pos + length > this.#end) throw new CopyFormatError('a field read past the end of its row');
    return length;
  }

  /** A float8 field; null for SQL NULL. */
  float8(): number | null {
    if (this.#length(8) === -1) return null;
    const v = this.#view.getFloat64(this.#pos);
    this.#pos += 8;
    return v;
  }

  /** An int4 field; null for SQL NULL. */
  int4(): number | null {
    if (this.#length(4) === -1) return null;
    const v = this.#view.getInt32(this.#pos);
    this.#pos += 4;
    return v;
  }

  /**
   * An int8 field as a number, exact within ±2^53 (µs times until the year 2255); null for SQL NULL.
   * Sent as it is stored, an int8 costs the database no conversion (in psql, eight channels' rollup rows
   * with their times cast to float8 took 38 ms to send, as stored 33 ms).
   */
  int8(): number | null {
    if (this.#length(8) === -1) return null;
    // Two 32-bit halves: exact for every safe integer without BigInt.
    const v = this.#view.getInt32(this.#pos) * 4294967296 + this.#view.getUint32(this.#pos + 4);
    this.#pos += 8;
    return v;
  }

  /**
   * A bytea field, or null for SQL NULL, as a view of the bytes as received: `view` holds them at
   * [offset, offset + length). Valid only until `onRow` returns; the view is the socket's chunk.
   */
  bytea(): { view: DataView; offset: number; length: number } | null {
    const length = this.#length();
    if (length === -1) return null;
    const field = { view: this.#view, offset: this.#pos, length };
    this.#pos += length;
    return field;
  }

  /** A timestamptz field as µs since the Unix epoch (exact below 2^53 µs), ±Infinity for 'infinity'; null for SQL NULL. */
  timestampUs(): number | null {
    const v = this.int8();
    if (v === null) return null;
    // PostgreSQL stores 'infinity' and '-infinity' as the int8 extremes, which no number holds exactly.
    if (v >= 2 ** 63) return Infinity;
    if (v <= -(2 ** 63)) return -Infinity;
    return v + PG_EPOCH_US;
  }
}

/** The bytes were not the binary COPY format this reader expects (a bug in the query that produced them). */
export class CopyFormatError extends Error {
  override name = 'CopyFormatError';
}

/** Message types the backend may send while a COPY streams out (protocol-flow.html#PROTOCOL-COPY). */
const COPY_OUT_RESPONSE = 0x48; // 'H'
const COPY_DATA = 0x64; // 'd'
const COPY_DONE = 0x63; // 'c'
const NOTICE = 0x4e; // 'N'
const PARAMETER_STATUS = 0x53; // 'S'
const NOTIFICATION = 0x41; // 'A'

/** Largest message this reader holds while it arrives in pieces: a row of a Query is ~100 bytes. */
const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

/**
 * Reads the backend's messages of one `COPY … TO STDOUT (FORMAT binary)` straight from the socket's
 * chunks, and hands each row to `onRow` where it lies in the chunk: no Buffer, no copy, no stream per
 * row. PostgreSQL sends one CopyData message per row (the first also carries the file header, the
 * last is the trailer). A message cut between chunks waits, alone, for the rest.
 *
 * `push` returns undefined while the COPY goes on, and once it is over the bytes that follow it
 * (CommandComplete and ReadyForQuery, or an ErrorResponse and what follows), which node-postgres
 * must read.
 */
export class CopyOutReader {
  readonly #row = new CopyRow();
  readonly #onRow: (row: CopyRow) => void;
  /** The pieces of a message cut between chunks, and their length so far. */
  #parts: Buffer[] = [];
  #partsLength = 0;
  #headerRead = false;
  #ended = false;
  /** Whether `onRow` threw or a row's bytes could not be read: later rows are skipped, the COPY is read to its end. */
  rowFailed = false;
  /** What was thrown then (anything, `undefined` included). */
  rowError: unknown;
  rows = 0;

  constructor(onRow: (row: CopyRow) => void) {
    this.#onRow = onRow;
  }

  push(chunk: Buffer): Buffer | undefined {
    let pos = 0;
    if (this.#partsLength > 0) {
      // Complete the message cut at the last chunk's end with as few of this chunk's bytes as it needs:
      // first its 5-byte head (type and length), then its body.
      if (this.#partsLength < 5) {
        pos = Math.min(5 - this.#partsLength, chunk.length);
        this.#hold(chunk.subarray(0, pos));
        if (this.#partsLength < 5) return undefined;
      }
      const head = Buffer.concat(this.#parts, 5);
      const total = 1 + head.readInt32BE(1);
      this.#check(head[0]!, total);
      const take = Math.min(total - this.#partsLength, chunk.length - pos);
      this.#hold(chunk.subarray(pos, pos + take));
      pos += take;
      if (this.#partsLength < total) return undefined;
      const message = Buffer.concat(this.#parts, total);
      this.#parts = [];
      this.#partsLength = 0;
      if (!this.#handle(message, new DataView(message.buffer, message.byteOffset, total), 0, total)) {
        return message[0] === COPY_DONE ? chunk.subarray(pos) : Buffer.concat([message, chunk.subarray(pos)]);
      }
    }
    const view = new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    while (pos + 5 <= chunk.length) {
      const code = chunk[pos]!;
      const total = 1 + view.getInt32(pos + 1);
      this.#check(code, total);
      if (pos + total > chunk.length) break;
      if (!this.#handle(chunk, view, pos, total)) return chunk.subarray(code === COPY_DONE ? pos + total : pos);
      pos += total;
    }
    if (pos < chunk.length) this.#hold(chunk.subarray(pos));
    return undefined;
  }

  /** Throws unless the stream ended with the format's trailer. */
  finish(): void {
    if (!this.#ended) throw new CopyFormatError('the binary COPY stream ended early');
  }

  #hold(piece: Buffer): void {
    // A copy, so a held piece does not keep the whole chunk it came in alive.
    this.#parts.push(Buffer.from(piece));
    this.#partsLength += piece.length;
  }

  #check(code: number, total: number): void {
    if (total < 5 || total > MAX_MESSAGE_BYTES) throw new CopyFormatError(`a message '${String.fromCharCode(code)}' of ${total - 1} bytes`);
  }

  /** One complete message at `pos`; false when the COPY is over (CopyDone, or anything node-postgres must read). */
  #handle(bytes: Buffer, view: DataView, pos: number, total: number): boolean {
    switch (bytes[pos]) {
      case COPY_DATA:
        this.#data(bytes, view, pos + 5, pos + total);
        return true;
      case COPY_OUT_RESPONSE:
      case NOTICE:
      case PARAMETER_STATUS:
      case NOTIFICATION:
        return true;
      default:
        return false;
    }
  }

  #data(bytes: Buffer, view: DataView, start: number, end: number): void {
    if (this.rowFailed) return;
    try {
      let pos = start;
      if (!this.#headerRead) {
        if (end - pos < SIGNATURE.length + 8 || !bytes.subarray(pos, pos + SIGNATURE.length).equals(SIGNATURE)) throw new CopyFormatError('no binary COPY signature');
        pos += SIGNATURE.length + 8 + view.getInt32(pos + SIGNATURE.length + 4);
        this.#headerRead = true;
        if (pos === end) return;
      }
      if (this.#ended) throw new CopyFormatError('bytes after the binary COPY trailer');
      const fields = view.getInt16(pos);
      if (fields === -1) {
        this.#ended = true;
        return;
      }
      this.#row.at(view, pos + 2, end);
      this.#onRow(this.#row);
      this.rows++;
    } catch (error) {
      this.rowFailed = true;
      this.rowError = error;
    }
  }
}

/** The connection's socket, as node-postgres holds it (a net.Socket, or a TLS socket over one). */
type Socket = NodeJS.EventEmitter & { destroy(error?: Error): void };

/**
 * One COPY as a node-postgres "submittable" (the driver's documented hook for custom queries): while the
 * rows stream, this reads the connection's socket itself (`CopyOutReader`); once the COPY is over it
 * hands the socket and the bytes after the COPY back to the driver, which reads CommandComplete and
 * ReadyForQuery (or the error) as for any query and calls the handlers below. pg-copy-streams, used
 * before, sliced every row out of its chunk as a Buffer, queued them and joined them again: for a 2 s
 * window's 40,000 rows, ~4.5 ms of the ~15 ms of CPU the server spent on the Query (docs/PERFORMANCE.md).
 */
class CopyOut implements pg.Submittable {
  readonly reader: CopyOutReader;
  readonly done: Promise<number>;
  /** Set when the session cannot serve another statement: the pool must close it. */
  broken: Error | undefined;
  /** Set by node-postgres when the connection has a `query_timeout`: its timer is cleared through it. */
  callback: ((error: unknown, rows?: number) => void) | undefined;
  #resolve!: (rows: number) => void;
  #reject!: (error: unknown) => void;
  #settled = false;
  #stream: Socket | undefined;
  #driverListener: ((chunk: Buffer) => void) | undefined;

  readonly text: string;

  constructor(text: string, onRow: (row: CopyRow) => void) {
    this.text = text;
    this.reader = new CopyOutReader(onRow);
    this.done = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  /** Called by the driver when the connection is ours; an Error returned is handed back to `handleError`. */
  submit(connection: pg.Connection): Error | undefined {
    const stream = (connection as unknown as { stream: Socket }).stream;
    const listeners = stream.listeners('data') as Array<(chunk: Buffer) => void>;
    if (listeners.length !== 1) return new Error(`a COPY needs the connection's one data listener, found ${listeners.length}`);
    this.#stream = stream;
    this.#driverListener = listeners[0]!;
    stream.removeListener('data', this.#driverListener);
    stream.on('data', this.#onData);
    connection.query(this.text);
    return undefined;
  }

  readonly #onData = (chunk: Buffer): void => {
    let rest: Buffer | undefined;
    try {
      rest = this.reader.push(chunk);
    } catch (error) {
      // The messages themselves could not be split: nothing more on this socket can be trusted.
      this.broken = error as Error;
      this.#settle(error);
      this.#stream!.destroy(this.broken);
      return;
    }
    if (rest === undefined) return;
    this.#stream!.removeListener('data', this.#onData);
    this.#stream!.on('data', this.#driverListener!);
    if (rest.length > 0) this.#driverListener!(rest);
  };

  handleError(error: Error): void {
    if (endsSession(error)) this.broken ??= error;
    this.#settle(error);
  }

  handleReadyForQuery(): void {
    if (this.reader.rowFailed) return this.#settle(this.reader.rowError, 0, true);
    try {
      this.reader.finish();
    } catch (error) {
      return this.#settle(error);
    }
    this.#settle(undefined, this.reader.rows);
  }

  handleCommandComplete(): void {}
  handleEmptyQuery(): void {}
  handleRowDescription(): void {}
  handleDataRow(): void {}

  // Messages of another COPY or a suspended portal reach the driver only if the query text held a
  // second statement after this COPY: the session is then in no state this reader knows.
  handleCopyData(): void {
    this.#unexpected('a second COPY');
  }
  handleCopyInResponse(): void {
    this.#unexpected('a COPY FROM');
  }
  handlePortalSuspended(): void {
    this.#unexpected('a suspended portal');
  }

  #unexpected(what: string): void {
    this.broken ??= new CopyFormatError(`${what} after the COPY: the query text holds more than one statement`);
    this.#settle(this.broken);
    this.#stream?.destroy(this.broken);
  }

  #settle(error: unknown, rows = 0, failed = error !== undefined): void {
    if (this.#settled) return;
    this.#settled = true;
    this.callback?.(failed ? error : null, rows);
    if (failed) this.#reject(error);
    else this.#resolve(rows);
  }
}

/**
 * Runs `COPY (query) TO STDOUT (FORMAT binary)` on a connection of `pool`, handing each row to `onRow` as
 * it arrives; resolves with the number of rows. A statement error, an error thrown by `onRow` or a row
 * it read past its end rejects once the COPY is over, and the connection goes back to the pool (the
 * session is in step); a session the server ended, a failed socket or messages that could not be split
 * reject and the connection is closed.
 */
export async function copyRowsOut(pool: pg.Pool, query: string, onRow: (row: CopyRow) => void): Promise<number> {
  const client = await pool.connect();
  const copy = new CopyOut(`copy (${query}) to stdout (format binary)`, onRow);
  try {
    client.query(copy);
    return await copy.done;
  } finally {
    client.release(copy.broken);
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
