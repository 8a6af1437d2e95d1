import { sql, type Kysely } from 'kysely';

// Frozen: a migration never imports application code. The widths below are a copy of
// telemetry/rollup-levels.ts at the time of writing; changing them later needs a new migration.
const WIDTHS_MS = [10, 100, 1_000, 10_000, 60_000, 600_000, 3_600_000, 86_400_000];
const NUMERIC_TYPES = ['double precision', 'bigint', 'numeric(20,0)', 'boolean'];

export async function up(db: Kysely<any>): Promise<void> {
  // One row per (dataset, channel, width, bucket) with the bucket's M4 aggregate. Times are µs since
  // the epoch (bucket starts are multiples of the width). Rows of the open buckets are updated on every
  // batch, so pages keep room for HOT updates.
  await sql`
    create table telemetry_rollups (
      dataset_id uuid not null references datasets(id) on delete cascade,
      channel integer not null,
      width_ms integer not null,
      bucket bigint not null,
      count bigint not null,
      min_value double precision not null,
      min_time bigint not null,
      max_value double precision not null,
      max_time bigint not null,
      first_time bigint not null,
      first_value double precision not null,
      last_time bigint not null,
      last_value double precision not null,
      primary key (dataset_id, channel, width_ms, bucket)
    ) with (fillfactor = 80)
  `.execute(db);

  // Wide tables written before rollups existed: aggregate what they hold.
  const channels = await sql<{ dataset_id: string; table_name: string; col_index: number; col_name: string; physical_type: string }>`
    select d.id as dataset_id, d.table_name, c.col_index, c.col_name, c.physical_type
    from datasets d
    join channels c on c.dataset_id = d.id
    where d.storage_shape = 'wide' and d.table_name is not null and c.col_index is not null
      and c.physical_type in (${sql.join(NUMERIC_TYPES)})
      and exists (select 1 from information_schema.columns i where i.table_name = d.table_name and i.column_name = c.col_name)
  `.execute(db);
  for (const ch of channels.rows) {
    const value = ch.physical_type === 'boolean' ? sql`(${sql.ref(ch.col_name)})::int::float8` : sql`(${sql.ref(ch.col_name)})::float8`;
    const width = WIDTHS_MS[0]! * 1000;
    await sql`
      insert into telemetry_rollups
      select ${ch.dataset_id}::uuid, ${ch.col_index}::int4, ${WIDTHS_MS[0]}::int4, (floor(t / ${width}::float8) * ${width}::float8)::int8,
             count(*), (min(array[v, t]))[1], (min(array[v, t]))[2]::int8, (max(array[v, -t]))[1], (-(max(array[v, -t]))[2])::int8,
             min(t)::int8, (min(array[t, v]))[2], max(t)::int8, (max(array[t, v]))[2]
      from (
        select round(date_part('epoch', time) * 1000000) as t, ${value} as v
        from ${sql.table(ch.table_name)} where ${sql.ref(ch.col_name)} is not null
      ) as raw
      group by 4
    `.execute(db);
    for (let i = 1; i < WIDTHS_MS.length; i++) {
      const coarse = WIDTHS_MS[i]! * 1000;
      await sql`
        insert into telemetry_rollups
        select dataset_id, channel, ${WIDTHS_MS[i]}::int4, (floor(bucket / ${coarse}::float8) * ${coarse}::float8)::int8, sum(count)::int8,
               (min(array[min_value, min_time::float8]))[1], (min(array[min_value, min_time::float8]))[2]::int8,
               (max(array[max_value, -max_time::float8]))[1], (-(max(array[max_value, -max_time::float8]))[2])::int8,
               min(first_time), (min(array[first_time::float8, first_value]))[2],
               max(last_time), (max(array[last_time::float8, last_value]))[2]
        from telemetry_rollups
        where dataset_id = ${ch.dataset_id}::uuid and channel = ${ch.col_index}::int4 and width_ms = ${WIDTHS_MS[i - 1]}::int4
        group by dataset_id, channel, 4
      `.execute(db);
    }
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists telemetry_rollups`.execute(db);
}
