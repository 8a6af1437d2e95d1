import { CompiledQuery, sql, type RawBuilder } from 'kysely';
import type pg from 'pg';
import type { Executor } from '../../db/executor.ts';
import { POOL_CONNECTION_LIFETIME_S, type Db } from '../../db/connect.ts';
import { runHot } from '../../db/prepared.ts';
import { ServiceError } from '../../platform/errors.ts';
import { arrayLiteral, quotedText, type ArrayEncoder } from '../sql/sql-arrays.ts';
import { BootSessions, type BootSession, type FrameClock } from './boot-sessions.ts';
import { quoteIdent } from '../../db/sql-text.ts';
import { binaryRowArray, textColumn } from './column-arrays.ts';
import {
  CLOCK_COLUMNS,
  createSharedTable,
  ensureMessageTables,
  isLogTable,
  loadMessageTables,
  SHARED_FRAMES,
  SHARED_TABLE_KEY,
  sharedSlots,
  SOURCE_CODE,
  SQL_TYPE,
  type MessageTable,
  type SharedTable,
} from './message-tables.ts';
import type { MessageGroup, NarrowBatch } from './narrow-batch.ts';
import { PreparedShapes } from '../../db/prepared-shapes.ts';
import { loadBootSessions } from './session-store.ts';
import { timestamptzArray } from '../sql/sql-timestamps.ts';

export interface NarrowTarget {
  datasetId: string;
  /** How numeric arrays travel to this database (binary with node-postgres, text with PGlite). */
  arrays: ArrayEncoder;
  /** The pg pool with node-postgres: a stream's steady-state statement runs prepared on it (db/prepared.ts). */
  pool?: pg.Pool;
  /** TimescaleDB in use: new message tables become compressed hypertables (narrow-timescale.ts). */
  timescale?: boolean;
}

/** A writer's copy of the dataset's boot sessions and message tables, valid while the dataset's version is `version`. */
export interface SessionCache {
  version: number;
  /** The dataset's highest frame_seq and bound system id at `version`. */
  maxFrameSeq: number;
  sysid: number;
  sessions: BootSession[];
  tables: Map<number, MessageTable>;
  /** The dataset's shared table (message-tables.ts SHARED_FRAMES), if it has one. */
  shared?: SharedTable;
}

export interface NarrowWriteResult {
  /** Frames newly stored. */
  written: number;
  /** Frames whose frame_seq the dataset already held (or that appeared twice in the batch). */
  duplicates: number;
  /** Rows inserted: one per frame newly stored. */
  rows: number;
  /** The sessions after the write, for the next batch of the same writer. */
  cache: SessionCache;
  /** The dataset's highest frame_seq before the write: frames above it were newly stored (limits evaluate those). */
  priorMaxFrameSeq: number;
}

/**
 * Write one batch to the dataset's message tables (docs/decisions/0006-narrow-mavlink.md). The steady
 * state of a stream is one guarded statement (prepareFastWrite, runFastWrite: the sink tries it first);
 * when that cannot be prepared or is refused, this one transaction:
 *  1. upsert narrow_datasets: binds the dataset to the batch's system id on its first write, checks it
 *     on every later one, row-locks the dataset so its writers take turns, and tells the highest
 *     frame_seq stored;
 *  2. message tables and boot sessions: reuse the cached ones when the dataset's version says nobody
 *     else wrote since, else reload; create the tables of message ids seen for the first time and list
 *     new signals (message-tables.ts); assign every frame (in frame_seq order) to a session;
 *  3. one statement: one row per frame into its message's table (`unnest` arrays, one insert per
 *     message id; a batch reaching at or below the highest stored frame_seq inserts with
 *     `on conflict do nothing`, so a redelivered frame collapses onto the row it wrote the first time),
 *     the changed sessions, and the version and highest frame_seq.
 */
