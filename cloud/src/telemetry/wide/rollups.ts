import { sql, type RawBuilder } from 'kysely';
import type { Executor } from '../../db/executor.ts';
import { addSample, m4Of, mergeM4, type M4 } from '../series/m4.ts';
import { ROLLUP_WIDTHS_MS, FINEST_WIDTH_US, bucketStart } from './rollup-levels.ts';
import { PACK_CHANNELS, pack, packGroup, packSlot, unpack, mergeSlots } from './rollup-packs.ts';
import type { ArrayEncoder } from '../sql/sql-arrays.ts';
import type { KnownPack } from './pack-cache.ts';
import { columnValueSql, timestampToUs, usToTimestamp } from '../sql/sql-time.ts';

/**
 * Rollups: for every numeric channel of a wide dataset, at each width in ROLLUP_WIDTHS_MS, the M4
 * aggregate (count, first, last, min, max with their times) of every bucket holding samples, stored
 * packed: one row per bucket for a group of channels (rollup-packs.ts). Ingest keeps them in the same
 * transaction as the raw write, so they are exactly the aggregate of the raw rows at every commit;
 * Query reads them instead of the raw rows for all but the range's edges.
 *
 * PostgreSQL cannot read a double out of a bytea, so packs are merged here: a writer reads the packs its
 * batch touches and locks them (`storedPacksSql`, in its raw statement), merges and writes them back, all
 * in the batch's transaction. Writers sharing a pack take turns for it; readers never wait.
 */
export interface RollupRow extends M4 {
  channel: number;
  widthMs: number;
  bucket: number;
}

/**
 * Aggregates of the given samples at every width. `times` ascending; sample i exists where
 * `mask[i]` is set. Finer buckets are folded into coarser ones, so the work is one pass over the
 * samples plus one over the (few) finest aggregates per width.
 */
export function rollupDeltas(channel: number, times: ArrayLike<number>, values: ArrayLike<number>, mask: ArrayLike<number>): RollupRow[] {
  const out: RollupRow[] = [];
  let level: RollupRow[] = [];
  let current: RollupRow | undefined;
  for (let i = 0; i < times.length; i++) {
    if (!mask[i]) continue;
    const t = times[i]!;
    const v = values[i]!;
    const bucket = bucketStart(t, FINEST_WIDTH_US);
    if (current && current.bucket === bucket) addSample(current, t, v);
    else {
      current = { channel, widthMs: ROLLUP_WIDTHS_MS[0], bucket, ...m4Of(t, v) };
      level.push(current);
    }
  }
  out.push(...level);
  for (let w = 1; w < ROLLUP_WIDTHS_MS.length; w++) {
    const widthMs = ROLLUP_WIDTHS_MS[w]!;
    const coarser: RollupRow[] = [];
    let into: RollupRow | undefined;
    for (const fine of level) {
      const bucket = bucketStart(fine.bucket, widthMs * 1000);
      if (into && into.bucket === bucket) mergeM4(into, fine);
      else {
        into = { ...fine, widthMs, bucket };
        coarser.push(into);
      }
    }
    out.push(...coarser);
    level = coarser;
  }
  return out;
}

/** Rollup packs in memory, keyed by `packKey`: each one's slots, whether a row holds it, whether it was changed. */
export type PackSet = Map<string, Pack>;
export interface Pack {
  group: number;
  widthMs: number;
  bucket: number;
  slots: Array<M4 | undefined>;
  stored: boolean;
  dirty: boolean;
  /** The bytes stored, once written by this writer. */
  bytes?: Uint8Array;
}
type PackKey = { group: number; widthMs: number; bucket: number };
type Target = { datasetId: string; arrays: ArrayEncoder };

function packKey(group: number, widthMs: number, bucket: number): string {
  return `${group}/${widthMs}/${bucket}`;
}

function inKeyOrder<K extends PackKey>(keys: Iterable<K>): K[] {
  return [...keys].sort((a, b) => a.group - b.group || a.widthMs - b.widthMs || a.bucket - b.bucket);
}

