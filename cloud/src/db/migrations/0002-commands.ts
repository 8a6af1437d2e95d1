import { sql, type Kysely } from 'kysely';

// Frozen: a migration never imports application code.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('command_templates')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('category', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('destructive', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('args_schema', 'jsonb')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('command_templates_org_key', ['organization_id', 'key'])
    .execute();

  await db.schema
    .createTable('commands')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('experiment_id', 'uuid', (c) => c.notNull().references('experiments.id').onDelete('cascade'))
    .addColumn('dataset_id', 'uuid', (c) => c.notNull().references('datasets.id').onDelete('cascade'))
    .addColumn('command_text', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('args', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('template_key', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('category', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('rel_time', 'double precision', (c) => c.notNull())
    .addColumn('issued_at', 'timestamptz', (c) => c.notNull())
    .addColumn('issued_by_name', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('issued_by_email', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('issued_by_key_id', 'uuid')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('status_detail', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('queued_at', 'timestamptz')
    .addColumn('delivered_at', 'timestamptz')
    .addColumn('acked_at', 'timestamptz')
    .addColumn('ack_deadline_at', 'timestamptz')
    .addColumn('vehicle_time', 'timestamptz')
    .addColumn('ack_payload', 'jsonb')
    .addColumn('delivery_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('client_token', 'text')
    .addColumn('retracted_at', 'timestamptz')
    .addColumn('retracted_reason', 'text')
    .execute();
  // Idempotency is the index's job, not a read-then-write: two racing creates cannot both insert.
  await sql`create unique index commands_client_token_key on commands (organization_id, client_token) where client_token is not null`.execute(db);
  await db.schema.createIndex('commands_timeline_idx').on('commands').columns(['dataset_id', 'rel_time', 'issued_at']).execute();
  await sql`create index commands_deadline_idx on commands (ack_deadline_at) where status = 'queued'`.execute(db);

  await db.schema
    .createTable('armings')
    .addColumn('dataset_id', 'uuid', (c) => c.primaryKey().references('datasets.id').onDelete('cascade'))
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('armed_at', 'timestamptz', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('armed_by_key_id', 'uuid')
    .addColumn('armed_by_user_id', 'uuid')
    .addColumn('reason', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('disarmed_at', 'timestamptz')
    .addColumn('disarmed_by_key_id', 'uuid')
    .execute();

  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('label', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('url', 'text', (c) => c.notNull())
    // Encrypted with the deployment key (AES-256-GCM); the plaintext is needed to sign, so it is kept.
    .addColumn('secret_ciphertext', 'text', (c) => c.notNull())
    .addColumn('previous_secret_ciphertext', 'text')
    .addColumn('rotating_until', 'timestamptz')
    .addColumn('disabled_at', 'timestamptz')
    .addColumn('disabled_reason', 'text')
    .addColumn('consecutive_failures', 'integer', (c) => c.notNull().defaultTo(0))
    // Soft delete: deliveries stop at once, history keeps pointing at the row.
    .addColumn('deleted_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`create index webhook_endpoints_live_idx on webhook_endpoints (organization_id) where deleted_at is null`.execute(db);

  // The outbox: written in the dispatch transaction, one job per enabled endpoint.
  await db.schema
    .createTable('delivery_jobs')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('command_id', 'uuid', (c) => c.notNull().references('commands.id').onDelete('cascade'))
    .addColumn('endpoint_id', 'uuid', (c) => c.notNull().references('webhook_endpoints.id'))
    .addColumn('state', 'text', (c) => c.notNull().defaultTo('pending'))
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('published_at', 'timestamptz')
    .addColumn('next_attempt_at', 'timestamptz')
    .addColumn('finished_at', 'timestamptz')
    .addUniqueConstraint('delivery_jobs_command_endpoint', ['command_id', 'endpoint_id'])
    .execute();
  await sql`create index delivery_jobs_unpublished_idx on delivery_jobs (created_at) where published_at is null`.execute(db);

  await db.schema
    .createTable('delivery_attempts')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id').onDelete('cascade'))
    .addColumn('job_id', 'uuid', (c) => c.notNull().references('delivery_jobs.id').onDelete('cascade'))
    .addColumn('command_id', 'uuid', (c) => c.notNull().references('commands.id').onDelete('cascade'))
    .addColumn('endpoint_id', 'uuid', (c) => c.notNull())
    .addColumn('endpoint_url', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('status_code', 'integer')
    .addColumn('response', 'text', (c) => c.notNull().defaultTo(''))
    .addColumn('error', 'text')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('attempted_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('delivery_attempts_command_idx').on('delivery_attempts').columns(['command_id', 'attempted_at']).execute();

  // Only hashes of ack tokens are kept; the token itself travels once, in the delivery body.
  await db.schema
    .createTable('ack_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('command_id', 'uuid', (c) => c.notNull().references('commands.id').onDelete('cascade'))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('used_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  // Ack attempts counted in Postgres so the limit holds across several cloud processes.
  await db.schema
    .createTable('ack_attempts')
    .addColumn('command_id', 'uuid', (c) => c.notNull())
    .addColumn('attempted_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('ack_attempts_command_idx').on('ack_attempts').columns(['command_id', 'attempted_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ['ack_attempts', 'ack_tokens', 'delivery_attempts', 'delivery_jobs', 'webhook_endpoints', 'armings', 'commands', 'command_templates']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