export async function writeInTransaction(db: Db, target: NarrowTarget, batch: NarrowBatch, cache: SessionCache | undefined): Promise<NarrowWriteResult> {
  const frames = batch.frames;
  if (frames === 0) {
    const empty = cache ?? { version: -1, maxFrameSeq: 0, sysid: -1, sessions: [], tables: new Map() };
    return { written: 0, duplicates: 0, rows: 0, cache: empty, priorMaxFrameSeq: empty.maxFrameSeq };
  }
  const order = frameOrder(batch);
  const present = presentSignals(batch);
  return db.transaction().execute(async (tx) => {
    const bound = await sql<{ sysid: number; version: number; max_frame_seq: number; shared_open: boolean }>`
      insert into narrow_datasets as d (dataset_id, sysid) values (${target.datasetId}::uuid, ${batch.sysid!}::int4)
      on conflict (dataset_id) do update set version = d.version
      returning d.sysid, d.version::float8 as version, d.max_frame_seq::float8 as max_frame_seq, d.shared_open`.execute(tx);
    const { sysid, version, max_frame_seq: maxFrameSeq, shared_open: sharedOpen } = bound.rows[0]!;
    if (sysid !== batch.sysid) {
      throw new ServiceError(
        'invalid_request',
        `dataset ${target.datasetId} holds MAVLink system id ${sysid}; frames of system id ${batch.sysid} belong in a dataset of their own (mavlink-raw-v1 rule 7)`,
      );
    }
    const current = cache && cache.version === version;
    const known = current ? cache.sessions : await loadBootSessions(tx, target.datasetId);
    // A copy: tables made here exist only if the transaction commits, and the cache must not list them otherwise.
    const tables = current ? copyTables(cache.tables) : await loadMessageTables(tx, target.datasetId);
    const last = batch.frameSeq[order[frames - 1]!]!;
    let shared = current ? cache.shared : await loadSharedTable(tx, target.datasetId, sharedOpen);
    if (!shared && tables.size === 0 && !target.timescale && last < SHARED_FRAMES && [...batch.groups.keys()].some((m) => !isLogTable(m))) {
      shared = await createSharedTable(tx, target.datasetId);
      await sql`update narrow_datasets set shared_open = true where dataset_id = ${target.datasetId}::uuid`.execute(tx);
    }
    if (shared?.open && last >= SHARED_FRAMES) shared = await drainSharedTable(tx, target.datasetId, shared, tables);
    // A table's columns are its group's (the dialect's for MAVLink, the log's for an imported log).
    await ensureMessageTables(tx, target.datasetId, tables, present, target.timescale ?? false, (msgid) => batch.groups.get(msgid)!.layout, shared);
    const { sessions, sessionOf } = assignSessions(batch, order, known);
    // A reboot whose confirmation came in this batch but whose first frames were stored by an earlier one.
    for (const r of sessions.relabels()) {
      for (const t of [...tables.values(), ...(shared?.open ? [{ table: shared.table }] : [])]) {
        await sql`update ${sql.table(t.table)} set boot_session = ${r.to}::int4
          where boot_session = ${r.from}::int4 and frame_seq >= ${r.fromFrameSeq}::int8 and frame_seq <= ${maxFrameSeq}::int8`.execute(tx);
      }
    }
    // Unnamed: this path is the exception (a new table or signal, a refused guard), and it must run on the transaction's connection.
    const { statement } = rowsStatement(tx, target, batch, order, tables, sessions, sessionOf, maxFrameSeq, null, shared);
    const result = await tx.executeQuery(statement);
    const written = result.rows[0]!.frames;
    return {
      written,
      duplicates: frames - written,
      rows: written,
      cache: { version: version + 1, maxFrameSeq: Math.max(maxFrameSeq, last), sysid, sessions: sessions.all(), tables, ...(shared && { shared }) },
      priorMaxFrameSeq: maxFrameSeq,
    };
  });
}

/**
 * The steady state of a stream, prepared without touching the database: when the writer's cache knows
 * every message table and signal of the batch and the batch confirms no reboot that re-labels stored
 * rows, the rows, the sessions and the dataset's version go in one statement guarded by the cached
 * version. `after` is the cache the write leaves if it commits, so the next batch's write can be
 * prepared while this one runs (StreamSubmit decodes and prepares one message while the one before it
 * is written); if anything else happened in between, that next write's guard fails and it is redone.
 * Undefined = the batch needs the transactional path.
 */
export interface FastWrite {
  /** The cache this write was prepared from. */
  basis: SessionCache;
  /** The cache it leaves when it commits. */
  after: SessionCache;
  frames: number;
  statement: CompiledQuery<{ frames: number; ok: boolean }>;
  /** The statement's name when it runs prepared (node-postgres): one per statement text. */
  name: string | undefined;
}

