import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../../db/connect.ts';
import { ApiError } from '../../http/api-error.ts';
import { arrayLiteral, quotedBytea, quotedText, type ArrayEncoder } from '../sql/sql-arrays.ts';
import { BootSessions, type BootSession } from './boot-sessions.ts';
import type { NarrowBatch } from './narrow-batch.ts';
import { loadBootSessions } from './session-store.ts';
import { ensureSignalIds } from './signal-dictionary.ts';
import { timestamptzArray } from './sql-timestamps.ts';

export interface NarrowTarget {
  datasetId: string;
  /** How numeric arrays travel to this database (binary with node-postgres, text with PGlite). */
  arrays: ArrayEncoder;
  /** True with node-postgres (binary parameters), false with PGlite. */
  binary: boolean;
}

/** A writer's copy of the dataset's boot sessions, valid while the dataset's version is `version`. */
export interface SessionCache {
  version: number;
  sessions: BootSession[];
}

export interface NarrowWriteResult {
  /** Frames newly stored. */
  written: number;
  /** Frames whose frame_seq the dataset already held (or that appeared twice in the batch). */
  duplicates: number;
  /** Rows inserted. */
  rows: number;
  /** The sessions after the write, for the next batch of the same writer. */
  cache: SessionCache;
}

/** Codes of time_source in the statement: 1-based indexes into this array. */
const SOURCE_SQL = sql`(array['gps', 'boot', 'agent']::text[])`;
const GPS = 1;
const BOOT = 2;
const AGENT = 3;

/**
 * Write one batch to narrow_samples in one transaction (docs/decisions/0006-narrow-mavlink.md):
 *  1. upsert narrow_datasets: binds the dataset to the batch's system id on its first write, checks it
 *     on every later one, row-locks the dataset so its writers take turns, and tells the highest
 *     frame_seq stored;
 *  2. boot sessions: reuse the cached ones when the dataset's version says nobody else wrote since,
 *     else reload; assign every frame (in frame_seq order) to a session;
 *  3. one statement: the rows (`unnest` arrays; a batch reaching at or below the highest stored
 *     frame_seq inserts with `on conflict do nothing`, so a redelivered frame collapses onto the rows
 *     it wrote the first time), the changed sessions, and the version and highest frame_seq.
 */
