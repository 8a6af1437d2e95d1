import { sql, type Kysely } from 'kysely';

// Frozen: a migration never imports application code. Design and reasons: docs/decisions/0006-narrow-mavlink.md.

export async function up(db: Kysely<any>): Promise<void> {
  // Signal names of every narrow dataset, interned once: a row carries a 4-byte id instead of a
  // ~25-byte name. The set is bounded by the dialect (plus one UNKNOWN_<id> per undecodable id).
  await sql`
    create table narrow_signals (
      id integer generated always as identity primary key,
      name text not null unique
    )
  `.execute(db);

  // The shared narrow table: one row per decoded field (array element, text, or raw payload) of one
  // frame. The key is (dataset, signal, frame_seq): a frame yields each signal once, so a redelivered
  // frame collapses onto the rows it wrote the first time (insert … on conflict do nothing), and the
  // same index serves reading one signal (Query, the channel list). It is the table's only index:
  // a second one, on (dataset, signal, time), halved ingest (docs/PERFORMANCE.md).
  // `time` is the vehicle's raw time on the clock `time_source` names: near 1970 for boot-time
  // samples; alignment to wall time happens at read time (narrow_boot_sessions).
  // No foreign key: a per-row RI check would cost more than the insert itself at ingest rates.
  // Fixed-width columns first, widest first, so no row pays alignment padding.
  await sql`
    create table narrow_samples (
      dataset_id uuid not null,
      frame_seq bigint not null,
      time timestamptz not null,
      received_at timestamptz not null,
      boot_us bigint,
      value_double double precision,
      signal_id integer not null,
      boot_session integer not null,
      time_source text not null check (time_source in ('gps', 'boot', 'agent')),
      value_text text,
      value_bytes bytea,
      primary key (dataset_id, signal_id, frame_seq)
    )
  `.execute(db);

  // One row per narrow dataset that has stored a frame: the MAVLink system id it is bound to (the
  // first stored frame's), the highest frame_seq written (a batch entirely above it cannot collide,
  // so it is a plain insert), and a version bumped by every write, so a writer knows whether its
  // cached boot sessions are current. The row lock serialises the writers of one dataset.
  await sql`
    create table narrow_datasets (
      dataset_id uuid primary key references datasets(id) on delete cascade,
      sysid integer not null,
      max_frame_seq bigint not null default 0,
      version bigint not null default 0
    )
  `.execute(db);

  // Boot sessions of each (dataset, component) and what read-time alignment needs. Times in µs.
  await sql`
    create table narrow_boot_sessions (
      dataset_id uuid not null references datasets(id) on delete cascade,
      boot_session integer not null,
      compid integer not null,
      first_frame_seq bigint not null,
      last_frame_seq bigint not null,
      last_boot_us bigint,
      gps_offset_us bigint,
      gps_offset_frame_seq bigint,
      agent_offset_us bigint,
      first_received_us bigint not null,
      last_received_us bigint not null,
      primary key (dataset_id, boot_session)
    )
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['narrow_boot_sessions', 'narrow_datasets', 'narrow_samples', 'narrow_signals']) {
    await sql`drop table if exists ${sql.table(table)}`.execute(db);
  }
}