export function prepareFastWrite(db: Db, target: NarrowTarget, batch: NarrowBatch, cache: SessionCache): FastWrite | undefined {
  const frames = batch.frames;
  if (frames === 0 || batch.sysid !== cache.sysid) return undefined;
  const present = presentSignals(batch);
  for (const [msgid, signals] of present) {
    const table = cache.tables.get(msgid);
    if (!table) return undefined;
    for (const s of signals) if (!table.signals.has(s)) return undefined;
  }
  const order = frameOrder(batch);
  const last = batch.frameSeq[order[frames - 1]!]!;
  // The frame that ends a short flight's shared table moves its rows: the transactional path does that.
  if (cache.shared?.open && last >= SHARED_FRAMES) return undefined;
  const { sessions, sessionOf } = assignSessions(batch, order, cache.sessions);
  if (sessions.relabels().length > 0) return undefined;
  const { statement, name } = rowsStatement(db, target, batch, order, cache.tables, sessions, sessionOf, cache.maxFrameSeq, cache.version, cache.shared);
  const after = {
    version: cache.version + 1,
    maxFrameSeq: Math.max(cache.maxFrameSeq, last),
    sysid: cache.sysid,
    sessions: sessions.all(),
    tables: cache.tables,
    ...(cache.shared && { shared: cache.shared }),
  };
  return { basis: cache, after, frames, statement, name };
}

/**
 * One statement, one round trip, no explicit transaction: the guard's update takes the dataset's row
 * lock as the transaction's upsert would; if another writer wrote since (the version moved), nothing
 * is written and undefined is returned (the caller takes the transactional path with fresh state).
 */
export async function runFastWrite(db: Db, target: NarrowTarget, write: FastWrite): Promise<NarrowWriteResult | undefined> {
  const rows = write.name ? await runHot({ db, pool: target.pool }, write.name, write.statement) : (await db.executeQuery(write.statement)).rows;
  const row = rows[0]!;
  if (!row.ok) return undefined;
  return { written: row.frames, duplicates: write.frames - row.frames, rows: row.frames, cache: write.after, priorMaxFrameSeq: write.basis.maxFrameSeq };
}

/** The dataset's shared table, if it has one; `open` as narrow_datasets says. */
async function loadSharedTable(db: Executor, datasetId: string, open: boolean): Promise<SharedTable | undefined> {
  const row = await sql<{ table_name: string }>`
    select table_name from narrow_message_tables where dataset_id = ${datasetId}::uuid and msgid = ${SHARED_TABLE_KEY}::int4`.execute(db);
  return row.rows[0] && { table: row.rows[0].table_name, open };
}

/**
 * The end of a short flight (message-tables.ts SHARED_FRAMES): every row of the shared table moves into
 * its message's table in frame_seq order, each of those tables gets its key (built once over its rows,
 * so its pages are full), and the shared table is emptied (TRUNCATE gives its pages back at once; it
 * waits for readers of it and holds new ones until the commit, when they read the moved rows in the
 * message tables). From then on the dataset's frames go to their message tables.
 */
async function drainSharedTable(tx: Executor, datasetId: string, shared: SharedTable, tables: ReadonlyMap<number, MessageTable>): Promise<SharedTable> {
  for (const t of tables.values()) {
    const slots = sharedSlots(t.msgid, t.columns);
    if (!slots) continue;
    const columns = t.columns.map((c) => quoteIdent(c.column));
    await sql.raw(`insert into ${quoteIdent(t.table)} (${CLOCK_COLUMNS}${columns.map((c) => `, ${c}`).join('')})
      select ${CLOCK_COLUMNS}${slots.map((c) => `, ${c}`).join('')} from ${quoteIdent(shared.table)} where msgid = ${t.msgid} order by frame_seq`).execute(tx);
    await sql.raw(`alter table ${quoteIdent(t.table)} add primary key (frame_seq)`).execute(tx);
  }
  await sql.raw(`truncate ${quoteIdent(shared.table)}`).execute(tx);
  await sql`update narrow_datasets set shared_open = false where dataset_id = ${datasetId}::uuid`.execute(tx);
  return { table: shared.table, open: false };
}

function copyTables(tables: ReadonlyMap<number, MessageTable>): Map<number, MessageTable> {
  return new Map([...tables].map(([msgid, t]) => [msgid, { ...t, signals: new Set(t.signals) }]));
}

