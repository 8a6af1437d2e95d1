import { sql } from 'kysely';
import type { Db } from '../../db/connect.ts';
import type { Executor } from '../../db/executor.ts';
import type { SampleValue } from './decode.ts';
import { textColumn } from './column-arrays.ts';
import { ensureMessageTables, loadMessageTables, messageColumns, signalColumn, SOURCE_CODE, SQL_TYPE } from './message-tables.ts';
import { quoteIdent } from '../../db/sql-text.ts';

/**
 * The start-up move of narrow data from the former shape, `narrow_samples` (one row per decoded field,
 * migration 0005), into the message tables (one row per frame, message-tables.ts). Every sample keeps
 * its frame_seq, raw time, receive time, time_source, boot_us and boot_session exactly as stored (they
 * were the same for every row of a frame), and its value: a number in its field's column type (a
 * 64-bit integer from its exact decimal text when it had one), text, or raw bytes. Boot sessions are
 * not recomputed: the rows keep the session they were aligned by.
 *
 * One transaction per dataset: its frames are inserted (`on conflict do nothing`, so a move cut short
 * by a crash resumes) and its old rows deleted. When the table is empty it is dropped, with its signal
dictionary `narrow_signals`. Two processes
 * starting together take turns on an advisory lock. A sample whose signal the current dialect cannot
 * place (a field renamed by a dialect upgrade) stops the move of its dataset, which stays in
 * `narrow_samples` and is named in the error: nothing is dropped that has not been moved.
 */

const LOCK = sql`select pg_advisory_xact_lock(hashtext('sortie.narrow-legacy-samples'))`;

interface LegacyRow {
  frame_seq: number;
  name: string;
  time_us: number;
  received_us: number;
  boot_us: number | null;
  boot_session: number;
  time_source: 'gps' | 'boot' | 'agent';
  value_double: number | null;
  value_text: string | null;
  value_bytes: Uint8Array | null;
}

export interface LegacyMoveResult {
  datasets: number;
  frames: number;
  samples: number;
}

/** Move every dataset's rows out of narrow_samples, then drop it; a no-op when it is gone. */
export async function moveLegacyNarrowSamples(db: Db): Promise<LegacyMoveResult> {
  const done: LegacyMoveResult = { datasets: 0, frames: 0, samples: 0 };
  if (!(await legacyTableExists(db))) return done;
  // Every step re-checks under the lock: a process starting beside this one may have moved the rows and
  // dropped the table between this process's first look and its turn.
  const datasets = await db.transaction().execute(async (tx) => {
    await LOCK.execute(tx);
    if (!(await legacyTableExists(tx))) return [];
    return (await sql<{ dataset_id: string }>`select distinct dataset_id::text from narrow_samples`.execute(tx)).rows;
  });
  for (const { dataset_id } of datasets) {
    const moved = await db.transaction().execute(async (tx) => {
      await LOCK.execute(tx);
      if (!(await legacyTableExists(tx))) return { frames: 0, samples: 0 };
      return moveDataset(tx, dataset_id);
    });
    if (moved.samples > 0) done.datasets++;
    done.frames += moved.frames;
    done.samples += moved.samples;
  }
  await db.transaction().execute(async (tx) => {
    await LOCK.execute(tx);
    if (!(await legacyTableExists(tx))) return;
    const left = await sql<{ n: number }>`select count(*)::int as n from (select 1 from narrow_samples limit 1) s`.execute(tx);
    // The signal dictionary served only narrow_samples (message tables name signals by column).
    if (left.rows[0]!.n === 0) await sql`drop table narrow_samples, narrow_signals`.execute(tx);
  });
  return done;
}