/** A batch's rollup rows as the packs they change: each delta's slots hold the batch's aggregates. */
export function packDeltas(rows: readonly RollupRow[]): PackSet {
  const deltas: PackSet = new Map();
  for (const row of rows) {
    const group = packGroup(row.channel);
    const key = packKey(group, row.widthMs, row.bucket);
    let delta = deltas.get(key);
    if (!delta) deltas.set(key, (delta = { group, widthMs: row.widthMs, bucket: row.bucket, slots: [], stored: false, dirty: true }));
    delta.slots[packSlot(row.channel)] = row;
  }
  return deltas;
}

/**
 * The statement reading the stored packs of `keys` and locking them until the transaction ends, in key
 * order (so two writers lock shared packs alike and never wait on each other in a circle). Run in a
 * writer's raw statement as a CTE, or on its own.
 *
 * Why a row lock is enough: under READ COMMITTED, `for update` waits for a writer holding the row and
 * then returns the row's newest committed version, not the one the statement's snapshot saw. A pack that
 * did not exist at the snapshot but another writer creates before this one writes it shows up as a
 * conflict on insert (`writePacks`), and is read and merged then.
 */
export function storedPacksSql(target: Target, keys: Iterable<PackKey>) {
  const sorted = inKeyOrder(keys);
  const { int4, int8 } = target.arrays;
  return sql<StoredPackRow>`
    select p.channel_group as g, p.width_ms as w, p.bucket::float8 as b, p.data
    from telemetry_rollup_packs as p
    join unnest(${int4(sorted.map((k) => k.group))}::int4[], ${int4(sorted.map((k) => k.widthMs))}::int4[], ${int8(sorted.map((k) => k.bucket))}::int8[]) as k(g, w, b)
      on p.dataset_id = ${target.datasetId}::uuid and p.channel_group = k.g and p.width_ms = k.w and p.bucket = k.b
    order by 1, 2, 3
    for update of p`;
}

export interface StoredPackRow {
  g: number;
  w: number;
  b: number;
  data: Uint8Array;
}

/** Read (and lock) the stored packs of the given keys not already in `into`; missing ones start empty. */
async function readPacks(db: Executor, target: Target, keys: readonly PackKey[], into: PackSet): Promise<void> {
  const wanted = keys.filter((k) => !into.has(packKey(k.group, k.widthMs, k.bucket)));
  if (wanted.length === 0) return;
  const stored = await storedPacksSql(target, wanted).execute(db);
  addPacks(into, wanted, stored.rows);
}

function addPacks(into: PackSet, keys: readonly PackKey[], rows: readonly StoredPackRow[]): void {
  for (const k of keys) into.set(packKey(k.group, k.widthMs, k.bucket), { group: k.group, widthMs: k.widthMs, bucket: k.bucket, slots: [], stored: false, dirty: false });
  for (const row of rows) {
    const pack = into.get(packKey(row.g, row.w, row.b))!;
    pack.slots = unpack(row.data);
    pack.stored = true;
  }
}

/**
 * Write the changed packs back in one statement: stored ones updated (their rows are locked), new ones
 * inserted in key order unless another writer inserted the same key first. Returns those, left dirty.
 */