/** Signals each message id of the batch carries a value of. */
function presentSignals(batch: NarrowBatch): Map<number, Set<string>> {
  const present = new Map<number, Set<string>>();
  for (const [msgid, group] of batch.groups) {
    const signals = new Set<string>();
    group.layout.columns.forEach((c, i) => group.present[i] && signals.add(c.signal));
    present.set(msgid, signals);
  }
  return present;
}

/** Every frame (in frame_seq order) assigned a boot session; labelled once the whole batch is fed (a reboot confirmed later in the batch moves earlier frames). */
function assignSessions(batch: NarrowBatch, order: Int32Array, known: readonly BootSession[]): { sessions: BootSessions; sessionOf: Int32Array } {
  const sessions = new BootSessions(known);
  // One object for every frame (assign keeps none of it): a fresh one per frame was a seventh of what ingest allocated.
  const clock: FrameClock = { frameSeq: 0, compid: 0, receivedUs: 0 };
  for (const f of order) {
    const boot = batch.bootUs[f]!;
    const gps = batch.gpsOffsetUs[f]!;
    clock.frameSeq = batch.frameSeq[f]!;
    clock.compid = batch.compid[f]!;
    clock.receivedUs = batch.receivedUs[f]!;
    clock.bootUs = Number.isFinite(boot) ? boot : undefined;
    clock.gpsOffsetUs = Number.isFinite(gps) ? gps : undefined;
    sessions.assign(clock);
  }
  const sessionOf = new Int32Array(batch.frames);
  for (let f = 0; f < batch.frames; f++) sessionOf[f] = sessions.sessionOf(batch.compid[f]!, batch.frameSeq[f]!);
  return { sessions, sessionOf };
}

/**
 * One statement: one insert per message id, the changed sessions, the dataset's version and highest
 * frame_seq; it answers the frames inserted, and `ok` false when `guardVersion` is given and the
 * dataset was no longer at that version (then every part is skipped).
 *
 * With node-postgres the statement's text depends only on its shape (the message tables in msgid order,
 * conflict handling, guard), which repeats batch after batch: the text compiled once per shape is kept
 * and only the parameters are built (kysely's tree and compile were a tenth of what a batch allocated).
 * The first compile of a shape checks that the parameters built directly are the ones kysely made.
 */
function rowsStatement(
  db: Executor,
  target: NarrowTarget,
  batch: NarrowBatch,
  order: Int32Array,
  tables: ReadonlyMap<number, MessageTable>,
  sessions: BootSessions,
  sessionOf: Int32Array,
  maxFrameSeq: number,
  guardVersion: number | null,
  shared: SharedTable | undefined,
): { statement: CompiledQuery<{ frames: number; ok: boolean }>; name: string | undefined } {
  const frames = batch.frames;
  const into = shared?.open ? shared.table : undefined;
  // The common case, a stream appending frames above everything the dataset holds, is a plain
  // insert: the dataset's row lock keeps its other writers out until commit. Only redelivery (or a
  // late frame below the highest stored) pays for `on conflict do nothing`.
  const first = batch.frameSeq[order[0]!]!;
  const last = batch.frameSeq[order[frames - 1]!]!;
  const onConflict = first <= maxFrameSeq || hasRepeats(batch, order);
  const changed = sessions.changed();
  if (!target.arrays.binary) {
    const slots = [...batch.groups.values()].sort((a, b) => a.layout.msgid - b.layout.msgid).map((group) => ({ table: tables.get(group.layout.msgid)!, group }));
    return { statement: rowsTree(target, batch, slots, changed, sessionOf, first, last, onConflict, frames, guardVersion, into).compile(db), name: undefined };
  }

  // With node-postgres every table of the dataset gets its insert, an empty array for a message type the
  // batch does not carry: the statement's shape is then the dataset's table set, not the batch's message
  // mix, so it repeats batch after batch and runs prepared (a rare message no longer makes a new shape).
  // An empty insert costs PostgreSQL ~15 µs; planning the statement again costs milliseconds.
  const everyTable = datasetTables(tables);
  const slots = everyTable.list.map((table) => ({ table, group: batch.groups.get(table.msgid) }));
  const shape = `${onConflict ? 'c' : 'p'}${guardVersion === null ? '' : 'g'}${into ? 's' : ''}${everyTable.key}`;
  const params: unknown[] = [last, target.datasetId];
  if (guardVersion !== null) params.push(guardVersion);
  if (into && onConflict) params.push(first, last);
  for (const { table, group } of slots) params.push(group ? binaryRows(table, batch, group, sessionOf) : EMPTY_ROWS);
  params.push(target.datasetId, ...sessionParams(changed));
  // Only when onConflict is off is the frame count a parameter (the conflict path counts what it inserted).
  if (!onConflict) params.push(frames);
  let known = STATEMENT_TEXT.get(shape);
  if (known === undefined) {
    const compiled = rowsTree(target, batch, slots, changed, sessionOf, first, last, onConflict, frames, guardVersion, into).compile(db);
    if (compiled.parameters.length !== params.length || compiled.parameters.some((p, i) => !sameParam(p, params[i]))) {
      throw new Error(`narrow statement parameters disagree with kysely's for shape ${shape}`);
    }
    if (STATEMENT_TEXT.size >= STATEMENT_TEXTS_KEPT) STATEMENT_TEXT.clear();
    known = compiled.sql;
    STATEMENT_TEXT.set(shape, known);
  }
  // Only the fast path runs prepared: the transactional one must run on its transaction's connection.
  const name = guardVersion === null ? undefined : PREPARED.use(shape, known);
  return { statement: CompiledQuery.raw(known, params) as CompiledQuery<{ frames: number; ok: boolean }>, name };
}

