import type { CompiledQuery } from 'kysely';
import pg from 'pg';
import { endsSession } from './errors.ts';

/**
 * A statement written to the connection as one buffer, its binary parameters written straight into
 * the Bind message.
 *
 * Why: node-postgres builds a Bind message in a 256-byte buffer it grows by half again whenever a
 * parameter does not fit, and wants each binary parameter as a Buffer of its own. For an ingest batch
 * (~110 KB of arrays) that is ~0.5 MB of short-lived ArrayBuffers per statement, and V8 answers that much
 * external memory with major collections: 4 a second in bench:ingest, where the server's GC threads took
 * a third of its CPU (docs/PERFORMANCE.md). Here a statement costs one allocation of its own size.
 */

/**
 * A binary parameter that writes itself where it goes: into the Bind message here, or (through
 * `toPostgres`, which node-postgres calls for an object parameter) into a Buffer of its own anywhere else.
 */
export abstract class BinaryParam {
  abstract readonly byteLength: number;
  abstract writeTo(buf: Buffer, at: number): void;

  toPostgres(): Buffer {
    const buf = Buffer.allocUnsafe(this.byteLength);
    this.writeTo(buf, 0);
    return buf;
  }
}

/** A parameter as it goes on the wire: text (format 0) or binary bytes (format 1); null is SQL NULL. */
type WireParam = { binary: false; text: Buffer } | { binary: true; bytes: BinaryParam | Uint8Array } | null;

function wireParam(value: unknown): WireParam {
  if (value === null || value === undefined) return null;
  if (value instanceof BinaryParam) return { binary: true, bytes: value };
  if (value instanceof Uint8Array) return { binary: true, bytes: value };
  // As node-postgres sends them: a number or a boolean as its text.
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return { binary: false, text: Buffer.from(String(value), 'utf8') };
  throw new TypeError(`a direct statement takes text, numbers, booleans, bytes and BinaryParams; got ${Object.prototype.toString.call(value)}`);
}

function paramLength(param: WireParam): number {
  if (param === null) return 0;
  return param.binary ? param.bytes.byteLength : param.text.byteLength;
}

/** Writes `bytes` and returns the position after them. */
function writeBytes(buf: Buffer, at: number, bytes: Uint8Array): number {
  buf.set(bytes, at);
  return at + bytes.byteLength;
}

function writeCString(buf: Buffer, at: number, text: Buffer): number {
  at = writeBytes(buf, at, text);
  buf[at] = 0;
  return at + 1;
}

/** Parse (when the connection has not prepared `name` yet), Bind, Describe portal, Execute, Sync: one buffer. */
export function encodeStatement(name: string, text: string, values: readonly unknown[], parse: boolean): Buffer {
  const nameBytes = Buffer.from(name, 'utf8');
  const textBytes = parse ? Buffer.from(text, 'utf8') : undefined;
  const params = values.map(wireParam);
  if (params.length > 65535) throw new RangeError(`a statement takes at most 65,535 parameters, not ${params.length}`);
  const parseLength = textBytes ? 1 + 4 + nameBytes.byteLength + 1 + textBytes.byteLength + 1 + 2 : 0;
  let bindBody = 4 + 1 + nameBytes.byteLength + 1 + 2 + 2 * params.length + 2 + 2 + 2;
  for (const p of params) bindBody += 4 + paramLength(p);
  const size = parseLength + 1 + bindBody + /* describe */ 7 + /* execute */ 10 + /* sync */ 5;
  const buf = Buffer.allocUnsafe(size);
  let at = 0;
  if (textBytes) {
    buf[at++] = 0x50; // 'P'
    at = buf.writeInt32BE(parseLength - 1, at);
    at = writeCString(buf, at, nameBytes);
    at = writeCString(buf, at, textBytes);
    at = buf.writeInt16BE(0, at); // no parameter types: the server infers them (the text casts each one)
  }
  buf[at++] = 0x42; // 'B'
  at = buf.writeInt32BE(bindBody, at);
  buf[at++] = 0; // unnamed portal
  at = writeCString(buf, at, nameBytes);
  at = buf.writeInt16BE(params.length, at);
  for (const p of params) at = buf.writeInt16BE(p?.binary ? 1 : 0, at);
  at = buf.writeInt16BE(params.length, at);
  for (const p of params) {
    if (p === null) {
      at = buf.writeInt32BE(-1, at);
      continue;
    }
    at = buf.writeInt32BE(paramLength(p), at);
    if (!p.binary) at = writeBytes(buf, at, p.text);
    else if (p.bytes instanceof BinaryParam) {
      p.bytes.writeTo(buf, at);
      at += p.bytes.byteLength;
    } else at = writeBytes(buf, at, p.bytes);
  }
  at = buf.writeInt16BE(1, at); // one result format code for every column…
  at = buf.writeInt16BE(0, at); // …text, which node-postgres's type parsers read
  buf[at++] = 0x44; // 'D'
  at = buf.writeInt32BE(6, at);
  buf[at++] = 0x50; // portal
  buf[at++] = 0;
  buf[at++] = 0x45; // 'E'
  at = buf.writeInt32BE(9, at);
  buf[at++] = 0;
  at = buf.writeInt32BE(0, at); // all rows
  buf[at++] = 0x53; // 'S'
  at = buf.writeInt32BE(4, at);
  if (at !== size) throw new Error(`a statement encoded to ${at} bytes where ${size} were counted`);
  return buf;
}