async function writePacks(db: Executor, target: Target, packs: PackSet): Promise<Pack[]> {
  const dirty = inKeyOrder([...packs.values()].filter((p) => p.dirty));
  if (dirty.length === 0) return [];
  const packed = dirty.map((p) => pack(p.slots));
  const blob = blobOf(packed);
  const { int4, int8, bytea } = target.arrays;
  const result = await sql<{ g: number; w: number; b: number }>`
    with k as materialized (
      select k.g, k.w, k.b, k.stored, k.n, substring(${bytea(blob.bytes)}::bytea from k.o for k.l) as data
      from unnest(${int4(dirty.map((p) => p.group))}::int4[], ${int4(dirty.map((p) => p.widthMs))}::int4[], ${int8(dirty.map((p) => p.bucket))}::int8[],
                  ${int4(blob.offsets)}::int4[], ${int4(packed.map((b) => b.byteLength))}::int4[], ${int4(dirty.map((p) => (p.stored ? 1 : 0)))}::int4[])
             with ordinality as k(g, w, b, o, l, stored, n)
    ),
    updated as (
      update telemetry_rollup_packs as p set data = k.data
      from k where k.stored = 1 and p.dataset_id = ${target.datasetId}::uuid and p.channel_group = k.g and p.width_ms = k.w and p.bucket = k.b
    )
    insert into telemetry_rollup_packs (dataset_id, channel_group, width_ms, bucket, data)
    select ${target.datasetId}::uuid, k.g, k.w, k.b, k.data from k where k.stored = 0 order by k.n
    on conflict (dataset_id, channel_group, width_ms, bucket) do nothing
    returning channel_group as g, width_ms as w, bucket::float8 as b`.execute(db);
  const inserted = new Set(result.rows.map((r) => packKey(r.g, r.w, r.b)));
  const lost: Pack[] = [];
  dirty.forEach((p, i) => {
    if (p.stored || inserted.has(packKey(p.group, p.widthMs, p.bucket))) {
      p.stored = true;
      p.dirty = false;
      p.bytes = packed[i];
    } else lost.push(p);
  });
  return lost;
}

/**
 * Merge aggregates of new samples (`packDeltas`) into the stored rollups, in the transaction that wrote
 * the samples. `stored`, when given, are the packs of `deltas` already read and locked by the writer's
 * raw statement (`storedPacksSql`); otherwise they are read here. Returns the packs as written.
 */
export async function applyRollupDeltas(db: Executor, target: Target, deltas: PackSet, stored?: readonly StoredPackRow[]): Promise<Pack[]> {
  if (deltas.size === 0) return [];
  const packs: PackSet = new Map();
  if (stored) addPacks(packs, [...deltas.values()], stored);
  else await readPacks(db, target, [...deltas.values()], packs);
  for (const [key, delta] of deltas) {
    const into = packs.get(key)!;
    mergeSlots(into.slots, delta.slots);
    into.dirty = true;
  }
  let lost = await writePacks(db, target, packs);
  // Packs another writer created after this transaction's read: read them now (committed, and locked
  // from here on), merge this batch's aggregates into them, and write again.
  while (lost.length > 0) {
    const again: PackSet = new Map();
    await readPacks(db, target, lost, again);
    for (const [key, into] of again) {
      mergeSlots(into.slots, deltas.get(key)!.slots);
      into.dirty = true;
      packs.set(key, into);
    }
    lost = await writePacks(db, target, again);
  }
  return [...packs.values()];
}

const NO_BYTES = new Uint8Array(0);

/**
 * Byte strings as one bytea parameter, cut apart in SQL with `substring` at their 1-based `offsets`: a
 * parameter either driver sends as it is, and sent once however many packs it holds.
 */
function blobOf(parts: readonly Uint8Array[]): { bytes: Buffer; offsets: number[] } {
  let at = 1;
  const offsets = parts.map((bytes) => (at += bytes.byteLength) - bytes.byteLength);
  return { bytes: Buffer.concat(parts), offsets };
}

/**
 * Pieces of one statement that writes packs merged without reading them (`PackCache.plan`): `keys` and
 * `checked` are CTEs to put first; `checked` locks, in key order, each pack to be overwritten whose stored
 * bytes are still the ones it was merged from. Only when it found all `storedCount` of them may the
 * statement write, and then `writes(guard)` (CTEs updating those and inserting the rest) does; `guard` is
 * that condition as SQL. A pack taken for new that another writer stored meanwhile fails the insert with
 * a unique violation, and the whole statement with it.
 */