/** Statement texts by shape: a dataset has one per table set it has had (× conflict handling, guard). */
const STATEMENT_TEXT = new Map<string, string>();
const STATEMENT_TEXTS_KEPT = 1000;

/** Shapes named at once: ~2 per streaming vehicle, at most 1.85 MB of plan each per connection (prepared-shapes.ts). */
export const PREPARED_SHAPES_MAX = 16;
const PREPARED = new PreparedShapes({ prefix: 'sortie_narrow_', max: PREPARED_SHAPES_MAX, lifetimeMs: POOL_CONNECTION_LIFETIME_S * 1000 });

/** A table's rows when the batch has none: an empty array literal, sent as text. */
const EMPTY_ROWS = '{}';

/** The dataset's tables in msgid order, and their names as one key; kept per tables map (a cache's map lives for many batches). */
const TABLE_LISTS = new WeakMap<ReadonlyMap<number, MessageTable>, { list: MessageTable[]; key: string }>();
function datasetTables(tables: ReadonlyMap<number, MessageTable>): { list: MessageTable[]; key: string } {
  let known = TABLE_LISTS.get(tables);
  // A map gains tables only inside the transaction that makes them, before its statement; the size check keeps a list from going stale all the same.
  if (!known || known.list.length !== tables.size) {
    const list = [...tables.values()].sort((a, b) => a.msgid - b.msgid);
    known = { list, key: list.map((t) => t.table).join(',') };
    TABLE_LISTS.set(tables, known);
  }
  return known;
}

function sameParam(a: unknown, b: unknown): boolean {
  return Buffer.isBuffer(a) && Buffer.isBuffer(b) ? a.equals(b) : a === b;
}

/** The statement as kysely builds it (rowsStatement's parameters follow this order exactly). */
function rowsTree(
  target: NarrowTarget,
  batch: NarrowBatch,
  slots: ReadonlyArray<{ table: MessageTable; group: MessageGroup | undefined }>,
  changed: readonly BootSession[],
  sessionOf: Int32Array,
  first: number,
  last: number,
  onConflict: boolean,
  frames: number,
  guardVersion: number | null,
  shared: string | undefined,
): RawBuilder<{ frames: number; ok: boolean }> {
  const guard = guardVersion === null ? undefined : sql`exists (select 1 from v)`;
  // Without conflicts every frame is new, so only the conflict path counts what it inserted (a frame is one row of one table).
  const inserts = slots.map(({ table, group }, i) => {
    const name = sql.raw(`i${i}`);
    const slotsOf = shared === undefined ? undefined : sharedSlots(table.msgid, table.columns);
    const to = slotsOf && { table: shared!, slots: slotsOf, msgid: table.msgid };
    const insert = group
      ? insertGroup(target, table, batch, group, sessionOf, onConflict, guard, to)
      : to
        ? sharedInsert(to, table, sql`${EMPTY_ROWS}`, onConflict, guard)
        : sql`insert into ${sql.table(table.table)} select * from unnest(${EMPTY_ROWS}::${sql.table(table.table)}[]) ${guard ? sql`where ${guard}` : sql``} ${onConflict ? sql`on conflict do nothing` : sql``}`;
    return { name, cte: sql`${name} as (${insert} ${onConflict ? sql`returning 1` : sql``})` };
  });
  // The shared table has no key: a redelivered frame is recognised by the rows it holds in the batch's
  // frame_seq range (read once, through its BRIN), under the dataset's row lock like every write.
  const seen = shared !== undefined && onConflict
    ? sql`seen as materialized (select msgid, frame_seq from ${sql.table(shared)} where frame_seq between ${first}::int8 and ${last}::int8),`
    : sql``;
  const counted = onConflict ? sql.join(inserts.map((x) => sql`(select count(*) from ${x.name})`), sql` + `) : sql`${frames}`;
  return sql<{ frames: number; ok: boolean }>`
    with v as (update narrow_datasets set version = version + 1, max_frame_seq = greatest(max_frame_seq, ${last}::int8)
               where dataset_id = ${target.datasetId}::uuid ${guardVersion === null ? sql`` : sql`and version = ${guardVersion}::int8`} returning 1),
    ${seen}
    ${sql.join(inserts.map((x) => x.cte))},
    s as (${upsertSessions(target.datasetId, changed, guard)})
    select (${counted})::float8 as frames, exists (select 1 from v) as ok`;
}

