// node cloud/bench/write-methods.ts — which bulk write does one batch (1,000 rows × 8 doubles) fastest?
// Compares unnest of binary arrays, unnest of text arrays, a multi-row VALUES insert, COPY FROM STDIN
// (driven through node-postgres' own protocol handling, no pg-copy-streams) straight into the table,
// and COPY into a staging table followed by an upsert — each both as plain insert and as upsert where
// it applies. One connection, BENCH_SECONDS (5) per method, fresh table each; prints rows/s and the
// CPU Postgres and this process spend per batch (robust against other load on the machine).
import pg from 'pg';
import { arrayLiteral, binaryArrays, float8Text, numberArrayLiteral } from '../src/telemetry/sql/sql-arrays.ts';
import { createTestDatabase } from '../src/testing/test-database.ts';
import { isoMicros, ownCpuMs, postgresCpuMs } from './bench-env.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CHANNELS = 8;
const ROWS = 1000;
const COLUMNS = Array.from({ length: CHANNELS }, (_, c) => `ch_${c}`);
let nextUs = Date.UTC(2026, 0, 1) * 1000;

function batch() {
  const times = new Float64Array(ROWS);
  const values = COLUMNS.map(() => new Float64Array(ROWS));
  for (let r = 0; r < ROWS; r++) {
    times[r] = nextUs;
    nextUs += 50;
    for (let c = 0; c < CHANNELS; c++) values[c]![r] = Math.sin(nextUs / 1e5 + c) * 100 + r / 7;
  }
  return { times, values };
}
type Batch = ReturnType<typeof batch>;

/** COPY … FROM STDIN as a node-postgres "submittable": the driver hands us the connection on CopyInResponse. */
class CopyIn {
  text: string;
  data: Buffer;
  callback: ((error: Error | null) => void) | undefined;
  #error: Error | null = null;
  constructor(text: string, data: Buffer) {
    this.text = text;
    this.data = data;
  }
  submit(connection: { query(text: string): void }) {
    connection.query(this.text);
  }
  handleCopyInResponse(connection: { sendCopyFromChunk(b: Buffer): void; endCopyFrom(): void }) {
    connection.sendCopyFromChunk(this.data);
    connection.endCopyFrom();
  }
  handleError(error: Error) {
    this.#error = error;
  }
  handleReadyForQuery() {
    this.callback?.(this.#error);
  }
  handleCommandComplete() {}
  handleRowDescription() {}
  handleDataRow() {}
  handleEmptyQuery() {}
}

function copy(client: pg.ClientBase, text: string, data: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const submittable = new CopyIn(text, data);
    submittable.callback = (error) => (error ? reject(error) : resolve());
    client.query(submittable as never);
  });
}

function copyText(b: Batch): Buffer {
  let out = '';
  for (let r = 0; r < ROWS; r++) {
    out += isoMicros(b.times[r]!);
    for (let c = 0; c < CHANNELS; c++) out += `\t${float8Text(b.values[c]![r]!)}`;
    out += '\n';
  }
  return Buffer.from(out);
}

/** COPY's binary format: signature, flags, header extension, then per row a field count and length-prefixed fields. */
const PG_EPOCH_US = Date.UTC(2000, 0, 1) * 1000;
function copyBinary(b: Batch): Buffer {
  const rowBytes = 2 + (4 + 8) * (CHANNELS + 1);
  const buf = Buffer.alloc(19 + ROWS * rowBytes + 2);
  buf.write('PGCOPY\n\xff\r\n\0', 0, 'latin1');
  let pos = 19;
  for (let r = 0; r < ROWS; r++) {
    buf.writeInt16BE(CHANNELS + 1, pos);
    buf.writeInt32BE(8, pos + 2);
    buf.writeBigInt64BE(BigInt(b.times[r]! - PG_EPOCH_US), pos + 6);
    pos += 14;
    for (let c = 0; c < CHANNELS; c++) {
      buf.writeInt32BE(8, pos);
      buf.writeDoubleBE(b.values[c]![r]!, pos + 4);
      pos += 12;
    }
  }
  buf.writeInt16BE(-1, pos);
  return buf;
}