export function knownPacksSql(target: Target, known: readonly KnownPack[]) {
  // New bytes first, then the old bytes of the stored ones (none for a pack taken for new).
  const n = known.length;
  const blob = blobOf([...known.map((p) => p.bytes), ...known.map((p) => p.old ?? NO_BYTES)]);
  const { int4, int8, bytea } = target.arrays;
  const keys = sql`keys as materialized (
      select k.g, k.w, k.b, k.n, k.stored = 1 as stored, substring(x.blob from k.o for k.l) as data, substring(x.blob from k.old_o for k.old_l) as old
      from (select ${bytea(blob.bytes)}::bytea as blob) as x,
           unnest(${int4(known.map((p) => p.group))}::int4[], ${int4(known.map((p) => p.widthMs))}::int4[], ${int8(known.map((p) => p.bucket))}::int8[],
                  ${int4(blob.offsets.slice(0, n))}::int4[], ${int4(known.map((p) => p.bytes.byteLength))}::int4[],
                  ${int4(blob.offsets.slice(n))}::int4[], ${int4(known.map((p) => p.old?.byteLength ?? 0))}::int4[], ${int4(known.map((p) => (p.old ? 1 : 0)))}::int4[])
             with ordinality as k(g, w, b, o, l, old_o, old_l, stored, n)
    ),
    checked as (
      select 1 from keys as k join telemetry_rollup_packs as p
        on p.dataset_id = ${target.datasetId}::uuid and p.channel_group = k.g and p.width_ms = k.w and p.bucket = k.b
      where k.stored and p.data = k.old
      order by k.n
      for update of p
    )`;
  const writes = (guard: RawBuilder<unknown>) => sql`updated as (
      update telemetry_rollup_packs as p set data = k.data
      from keys as k where ${guard} and k.stored and p.dataset_id = ${target.datasetId}::uuid and p.channel_group = k.g and p.width_ms = k.w and p.bucket = k.b
    ),
    inserted as (
      insert into telemetry_rollup_packs (dataset_id, channel_group, width_ms, bucket, data)
      select ${target.datasetId}::uuid, k.g, k.w, k.b, k.data from keys as k where ${guard} and not k.stored order by k.n
    )`;
  return { keys, storedCount: known.filter((p) => p.old).length, writes };
}

/** `writePacks` where no other writer can create a pack meanwhile (the merge path holds the table's SHARE ROW EXCLUSIVE lock). */
async function writeAll(db: Executor, target: Target, packs: PackSet): Promise<void> {
  const lost = await writePacks(db, target, packs);
  if (lost.length > 0) throw new Error(`${lost.length} rollup packs were created by another writer during a recompute, which holds the table's lock`);
}

/**
 * Rebuild the rollups of the given finest buckets of some channels from the raw rows, then every
 * coarser bucket containing them from the width below. Used when a stored value was overwritten by a
 * different one: a minimum or maximum cannot be "un-merged", so the bucket is recomputed. Call on the
 * merge path (the table's SHARE ROW EXCLUSIVE lock held: no other writer), after `applyRollupDeltas` of
 * the same batch.
 */