function hasRepeats(batch: NarrowBatch, order: Int32Array): boolean {
  for (let i = 1; i < order.length; i++) if (batch.frameSeq[order[i]!] === batch.frameSeq[order[i - 1]!]) return true;
  return false;
}

/** Frame indexes in frame_seq order (a stream sends them in order, so usually no sort is needed). */
function frameOrder(batch: NarrowBatch): Int32Array {
  const n = batch.frames;
  const order = new Int32Array(n);
  let sorted = true;
  for (let i = 0; i < n; i++) {
    order[i] = i;
    if (i > 0 && batch.frameSeq[i]! < batch.frameSeq[i - 1]!) sorted = false;
  }
  if (!sorted) order.sort((a, b) => batch.frameSeq[a]! - batch.frameSeq[b]! || a - b);
  return order;
}

/** The clock columns of one message table's rows, each row taking its frame's values. */
export interface ClockColumns {
  seq: Float64Array;
  /** The row's time, µs: GPS time when the frame carries it, else its boot clock, else the receive time. */
  time: Float64Array;
  /** time_source as stored ("char": g, b, a). */
  source: string[];
  /** Boot clock µs; null when the frame carries none. */
  boot: Array<number | null>;
  session: Int32Array;
  received: Float64Array;
}

/**
 * The clock columns of `frames` (indexes into the batch). The writer and the MAVLink bench's
 * plain-insert baseline both build rows with this, so the baseline measures exactly the rows the
 * writer stores.
 */
export function clockColumns(batch: NarrowBatch, frames: readonly number[], sessionOf: ArrayLike<number>): ClockColumns {
  const n = frames.length;
  const seq = new Float64Array(n);
  const time = new Float64Array(n);
  const source: string[] = new Array(n);
  const boot: Array<number | null> = new Array(n);
  const session = new Int32Array(n);
  const received = new Float64Array(n);
  for (let r = 0; r < n; r++) {
    const f = frames[r]!;
    seq[r] = batch.frameSeq[f]!;
    received[r] = batch.receivedUs[f]!;
    session[r] = sessionOf[f]!;
    const b = batch.bootUs[f]!;
    const hasBoot = Number.isFinite(b);
    boot[r] = hasBoot ? b : null;
    const unix = batch.unixUs[f]!;
    if (Number.isFinite(unix)) {
      source[r] = SOURCE_CODE.gps;
      time[r] = unix;
    } else if (hasBoot) {
      source[r] = SOURCE_CODE.boot;
      time[r] = b;
    } else {
      source[r] = SOURCE_CODE.agent;
      time[r] = received[r]!;
    }
  }
  return { seq, time, source, boot, session, received };
}

/**
 * The insert of one message id's frames into its table. node-postgres: `unnest` of one binary array of
 * the table's row type. PGlite (text parameters): `unnest` of one array per column (`rows from`: a
 * message can have more columns than a function has arguments).
 */
