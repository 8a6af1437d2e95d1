import { sql, type Kysely } from 'kysely';

// Frozen: a migration never imports application code. Design and reasons: docs/decisions/0014-onboard-logs.md.

export async function up(db: Kysely<any>): Promise<void> {
  // A flight imported from a vehicle's own log keeps one table per message type and instance, like a
  // MAVLink flight's per-message tables; the log describes its own fields, so those tables list their
  // columns (and the message's name) here. MAVLink tables leave both null: the dialect gives them.
  await sql`alter table narrow_message_tables add column message text, add column columns jsonb`.execute(db);

  // One row per imported file: the same bytes imported again answer the flight they made (unique per
  // organization on the file's SHA-256), and what the import found (counts, span, warnings, the log's
  // metadata) stays readable with the flight.
  await sql`
    create table log_imports (
      id uuid primary key,
      organization_id uuid not null references organizations(id) on delete cascade,
      experiment_id uuid not null references experiments(id) on delete cascade,
      dataset_id uuid not null references datasets(id) on delete cascade,
      sha256 bytea not null,
      format text not null,
      file_name text,
      bytes bigint not null,
      status text not null,
      report jsonb,
      metadata jsonb not null default '{}',
      created_at timestamptz not null default now(),
      -- Moved on while the import runs: an import that stopped moving was cut short by a server stop.
      updated_at timestamptz not null default now(),
      finished_at timestamptz,
      unique (organization_id, sha256)
    )
  `.execute(db);
  await sql`create index log_imports_dataset_idx on log_imports (dataset_id)`.execute(db);

  // Parameters of an imported flight: the values it started with (initial) and every change during it,
  // in log order. A MAVLink flight's parameters are read from its PARAM_VALUE messages instead.
  await sql`
    create table flight_parameters (
      dataset_id uuid not null references datasets(id) on delete cascade,
      seq integer not null,
      name text not null,
      value float8 not null,
      boot_us bigint,
      time timestamptz,
      initial boolean not null,
      primary key (dataset_id, seq)
    )
  `.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop table if exists flight_parameters`.execute(db);
  await sql`drop table if exists log_imports`.execute(db);
  await sql`alter table narrow_message_tables drop column if exists message, drop column if exists columns`.execute(db);
}