export async function recomputeRollups(
  db: Executor,
  target: { datasetId: string; table: string; arrays: ArrayEncoder },
  changed: ReadonlyArray<{ channel: { index: number; name: string; physicalType: string }; finestBuckets: readonly number[] }>,
): Promise<void> {
  const packs: PackSet = new Map();
  const touched = new Map<number, Set<number>>(); // finest bucket → channels recomputed in it
  for (const { channel, finestBuckets } of changed) {
    if (finestBuckets.length === 0) continue;
    const fresh = new Map<number, M4>();
    const raw = await sql<{ b: number; t: number; v: number }>`
      select b.bucket::float8 as b, ${timestampToUs('w.time')} as t, ${columnValueSql(`w.${channel.name}`, channel.physicalType)} as v
      from unnest(${target.arrays.int8(finestBuckets)}::int8[]) as b(bucket)
      join ${sql.table(target.table)} as w
        on w.time >= ${usToTimestamp(sql`b.bucket`)} and w.time < ${usToTimestamp(sql`b.bucket + ${FINEST_WIDTH_US}::int8`)}
      where ${sql.ref(`w.${channel.name}`)} is not null`.execute(db);
    for (const { b, t, v } of raw.rows) {
      const m4 = fresh.get(b);
      if (m4) addSample(m4, t, v);
      else fresh.set(b, m4Of(t, v));
    }
    const group = packGroup(channel.index);
    await readPacks(db, target, finestBuckets.map((bucket) => ({ group, widthMs: ROLLUP_WIDTHS_MS[0], bucket })), packs);
    for (const bucket of finestBuckets) {
      const stored = packs.get(packKey(group, ROLLUP_WIDTHS_MS[0], bucket))!;
      stored.slots[packSlot(channel.index)] = fresh.get(bucket);
      stored.dirty = true;
      let channels = touched.get(bucket);
      if (!channels) touched.set(bucket, (channels = new Set()));
      channels.add(channel.index);
    }
  }
  await writeAll(db, target, packs);

  // Each coarser bucket holding a recomputed one: its recomputed channels' slots merged from the width below.
  let finer: Map<number, Set<number>> = touched;
  for (let level = 1; level < ROLLUP_WIDTHS_MS.length && finer.size > 0; level++) {
    const widthMs = ROLLUP_WIDTHS_MS[level]!;
    const finerWidth = ROLLUP_WIDTHS_MS[level - 1]!;
    const coarse = new Map<number, Set<number>>();
    for (const [bucket, channels] of finer) {
      const start = bucketStart(bucket, widthMs * 1000);
      const into = coarse.get(start);
      if (into) for (const c of channels) into.add(c);
      else coarse.set(start, new Set(channels));
    }
    const starts = [...coarse.keys()];
    const groups = [...new Set([...coarse.values()].flatMap((channels) => [...channels].map(packGroup)))];
    const parts = await sql<{ g: number; s: number; data: Uint8Array }>`
      select p.channel_group as g, s.start::float8 as s, p.data
      from unnest(${target.arrays.int8(starts)}::int8[]) as s(start)
      join telemetry_rollup_packs as p
        on p.dataset_id = ${target.datasetId}::uuid and p.channel_group = any(${target.arrays.int4(groups)}::int4[]) and p.width_ms = ${finerWidth}::int4
       and p.bucket >= s.start and p.bucket < s.start + ${widthMs * 1000}::int8`.execute(db);
    const merged = new Map<string, Array<M4 | undefined>>(); // per coarse pack, its recomputed slots
    for (const row of parts.rows) {
      const key = packKey(row.g, widthMs, row.s);
      let slots = merged.get(key);
      if (!slots) merged.set(key, (slots = []));
      const channels = coarse.get(row.s)!;
      const finerSlots = unpack(row.data);
      const wanted = finerSlots.map((m4, slot) => (channels.has(row.g * PACK_CHANNELS + slot) ? m4 : undefined));
      mergeSlots(slots, wanted);
    }
    const keys = starts.flatMap((bucket) => [...new Set([...coarse.get(bucket)!].map(packGroup))].map((group) => ({ group, widthMs, bucket })));
    await readPacks(db, target, keys, packs);
    for (const { group, bucket } of keys) {
      const stored = packs.get(packKey(group, widthMs, bucket))!;
      const slots = merged.get(packKey(group, widthMs, bucket)) ?? [];
      for (const channel of coarse.get(bucket)!) {
        if (packGroup(channel) === group) stored.slots[packSlot(channel)] = slots[packSlot(channel)];
      }
      stored.dirty = true;
    }
    await writeAll(db, target, packs);
    finer = coarse;
  }
}

/** Every stored rollup of a dataset, one row per channel, width and bucket, in that order (for checks and tools). */
export async function storedRollups(db: Executor, datasetId: string): Promise<RollupRow[]> {
  const packs = await sql<StoredPackRow>`
    select channel_group as g, width_ms as w, bucket::float8 as b, data from telemetry_rollup_packs where dataset_id = ${datasetId}::uuid`.execute(db);
  const rows: RollupRow[] = [];
  for (const { g, w, b, data } of packs.rows) {
    unpack(data).forEach((m4, slot) => {
      if (m4) rows.push({ channel: g * PACK_CHANNELS + slot, widthMs: w, bucket: b, ...m4 });
    });
  }
  return rows.sort((x, y) => x.channel - y.channel || x.widthMs - y.widthMs || x.bucket - y.bucket);
}