export function insertGroup(
  target: NarrowTarget,
  into: Pick<MessageTable, 'table' | 'rowType'>,
  batch: NarrowBatch,
  group: MessageGroup,
  sessionOf: ArrayLike<number>,
  onConflict: boolean,
  guard?: RawBuilder<unknown>,
  shared?: SharedInto,
): RawBuilder<unknown> {
  const table = into.table;
  const tail = sql`${guard ? sql`where ${guard}` : sql``} ${onConflict ? sql`on conflict do nothing` : sql``}`;
  if (shared && target.arrays.binary) return sharedInsert(shared, { table, columns: group.layout.columns }, binaryRows(into, batch, group, sessionOf), onConflict, guard);
  if (target.arrays.binary) {
    // One array of the table's row type: PostgreSQL sets up one unnest per table instead of one per
    // column, which halved the statement's time (docs/PERFORMANCE.md).
    return sql`insert into ${sql.table(table)} select * from unnest(${binaryRows(into, batch, group, sessionOf)}::${sql.table(table)}[]) ${tail}`;
  }
  const { seq, time, source, boot, session, received } = clockColumns(batch, group.frames, sessionOf);
  const a = target.arrays;
  const times = timestamptzArray(time, target.arrays.binary, 'u.t');
  const receivedTimes = timestamptzArray(received, target.arrays.binary, 'u.rcv');
  const column = textColumn;
  const columns = group.layout.columns;
  const fieldParams = columns.map((c, i) => sql`${column(c.type, group.column(i))}::${sql.raw(SQL_TYPE[c.type])}[]`);
  const aliases = columns.map((_, i) => `c${i}`);
  const names = columns.map((c) => quoteIdent(c.column)).join(', ');
  if (shared) {
    const rows = sql`rows from (unnest(${a.int8(seq)}::int8[]), unnest(${times.param}), unnest(${receivedTimes.param}), unnest(${column('int8', boot)}::int8[]),
                    unnest(${a.int4(session)}::int4[]), unnest(${`{${source.join(',')}}`}::"char"[]), ${sql.join(fieldParams.map((p) => sql`unnest(${p})`))})
      with ordinality as ${sql.raw(`u(frame_seq, t, rcv, boot_us, boot_session, time_source, ${aliases.join(', ')}, ordinality)`)}`;
    return sharedInsertFrom(shared, rows, sql`${times.value}, ${receivedTimes.value}`, aliases, onConflict, guard);
  }
  return sql`
    insert into ${sql.table(table)} (frame_seq, time, received_at, boot_us, boot_session, time_source, ${sql.raw(names)})
    select u.seq, ${times.value}, ${receivedTimes.value}, u.boot, u.sess, u.src, ${sql.raw(aliases.map((x) => `u.${x}`).join(', '))}
    from rows from (unnest(${a.int8(seq)}::int8[]), unnest(${times.param}), unnest(${receivedTimes.param}), unnest(${column('int8', boot)}::int8[]),
                    unnest(${a.int4(session)}::int4[]), unnest(${`{${source.join(',')}}`}::"char"[]), ${sql.join(fieldParams.map((p) => sql`unnest(${p})`))})
      as ${sql.raw(`u(seq, t, rcv, boot, sess, src, ${aliases.join(', ')})`)}
    ${tail}`;
}

/** One message id's rows as one binary array of its table's row type. */
function binaryRows(into: Pick<MessageTable, 'rowType'>, batch: NarrowBatch, group: MessageGroup, sessionOf: ArrayLike<number>): Buffer {
  const clock = clockColumns(batch, group.frames, sessionOf);
  return binaryRowArray(into.rowType, group.layout.columns.map((c) => c.type), clock, group.values, group.carried);
}

/** The sessions upsert's eleven array parameters, in upsertSessions' order. */
function sessionParams(sessions: readonly BootSession[]): string[] {
  const col = <K extends keyof BootSession>(key: K) => int8List(sessions.map((s) => s[key] as number | null));
  const clocks = arrayLiteral(sessions.map((s) => (s.clock === null ? undefined : quotedText(JSON.stringify(s.clock)))));
  return [
    col('session'),
    col('compid'),
    col('firstFrameSeq'),
    col('lastFrameSeq'),
    col('lastBootUs'),
    col('gpsOffsetUs'),
    col('gpsOffsetFrameSeq'),
    col('agentOffsetUs'),
    col('firstReceivedUs'),
    col('lastReceivedUs'),
    clocks,
  ];
}