/** What node-postgres's Result does at run time that its typings leave out: it parses rows with the type parsers. */
interface RowParser {
  rows: unknown[];
  addFields(fields: unknown[]): void;
  parseRow(fields: unknown[]): unknown;
  addRow(row: unknown): void;
  addCommandComplete(msg: unknown): void;
}
const RowParser = pg.Result as unknown as new () => RowParser;

type Connection = pg.Connection & {
  stream: { write(chunk: Buffer): boolean };
  parsedStatements: Record<string, string>;
};

/**
 * The statement as a node-postgres "submittable" (the driver's hook for custom queries, as for COPY in
 * copy-out.ts). `name` and `text` are the fields node-postgres reads to remember a statement it saw
 * parsed on the connection, as for its own named queries.
 */
class DirectQuery<R> implements pg.Submittable {
  readonly name: string;
  readonly text: string;
  readonly values: readonly unknown[];
  readonly done: Promise<R[]>;
  /** Set when the session cannot serve another statement: the pool must close it. */
  broken: Error | undefined;
  callback: ((error: unknown, rows?: R[]) => void) | undefined;
  #result = new RowParser();
  #resolve!: (rows: R[]) => void;
  #reject!: (error: unknown) => void;
  #settled = false;
  #failed: unknown;
  #sent = false;

  constructor(name: string, text: string, values: readonly unknown[]) {
    this.name = name;
    this.text = text;
    this.values = values;
    this.done = new Promise((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  submit(connection: pg.Connection): Error | undefined {
    const c = connection as Connection;
    const known = this.name ? c.parsedStatements[this.name] : undefined;
    if (known !== undefined && known !== this.text) return new Error(`prepared statement '${this.name}' was used for a different statement`);
    let message: Buffer;
    try {
      message = encodeStatement(this.name, this.text, this.values, known === undefined);
    } catch (error) {
      return error as Error;
    }
    c.stream.write(message);
    this.#sent = true;
    return undefined;
  }

  handleRowDescription(msg: { fields: unknown[] }): void {
    this.#result.addFields(msg.fields);
  }

  handleDataRow(msg: { fields: unknown[] }): void {
    if (this.#failed !== undefined) return;
    try {
      this.#result.addRow(this.#result.parseRow(msg.fields));
    } catch (error) {
      // Read on to ReadyForQuery: the session stays in step; the query fails then.
      this.#failed = error;
    }
  }

  handleCommandComplete(msg: unknown): void {
    this.#result.addCommandComplete(msg);
  }

  handleError(error: Error): void {
    // A statement that could not be encoded was never sent: its session is as it was.
    if (this.#sent && endsSession(error)) this.broken ??= error;
    this.#settle(error);
  }

  handleReadyForQuery(): void {
    if (this.#failed !== undefined) return this.#settle(this.#failed);
    this.#settle(undefined, this.#result.rows as R[]);
  }

  handleEmptyQuery(): void {}

  handlePortalSuspended(): void {
    this.#unexpected('a suspended portal');
  }
  handleCopyInResponse(): void {
    this.#unexpected('a COPY FROM');
  }
  handleCopyData(): void {
    this.#unexpected('a COPY');
  }

  #unexpected(what: string): void {
    this.broken ??= new Error(`${what} in answer to a direct statement`);
    this.#settle(this.broken);
  }

  #settle(error: unknown, rows: R[] = []): void {
    if (this.#settled) return;
    this.#settled = true;
    this.callback?.(error ?? null, rows);
    if (error !== undefined) this.#reject(error);
    else this.#resolve(rows);
  }
}

/**
 * Run `query` on a connection of `pool` as one write (see above); `name` prepares it once per
 * connection ('' runs it unnamed). Rows come back as node-postgres parses them.
 */
export async function runDirect<R>(pool: pg.Pool, name: string, query: CompiledQuery<R>): Promise<R[]> {
  const client = await pool.connect();
  const direct = new DirectQuery<R>(name, query.sql, query.parameters);
  try {
    client.query(direct);
    return await direct.done;
  } finally {
    client.release(direct.broken);
  }
}
