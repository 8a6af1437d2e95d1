import { sql, type Kysely } from 'kysely';
import * as perChannel from './0003-telemetry-rollups.ts';

// Frozen: a migration never imports application code. The layout below is a copy of
// telemetry/wide/rollup-packs.ts at the time of writing; changing it later needs a new migration.
const PACK_CHANNELS = 16;

export async function up(db: Kysely<any>): Promise<void> {
  // A wide dataset's rollups, packed: one row per (dataset, group of 16 channels, width, bucket) whose
  // `data` holds each channel's M4 aggregate in a 72-byte slot (nine big-endian float8: count, min value,
  // min time, max value, max time, first time, first value, last time, last value; a zero count is an
  // empty slot). A Query of many channels then reads a row per bucket, not one per channel and bucket.
  // Rows of the open buckets are rewritten on every batch, so pages keep room for HOT updates.
  await sql`
    create table telemetry_rollup_packs (
      dataset_id uuid not null references datasets(id) on delete cascade,
      channel_group integer not null,
      width_ms integer not null,
      bucket bigint not null,
      data bytea not null,
      primary key (dataset_id, channel_group, width_ms, bucket)
    ) with (fillfactor = 80)
  `.execute(db);

  // The rollups kept a row per channel until now: pack them, slot by slot, empty slots zero-filled up to
  // each pack's highest channel. float8send gives the big-endian bytes the server reads.
  await sql`
    insert into telemetry_rollup_packs (dataset_id, channel_group, width_ms, bucket, data)
    select k.dataset_id, k.g, k.width_ms, k.bucket,
           string_agg(coalesce(
             float8send(r.count::float8) || float8send(r.min_value) || float8send(r.min_time::float8)
               || float8send(r.max_value) || float8send(r.max_time::float8) || float8send(r.first_time::float8)
               || float8send(r.first_value) || float8send(r.last_time::float8) || float8send(r.last_value),
             decode(repeat('00', 72), 'hex')), ''::bytea order by s.slot)
    from (
      select dataset_id, channel / ${PACK_CHANNELS} as g, width_ms, bucket, max(channel % ${PACK_CHANNELS}) as top
      from telemetry_rollups group by 1, 2, 3, 4
    ) as k
    cross join lateral generate_series(0, k.top) as s(slot)
    left join telemetry_rollups as r
      on r.dataset_id = k.dataset_id and r.channel = k.g * ${PACK_CHANNELS} + s.slot and r.width_ms = k.width_ms and r.bucket = k.bucket
    group by k.dataset_id, k.g, k.width_ms, k.bucket
  `.execute(db);
  await sql`drop table telemetry_rollups`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  // SQL cannot read a double out of a bytea, so the per-channel table is rebuilt from the raw rows, as
  // migration 0003 built it the first time.
  await sql`drop table if exists telemetry_rollup_packs`.execute(db);
  await perChannel.up(db);
}