function int8List(values: ReadonlyArray<number | null>): string {
  return arrayLiteral(values.map((v) => (v === null ? undefined : String(v))));
}

function upsertSessions(datasetId: string, sessions: readonly BootSession[], guard?: RawBuilder<unknown>): RawBuilder<unknown> {
  const [session, compid, firstFrameSeq, lastFrameSeq, lastBootUs, gpsOffsetUs, gpsOffsetFrameSeq, agentOffsetUs, firstReceivedUs, lastReceivedUs, clocks] = sessionParams(sessions);
  return sql`
    insert into narrow_boot_sessions as b (dataset_id, boot_session, compid, first_frame_seq, last_frame_seq, last_boot_us,
      gps_offset_us, gps_offset_frame_seq, agent_offset_us, first_received_us, last_received_us, clock_state)
    select ${datasetId}::uuid, u.* from unnest(
      ${session}::int4[], ${compid}::int4[], ${firstFrameSeq}::int8[],
      ${lastFrameSeq}::int8[], ${lastBootUs}::int8[], ${gpsOffsetUs}::int8[],
      ${gpsOffsetFrameSeq}::int8[], ${agentOffsetUs}::int8[],
      ${firstReceivedUs}::int8[], ${lastReceivedUs}::int8[], ${clocks}::jsonb[]) as u
    ${guard ? sql`where ${guard}` : sql``}
    on conflict (dataset_id, boot_session) do update set
      first_frame_seq = excluded.first_frame_seq, clock_state = excluded.clock_state,
      last_frame_seq = excluded.last_frame_seq, last_boot_us = excluded.last_boot_us,
      gps_offset_us = excluded.gps_offset_us, gps_offset_frame_seq = excluded.gps_offset_frame_seq,
      agent_offset_us = excluded.agent_offset_us, first_received_us = excluded.first_received_us,
      last_received_us = excluded.last_received_us`;
}


/** Where a message's rows go while its dataset's shared table takes frames (message-tables.ts). */
interface SharedInto {
  table: string;
  /** The shared-table slot of each of the message's columns. */
  slots: readonly string[];
  msgid: number;
}

/** A message's rows (one binary array of its table's row type) into the shared table. */
function sharedInsert(to: SharedInto, rowsOf: Pick<MessageTable, 'table' | 'columns'>, rows: unknown, onConflict: boolean, guard: RawBuilder<unknown> | undefined): RawBuilder<unknown> {
  const from = sql`unnest(${rows}::${sql.table(rowsOf.table)}[]) with ordinality as u`;
  return sharedInsertFrom(to, from, sql`u.time, u.received_at`, rowsOf.columns.map((c) => quoteIdent(c.column)), onConflict, guard);
}

/**
 * The insert into the shared table from `from` (rows `u` with the clock columns, the message's columns
 * named `fields`, and their `ordinality`). With conflicts possible, a frame the table holds already
 * (`seen`, the statement's read of its frame_seq range) is dropped, and of a frame_seq the batch holds
 * twice the first is kept: what `on conflict do nothing` does on a keyed table.
 */
function sharedInsertFrom(
  to: SharedInto,
  from: RawBuilder<unknown>,
  times: RawBuilder<unknown>,
  fields: readonly string[],
  onConflict: boolean,
  guard: RawBuilder<unknown> | undefined,
): RawBuilder<unknown> {
  const conditions = [];
  if (guard) conditions.push(guard);
  if (onConflict) conditions.push(sql`not exists (select 1 from seen where seen.msgid = ${sql.raw(String(to.msgid))} and seen.frame_seq = u.frame_seq)`);
  const where = conditions.length > 0 ? sql`where ${sql.join(conditions, sql` and `)}` : sql``;
  const targets = to.slots.map((s) => `, ${s}`).join('');
  const values = fields.map((f) => `, u.${f}`).join('');
  return sql`insert into ${sql.table(to.table)} (${sql.raw(CLOCK_COLUMNS)}, msgid${sql.raw(targets)})
    select ${onConflict ? sql`distinct on (u.frame_seq)` : sql``} u.frame_seq, ${times}, u.boot_us, u.boot_session, u.time_source, ${sql.raw(String(to.msgid))}${sql.raw(values)}
    from ${from} ${where} ${onConflict ? sql`order by u.frame_seq, u.ordinality` : sql``}`;
}