const upsert = (t: string) => `on conflict (time) do update set ${COLUMNS.map((c) => `${c} = coalesce(excluded.${c}, ${t}.${c})`).join(', ')}`;
const unnestSelect = `select timestamptz 'epoch' + u.t * interval '1 microsecond', ${COLUMNS.map((_, c) => `u.c${c}`).join(', ')}
  from unnest($1::int8[], ${COLUMNS.map((_, c) => `$${c + 2}::float8[]`).join(', ')}) as u(t, ${COLUMNS.map((_, c) => `c${c}`).join(', ')})`;

const METHODS: Record<string, (client: pg.ClientBase, table: string, b: Batch) => Promise<unknown>> = {
  'unnest, binary arrays, insert': (c, t, b) => c.query(`insert into ${t} (time, ${COLUMNS}) ${unnestSelect}`, [binaryArrays.int8(b.times), ...b.values.map((v) => binaryArrays.float8(v))]),
  'unnest, binary arrays, upsert': (c, t, b) => c.query(`insert into ${t} as t (time, ${COLUMNS}) ${unnestSelect} ${upsert('t')}`, [binaryArrays.int8(b.times), ...b.values.map((v) => binaryArrays.float8(v))]),
  'unnest, text arrays, insert': (c, t, b) =>
    c.query(`insert into ${t} (time, ${COLUMNS}) ${unnestSelect}`, [numberArrayLiteral(b.times), ...b.values.map((v) => arrayLiteral([...v].map(float8Text)))]),
  'multi-row VALUES, insert': (c, t, b) => {
    const params: unknown[] = [];
    const rows: string[] = [];
    for (let r = 0; r < ROWS; r++) {
      const p = [isoMicros(b.times[r]!), ...b.values.map((v) => v[r])];
      rows.push(`(${p.map((_, i) => `$${params.length + i + 1}`).join(',')})`);
      params.push(...p);
    }
    return c.query(`insert into ${t} (time, ${COLUMNS}) values ${rows.join(',')}`, params);
  },
  'COPY FROM STDIN text, straight in': (c, t, b) => copy(c, `copy ${t} (time, ${COLUMNS}) from stdin`, copyText(b)),
  'COPY FROM STDIN binary, straight': (c, t, b) => copy(c, `copy ${t} (time, ${COLUMNS}) from stdin with (format binary)`, copyBinary(b)),
  'COPY binary to staging + upsert': async (c, t, b) => {
    await c.query('begin');
    await c.query(`create temp table if not exists staging (like ${t}) on commit delete rows`);
    await copy(c, `copy staging (time, ${COLUMNS}) from stdin with (format binary)`, copyBinary(b));
    await c.query(`insert into ${t} as t select * from staging ${upsert('t')}`);
    await c.query('commit');
  },
};

const database = await createTestDatabase();
const client = new pg.Client({ connectionString: database.url });
await client.connect();
try {
  console.log(`write methods — ${ROWS}-row batches × ${CHANNELS} double channels, one connection, ${SECONDS} s each`);
  for (const [name, write] of Object.entries(METHODS)) {
    const table = `t_${Object.keys(METHODS).indexOf(name)}`;
    await client.query(`create table ${table} (time timestamptz not null primary key, ${COLUMNS.map((c) => `${c} double precision`).join(', ')})`);
    const cpu0 = { postgres: postgresCpuMs(database.name), own: ownCpuMs() };
    const started = performance.now();
    let batches = 0;
    while (performance.now() - started < SECONDS * 1000) {
      await write(client, table, batch());
      batches++;
    }
    const seconds = (performance.now() - started) / 1000;
    const pgMs = (postgresCpuMs(database.name) - cpu0.postgres) / batches;
    const ownMs = (ownCpuMs() - cpu0.own) / batches;
    console.log(`${name.padEnd(34)} ${Math.round((batches * ROWS) / seconds).toLocaleString('en-US').padStart(9)} rows/s   CPU per batch: Postgres ${pgMs.toFixed(2)} ms, client ${ownMs.toFixed(2)} ms`);
  }
} finally {
  await client.end();
  await database.drop();
}