export async function writeNarrowBatch(db: Db, target: NarrowTarget, batch: NarrowBatch, cache: SessionCache | undefined): Promise<NarrowWriteResult> {
  const frames = batch.frames;
  if (frames === 0) return { written: 0, duplicates: 0, rows: 0, cache: cache ?? { version: -1, sessions: [] } };
  const ids = await ensureSignalIds(db, new Set(batch.signal));
  const order = frameOrder(batch);

  return db.transaction().execute(async (tx) => {
    const bound = await sql<{ sysid: number; version: number; max_frame_seq: number }>`
      insert into narrow_datasets as d (dataset_id, sysid) values (${target.datasetId}::uuid, ${batch.sysid!}::int4)
      on conflict (dataset_id) do update set version = d.version
      returning d.sysid, d.version::float8 as version, d.max_frame_seq::float8 as max_frame_seq`.execute(tx);
    const { sysid, version, max_frame_seq: maxFrameSeq } = bound.rows[0]!;
    if (sysid !== batch.sysid) {
      throw new ApiError(
        'invalid_request',
        `dataset ${target.datasetId} holds MAVLink system id ${sysid}; frames of system id ${batch.sysid} belong in a dataset of their own (mavlink-raw-v1 rule 7)`,
      );
    }
    const known = cache && cache.version === version ? cache.sessions : await loadBootSessions(tx, target.datasetId);
    const sessions = new BootSessions(known);
    for (const f of order) {
      const boot = batch.bootUs[f]!;
      const gps = batch.gpsOffsetUs[f]!;
      sessions.assign({
        frameSeq: batch.frameSeq[f]!,
        compid: batch.compid[f]!,
        receivedUs: batch.receivedUs[f]!,
        ...(Number.isFinite(boot) && { bootUs: boot }),
        ...(Number.isFinite(gps) && { gpsOffsetUs: gps }),
      });
    }
    // Labelled once the whole batch is fed: a reboot confirmed later in the batch moves earlier frames.
    const sessionOf = new Int32Array(frames);
    for (let f = 0; f < frames; f++) sessionOf[f] = sessions.sessionOf(batch.compid[f]!, batch.frameSeq[f]!);
    // A reboot whose confirmation came in this batch but whose first frames were stored by an earlier one.
    for (const r of sessions.relabels()) {
      await sql`update narrow_samples set boot_session = ${r.to}::int4
        where dataset_id = ${target.datasetId}::uuid and boot_session = ${r.from}::int4 and frame_seq >= ${r.fromFrameSeq}::int8 and frame_seq <= ${maxFrameSeq}::int8`.execute(tx);
    }

    // The common case, a stream appending frames above everything the dataset holds, is a plain
    // insert: the row lock keeps the dataset's other writers out until commit. Only redelivery (or a
    // late frame below the highest stored) pays for `on conflict do nothing`.
    const first = batch.frameSeq[order[0]!]!;
    const last = batch.frameSeq[order[frames - 1]!]!;
    const onConflict = first <= maxFrameSeq || hasRepeats(batch, order);
    // Without conflicts every row and frame is new, so only the conflict path counts what it inserted.
    const counts = await sql<{ rows: number; frames: number }>`
      with ins as (${insertRows(target, batch, ids, sessionOf, onConflict)} ${onConflict ? sql`returning frame_seq` : sql``}),
      s as (${upsertSessions(target.datasetId, sessions.changed())}),
      v as (update narrow_datasets set version = version + 1, max_frame_seq = greatest(max_frame_seq, ${last}::int8)
            where dataset_id = ${target.datasetId}::uuid)
      ${onConflict ? sql`select count(*)::float8 as rows, count(distinct frame_seq)::float8 as frames from ins` : sql`select ${batch.rows}::float8 as rows, ${frames}::float8 as frames`}`.execute(tx);
    const { rows, frames: written } = counts.rows[0]!;
    return { written, duplicates: frames - written, rows, cache: { version: version + 1, sessions: sessions.all() } };
  });
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

/** The per-row columns of narrow_samples that come from a row's frame, typed for the `unnest` insert. */
export interface NarrowRowColumns {
  seq: Float64Array;
  signal: Int32Array;
  /** The sample's time, µs: GPS time when the frame carries it, else its boot clock, else the receive time. */
  time: Float64Array;
  /** 1 gps, 2 boot, 3 agent (indexes into SOURCE_SQL). */
  source: Int32Array;
  boot: Float64Array;
  hasBoot: Uint8Array;
  session: Int32Array;
  received: Float64Array;
}

/**
 * A batch's rows as columns, each row taking its frame's sequence, time, time source, boot clock,
 * session and receive time. The writer and the MAVLink bench's plain-insert baseline both build rows
 * with this, so the baseline measures exactly the rows the writer stores.
 */
export function rowColumns(batch: NarrowBatch, signalId: (name: string) => number, sessionOf: ArrayLike<number>): NarrowRowColumns {
  const n = batch.rows;
  const seq = new Float64Array(n);
  const signal = new Int32Array(n);
  const time = new Float64Array(n);
  const source = new Int32Array(n);
  const boot = new Float64Array(n);
  const hasBoot = new Uint8Array(n);
  const session = new Int32Array(n);
  const received = new Float64Array(n);
  let last = -1;
  let fSeq = 0;
  let fTime = 0;
  let fSource = 0;
  let fBoot = 0;
  let fHasBoot = 0;
  let fSession = 0;
  let fReceived = 0;
  for (let r = 0; r < n; r++) {
    const f = batch.rowFrame[r]!;
    if (f !== last) {
      last = f;
      fSeq = batch.frameSeq[f]!;
      fReceived = batch.receivedUs[f]!;
      fSession = sessionOf[f]!;
      fBoot = batch.bootUs[f]!;
      fHasBoot = Number.isFinite(fBoot) ? 1 : 0;
      const unix = batch.unixUs[f]!;
      if (Number.isFinite(unix)) {
        fSource = GPS;
        fTime = unix;
      } else if (fHasBoot) {
        fSource = BOOT;
        fTime = fBoot;
      } else {
        fSource = AGENT;
        fTime = fReceived;
      }
    }
    seq[r] = fSeq;
    signal[r] = signalId(batch.signal[r]!);
    time[r] = fTime;
    source[r] = fSource;
    boot[r] = fHasBoot ? fBoot : 0;
    hasBoot[r] = fHasBoot;
    session[r] = fSession;
    received[r] = fReceived;
  }
  return { seq, signal, time, source, boot, hasBoot, session, received };
}

function insertRows(target: NarrowTarget, batch: NarrowBatch, ids: ReadonlyMap<string, number>, sessionOf: Int32Array, onConflict: boolean): RawBuilder<unknown> {
  const { seq, signal, time, source, boot, hasBoot, session, received } = rowColumns(batch, (name) => ids.get(name)!, sessionOf);
  const n = batch.rows;
  const a = target.arrays;
  const times = timestamptzArray(time, target.binary, 'u.t');
  const receivedTimes = timestamptzArray(received, target.binary, 'u.rcv');
  const columns = ['seq', 'sig', 't', 'src', 'boot', 'sess', 'rcv', 'v'];
  const sources = [
    sql`${a.int8(seq)}::int8[]`,
    sql`${a.int4(signal)}::int4[]`,
    times.param,
    sql`${a.int4(source)}::int4[]`,
    sql`${a.float8(boot, hasBoot)}::float8[]`,
    sql`${a.int4(session)}::int4[]`,
    receivedTimes.param,
    sql`${a.float8(batch.value, batch.hasDouble, n)}::float8[]`,
  ];
  // Text and raw payloads are rare: sent sparse, as (row ordinal, value), and joined back.
  const joins: RawBuilder<unknown>[] = [];
  let text: RawBuilder<unknown> = sql`null::text`;
  let bytes: RawBuilder<unknown> = sql`null::bytea`;
  if (batch.textRows.length > 0) {
    joins.push(sql`left join unnest(${a.int4(batch.textRows.map((r) => r + 1))}::int4[], ${arrayLiteral(batch.texts.map(quotedText))}::text[]) as tx(ord, val) on tx.ord = u.ord`);
    text = sql`tx.val`;
  }
  if (batch.bytesRows.length > 0) {
    joins.push(sql`left join unnest(${a.int4(batch.bytesRows.map((r) => r + 1))}::int4[], ${arrayLiteral(batch.bytes.map(quotedBytea))}::bytea[]) as bx(ord, val) on bx.ord = u.ord`);
    bytes = sql`bx.val`;
  }
  return sql`
    insert into narrow_samples (dataset_id, frame_seq, time, received_at, boot_us, value_double, signal_id, boot_session, time_source, value_text, value_bytes)
    select ${target.datasetId}::uuid, u.seq, ${times.value}, ${receivedTimes.value}, u.boot::int8, u.v, u.sig, u.sess, ${SOURCE_SQL}[u.src], ${text}, ${bytes}
    from unnest(${sql.join(sources)}) with ordinality as ${sql.raw(`u(${columns.join(', ')}, ord)`)}
    ${sql.join(joins, sql` `)}
    ${onConflict ? sql`on conflict do nothing` : sql``}`;
}

function int8List(values: ReadonlyArray<number | null>): string {
  return arrayLiteral(values.map((v) => (v === null ? undefined : String(v))));
}

function upsertSessions(datasetId: string, sessions: readonly BootSession[]): RawBuilder<unknown> {
  const col = <K extends keyof BootSession>(key: K) => sessions.map((s) => s[key] as number | null);
  const clocks = arrayLiteral(sessions.map((s) => (s.clock === null ? undefined : quotedText(JSON.stringify(s.clock)))));
  return sql`
    insert into narrow_boot_sessions as b (dataset_id, boot_session, compid, first_frame_seq, last_frame_seq, last_boot_us,
      gps_offset_us, gps_offset_frame_seq, agent_offset_us, first_received_us, last_received_us, clock_state)
    select ${datasetId}::uuid, u.* from unnest(
      ${int8List(col('session'))}::int4[], ${int8List(col('compid'))}::int4[], ${int8List(col('firstFrameSeq'))}::int8[],
      ${int8List(col('lastFrameSeq'))}::int8[], ${int8List(col('lastBootUs'))}::int8[], ${int8List(col('gpsOffsetUs'))}::int8[],
      ${int8List(col('gpsOffsetFrameSeq'))}::int8[], ${int8List(col('agentOffsetUs'))}::int8[],
      ${int8List(col('firstReceivedUs'))}::int8[], ${int8List(col('lastReceivedUs'))}::int8[], ${clocks}::jsonb[]) as u
    on conflict (dataset_id, boot_session) do update set
      first_frame_seq = excluded.first_frame_seq, clock_state = excluded.clock_state,
      last_frame_seq = excluded.last_frame_seq, last_boot_us = excluded.last_boot_us,
      gps_offset_us = excluded.gps_offset_us, gps_offset_frame_seq = excluded.gps_offset_frame_seq,
      agent_offset_us = excluded.agent_offset_us, first_received_us = excluded.first_received_us,
      last_received_us = excluded.last_received_us`;
}

