import { sql, type Kysely } from 'kysely';

// Frozen: a migration never imports application code.

/**
 * Limits the server watches (docs/decisions/0011-limits.md).
 *
 * - `limit_rules`: a bound on one signal, on one dataset (`dataset_id` set) or on every dataset of an
 *   experiment, those created later included (`dataset_id` null).
 * - `limit_states`: where each rule stands on each dataset (clear, waiting out its hold time, or an
 *   open crossing and its LIMIT event), so a crossing survives batches, restarts and replicas. `version`
 *   is bumped by every write: a replica writes a state only from the version it read.
 * - `events.limit_rule_id`: the rule a LIMIT event was made by. One crossing is one event: the unique
 *   index on (rule, dataset, start) makes a second event for the same crossing impossible, whatever
 *   replays, redeliveries or replicas do. No foreign key: a deleted rule's events stay as history, and
 *   deleting it must not rewrite them.
 */
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('limit_rules')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('experiment_id', 'uuid', (c) => c.notNull().references('experiments.id').onDelete('cascade'))
    .addColumn('dataset_id', 'uuid', (c) => c.references('datasets.id').onDelete('cascade'))
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('signal', 'text', (c) => c.notNull())
    .addColumn('condition', 'text', (c) => c.notNull().check(sql`condition in ('above', 'below', 'outside')`))
    .addColumn('low', 'float8')
    .addColumn('high', 'float8')
    .addColumn('hold_ms', 'integer', (c) => c.notNull().check(sql`hold_ms >= 0`))
    .addColumn('severity', 'text', (c) => c.notNull().check(sql`severity in ('warning', 'critical')`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addCheckConstraint(
      'limit_rules_bounds',
      sql`(condition = 'above' and high is not null and low is null)
        or (condition = 'below' and low is not null and high is null)
        or (condition = 'outside' and low is not null and high is not null and low < high)`,
    )
    .execute();
  // Ingest reads a dataset's rules (its own and its experiment's) by these two.
  await sql`create index limit_rules_dataset_idx on limit_rules (dataset_id) where dataset_id is not null`.execute(db);
  await db.schema.createIndex('limit_rules_experiment_idx').on('limit_rules').column('experiment_id').execute();

  await db.schema
    .createTable('limit_states')
    .addColumn('rule_id', 'uuid', (c) => c.notNull().references('limit_rules.id').onDelete('cascade'))
    .addColumn('dataset_id', 'uuid', (c) => c.notNull().references('datasets.id').onDelete('cascade'))
    .addColumn('phase', 'text', (c) => c.notNull().check(sql`phase in ('clear', 'pending', 'active')`))
    // µs since the epoch, on the clock the dataset's events are stored on.
    .addColumn('since_us', 'int8')
    .addColumn('worst_value', 'float8')
    .addColumn('worst_us', 'int8')
    .addColumn('last_us', 'int8')
    .addColumn('event_id', 'uuid')
    .addColumn('version', 'int8', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('limit_states_pkey', ['dataset_id', 'rule_id'])
    .execute();
  await db.schema.createIndex('limit_states_rule_idx').on('limit_states').column('rule_id').execute();

  await sql`alter table events add column if not exists limit_rule_id uuid`.execute(db);
  await sql`create unique index events_limit_crossing_key on events (limit_rule_id, dataset_id, time) where limit_rule_id is not null`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql`drop index if exists events_limit_crossing_key`.execute(db);
  await sql`alter table events drop column if exists limit_rule_id`.execute(db);
  await db.schema.dropTable('limit_states').ifExists().execute();
  await db.schema.dropTable('limit_rules').ifExists().execute();
}