async function moveDataset(tx: Executor, datasetId: string): Promise<{ frames: number; samples: number }> {
  const result = await sql<LegacyRow>`
    select s.frame_seq::float8 as frame_seq, n.name, round(date_part('epoch', s.time) * 1000000)::float8 as time_us,
           round(date_part('epoch', s.received_at) * 1000000)::float8 as received_us, s.boot_us::float8 as boot_us,
           s.boot_session, s.time_source, s.value_double, s.value_text, s.value_bytes
    from narrow_samples s join narrow_signals n on n.id = s.signal_id
    where s.dataset_id = ${datasetId}::uuid
    order by s.frame_seq`.execute(tx);
  const rows = result.rows;
  if (rows.length === 0) return { frames: 0, samples: 0 };

  // Frames by message id: one row per frame, its samples placed in their columns.
  interface Group {
    frames: Array<{ head: LegacyRow; values: Array<SampleValue | null> }>;
    present: Set<string>;
  }
  const groups = new Map<number, Group>();
  let frames = 0;
  for (let i = 0; i < rows.length; ) {
    const head = rows[i]!;
    let j = i;
    while (j < rows.length && rows[j]!.frame_seq === head.frame_seq) j++;
    const at = signalColumn(head.name);
    if (!at) throw new Error(`narrow_samples of dataset ${datasetId}: signal ${head.name} has no column in the current MAVLink dialect; the dataset stays in narrow_samples`);
    const columns = messageColumns(at.msgid).columns;
    let group = groups.get(at.msgid);
    if (!group) groups.set(at.msgid, (group = { frames: [], present: new Set() }));
    const values: Array<SampleValue | null> = columns.map(() => null);
    for (let k = i; k < j; k++) {
      const row = rows[k]!;
      const index = columns.findIndex((c) => c.signal === row.name);
      const placed = signalColumn(row.name);
      if (index < 0 || placed?.msgid !== at.msgid) {
        throw new Error(`narrow_samples of dataset ${datasetId}: frame_seq ${row.frame_seq} mixes ${head.name} and ${row.name}, which belong to different messages; the dataset stays in narrow_samples`);
      }
      values[index] = legacyValue(row, columns[index]!.type);
      group.present.add(row.name);
    }
    group.frames.push({ head, values });
    frames++;
    i = j;
  }

  const tables = await loadMessageTables(tx, datasetId);
  // Plain tables here: the start-up step after it (applyNarrowTimescaleLayout) converts them where TimescaleDB is in use.
  await ensureMessageTables(tx, datasetId, tables, new Map([...groups].map(([msgid, g]) => [msgid, g.present])), false);
  for (const [msgid, group] of groups) {
    const columns = messageColumns(msgid).columns;
    const heads = group.frames.map((f) => f.head);
    const list = (values: ReadonlyArray<number | string | null>) => `{${values.map((v) => (v === null ? 'NULL' : String(v))).join(',')}}`;
    const fieldParams = columns.map((c, i) => sql`unnest(${textColumn(c.type, group.frames.map((f) => f.values[i]!))}::${sql.raw(SQL_TYPE[c.type])}[])`);
    const aliases = columns.map((_, i) => `c${i}`);
    await sql`
      insert into ${sql.table(tables.get(msgid)!.table)} (frame_seq, time, received_at, boot_us, boot_session, time_source, ${sql.raw(columns.map((c) => quoteIdent(c.column)).join(', '))})
      select u.seq, timestamptz 'epoch' + u.t * interval '1 microsecond', timestamptz 'epoch' + u.rcv * interval '1 microsecond', u.boot, u.sess, u.src,
             ${sql.raw(aliases.map((a) => `u.${a}`).join(', '))}
      from rows from (unnest(${list(heads.map((h) => h.frame_seq))}::int8[]), unnest(${list(heads.map((h) => h.time_us))}::int8[]),
                      unnest(${list(heads.map((h) => h.received_us))}::int8[]), unnest(${list(heads.map((h) => h.boot_us))}::int8[]),
                      unnest(${list(heads.map((h) => h.boot_session))}::int4[]), unnest(${`{${heads.map((h) => SOURCE_CODE[h.time_source]).join(',')}}`}::"char"[]),
                      ${sql.join(fieldParams)})
        as ${sql.raw(`u(seq, t, rcv, boot, sess, src, ${aliases.join(', ')})`)}
      on conflict do nothing`.execute(tx);
  }
  await sql`delete from narrow_samples where dataset_id = ${datasetId}::uuid`.execute(tx);
  return { frames, samples: rows.length };
}

async function legacyTableExists(db: Executor): Promise<boolean> {
  // pg_class read with the statement's own snapshot, not to_regclass: to_regclass answers from the session's
  // catalog cache, which after waiting on the lock can still name a table another process has just dropped.
  const found = await sql<{ n: number }>`
    select count(*)::int as n from pg_catalog.pg_class c join pg_catalog.pg_namespace ns on ns.oid = c.relnamespace
    where c.relname = 'narrow_samples' and ns.nspname = any (current_schemas(false))`.execute(db);
  return found.rows[0]!.n > 0;
}

/** A stored value in its column's type; a 64-bit integer from its exact decimal text when it had one. */
function legacyValue(row: LegacyRow, type: string): SampleValue | null {
  if (type === 'bytea') return row.value_bytes;
  if (type === 'text') return row.value_text;
  if (type === 'int8' || type === 'uint64') {
    if (row.value_text !== null) return BigInt(row.value_text);
    return row.value_double === null ? null : BigInt(row.value_double);
  }
  return row.value_double;
}
