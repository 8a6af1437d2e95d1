import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

/** Row types, one interface per table, as Kysely sees them. */

type CreatedAt = ColumnType<Date, Date | string | undefined, never>;
type Timestamp = ColumnType<Date, Date | string, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
type Json<T = unknown> = ColumnType<T, string, string>;

export interface OrganizationsTable {
  id: string;
  name: string;
  created_at: CreatedAt;
}

export type UserRole = 'owner' | 'member';

export interface UsersTable {
  id: string;
  organization_id: string;
  role: UserRole;
  name: string;
  email: string;
  created_at: CreatedAt;
}

export interface ApiKeysTable {
  id: string;
  organization_id: string;
  /** The user the key acts for; null for keys made for the organization by an operator. */
  user_id: string | null;
  /** sha256 of the whole key; the key itself is shown once and never stored. */
  key_hash: string;
  /** First characters of the key, to recognise it in listings. */
  key_prefix: string;
  scopes: string[];
  created_at: CreatedAt;
  expires_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
}

export interface DeploymentSettingsTable {
  key: string;
  value: Json;
  updated_at: Timestamp;
}

export interface ExperimentsTable {
  id: string;
  organization_id: string;
  name: string;
  description: string;
  created_at: CreatedAt;
}

export interface DatasetsTable {
  id: string;
  organization_id: string;
  experiment_id: string;
  name: string;
  storage_shape: 'wide' | 'narrow';
  codec: string | null;
  dialect: string | null;
  format: string | null;
  /** The wide dataset's physical table; null for narrow datasets (they share one table). */
  table_name: string | null;
  created_at: CreatedAt;
}

export interface ChannelsTable {
  id: string;
  organization_id: string;
  dataset_id: string;
  /** N of ch_N on wide datasets; null on narrow datasets. */
  col_index: number | null;
  /** ch_N on wide datasets, the signal name on narrow ones (the spec's hypertableColName). */
  col_name: string;
  name: string;
  unit: string;
  data_type: string;
  /** SQL type of the physical column, or null when only metadata exists (created through channels/create). */
  physical_type: string | null;
  created_at: CreatedAt;
  updated_at: Timestamp;
}

export interface EventsTable {
  id: string;
  organization_id: string;
  dataset_id: string;
  time: Timestamp;
  kind: string;
  message: string;
  data: Json<Record<string, unknown>>;
  created_at: CreatedAt;
  /** Set on insert and on every update (a LIMIT crossing's end): live followers read events by it. */
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  /** The limit rule whose crossing this LIMIT event is; null for every other event. Unique with (dataset_id, time). */
  limit_rule_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export type LimitCondition = 'above' | 'below' | 'outside';
export type LimitSeverity = 'warning' | 'critical';

/** A bound on one signal: of one dataset, or (dataset_id null) of every dataset of the experiment. */
export interface LimitRulesTable {
  id: string;
  organization_id: string;
  experiment_id: string;
  dataset_id: string | null;
  name: string;
  /** As Query addresses it: "3" for a wide dataset's ch_3, `mavlink.ATTITUDE.roll` for a MAVLink one. */
  signal: string;
  condition: LimitCondition;
  low: number | null;
  high: number | null;
  hold_ms: number;
  severity: LimitSeverity;
  created_at: CreatedAt;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export type LimitPhase = 'clear' | 'pending' | 'active';

/**
 * Where one rule stands on one dataset (limits/crossing.ts): times are µs since the epoch on the clock the
 * dataset's events are stored on. `version` is bumped by every write (compare-and-set between replicas).
 */
export interface LimitStatesTable {
  rule_id: string;
  dataset_id: string;
  phase: LimitPhase;
  since_us: number | null;
  worst_value: number | null;
  worst_us: number | null;
  last_us: number | null;
  /** The open LIMIT event while `phase` is active. */
  event_id: string | null;
  version: ColumnType<number, number | undefined, number>;
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
}

export interface CommandTemplatesTable {
  id: string;
  organization_id: string;
  key: string;
  description: string;
  category: string;
  destructive: boolean;
  args_schema: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  created_at: CreatedAt;
  updated_at: Timestamp;
}

export type CommandStatus = 'logged' | 'queued' | 'acked' | 'nacked' | 'timed_out';

export interface CommandsTable {
  id: string;
  organization_id: string;
  experiment_id: string;
  dataset_id: string;
  command_text: string;
  description: string;
  args: Json<Record<string, unknown>>;
  template_key: string;
  category: string;
  /** Seconds on the experiment's timeline; the list ordering key. */
  rel_time: number;
  issued_at: Timestamp;
  issued_by_name: string;
  issued_by_email: string;
  /** The API key that logged the command (commands logged through the API have no issuing user). */
  issued_by_key_id: string | null;
  status: CommandStatus;
  status_detail: string;
  queued_at: NullableTimestamp;
  delivered_at: NullableTimestamp;
  acked_at: NullableTimestamp;
  ack_deadline_at: NullableTimestamp;
  vehicle_time: NullableTimestamp;
  ack_payload: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  delivery_attempts: ColumnType<number, number | undefined, number>;
  client_token: string | null;
  retracted_at: NullableTimestamp;
  retracted_reason: string | null;
  /** Copied from the template when the command is logged; sent as command.destructive. */
  destructive: ColumnType<boolean, boolean | undefined, boolean>;
}

export interface ArmingsTable {
  dataset_id: string;
  organization_id: string;
  armed_at: Timestamp;
  expires_at: Timestamp;
  armed_by_key_id: string | null;
  armed_by_user_id: string | null;
  reason: string;
  disarmed_at: NullableTimestamp;
  disarmed_by_key_id: string | null;
}

export interface WebhookEndpointsTable {
  id: string;
  organization_id: string;
  label: string;
  url: string;
  secret_ciphertext: string;
  previous_secret_ciphertext: string | null;
  rotating_until: NullableTimestamp;
  disabled_at: NullableTimestamp;
  disabled_reason: string | null;
  consecutive_failures: ColumnType<number, number | undefined, number>;
  deleted_at: NullableTimestamp;
  created_at: CreatedAt;
  updated_at: Timestamp;
  /** Also receives limit events (`limit.crossing`); off unless the organization opted the endpoint in. */
  limit_events: ColumnType<boolean, boolean | undefined, boolean>;
}

export type DeliveryJobState = 'pending' | 'delivered' | 'failed' | 'abandoned';

/** What a delivery job delivers: a dispatched command, or a LIMIT event's start or end. */
export type DeliveryEventType = 'command.dispatched' | 'limit.crossing';

export interface DeliveryJobsTable {
  id: string;
  organization_id: string;
  /** The dispatched command; null for a limit notification. */
  command_id: string | null;
  endpoint_id: string;
  event_type: ColumnType<DeliveryEventType, DeliveryEventType | undefined, DeliveryEventType>;
  /** A limit notification's LIMIT event, its phase, and the body's `event` as it was at that phase. */
  event_id: string | null;
  event_phase: 'started' | 'ended' | null;
  payload: ColumnType<Record<string, unknown> | null, string | null | undefined, string | null>;
  state: ColumnType<DeliveryJobState, DeliveryJobState | undefined, DeliveryJobState>;
  attempts: ColumnType<number, number | undefined, number>;
  created_at: CreatedAt;
  published_at: NullableTimestamp;
  next_attempt_at: NullableTimestamp;
  finished_at: NullableTimestamp;
  /** Set while a worker is attempting the job. */
  leased_until: NullableTimestamp;
  /** Why a job stopped: delivered, a final answer, the deadline, the endpoint gone. */
  finish_reason: string | null;
}

export interface DeliveryAttemptsTable {
  id: string;
  organization_id: string;
  job_id: string;
  /** Null for a limit notification's attempt. */
  command_id: string | null;
  endpoint_id: string;
  endpoint_url: string;
  event_type: string;
  attempt: number;
  status_code: number | null;
  response: string;
  error: string | null;
  duration_ms: number;
  attempted_at: Timestamp;
  /** The X-Sortie-Delivery header value of this attempt. */
  delivery_id: ColumnType<string, string | undefined, string>;
}

export interface NotificationsTable {
  id: string;
  organization_id: string;
  user_id: string;
  kind: string;
  subject: string;
  message: string;
  data: Json<Record<string, unknown>>;
  created_at: Timestamp;
  emailed_at: NullableTimestamp;
}

export interface AckTokensTable {
  token_hash: string;
  command_id: string;
  expires_at: Timestamp;
  used_at: NullableTimestamp;
  created_at: CreatedAt;
}

export interface AckAttemptsTable {
  command_id: string;
  attempted_at: Timestamp;
}

/**
 * M4 aggregate of one bucket of one numeric channel, kept by ingest in the write's transaction
 * (telemetry/rollups.ts). Times are µs since the epoch; `bucket` is a multiple of `width_ms` × 1000.
 */
/** A wide dataset's rollups: per channel group, width and bucket, the channels' M4 aggregates packed in `data` (telemetry/wide/rollup-packs.ts). */
export interface TelemetryRollupPacksTable {
  dataset_id: string;
  /** ch_N index / 16. */
  channel_group: number;
  width_ms: number;
  bucket: number;
  data: Uint8Array;
}

/**
 * A narrow dataset's table of one MAVLink message id (`narrow_m_<dataset hex>_<msgid>`, one row per
 * frame, telemetry/narrow/message-tables.ts) and the signals it has stored a value of
 * (docs/decisions/0006-narrow-mavlink.md). The message tables themselves are made at run time, so they
 * are not in this interface; they are read with the column list message-tables.ts derives.
 */
export interface NarrowMessageTablesTable {
  dataset_id: string;
  msgid: number;
  table_name: string;
  signals: string[];
  /** A log table's message name and columns (telemetry/narrow/message-tables.ts); null on MAVLink tables. */
  message: ColumnType<string | null, string | null | undefined, string | null>;
  columns: ColumnType<unknown | null, string | null | undefined, string | null>;
}

/** One imported log file (imports/): the flight it made, what was found, and the log's metadata. */
export interface LogImportsTable {
  id: string;
  organization_id: string;
  experiment_id: string;
  dataset_id: string;
  sha256: Buffer;
  format: string;
  file_name: string | null;
  bytes: ColumnType<number, number, number>;
  status: 'importing' | 'done';
  report: Json<Record<string, unknown>> | null;
  metadata: Json<Record<string, unknown>>;
  created_at: CreatedAt;
  /** Moved on every few seconds while the import runs (imports/import.ts STALE_IMPORT_MS). */
  updated_at: ColumnType<Date, Date | string | undefined, Date | string>;
  finished_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
}

/** A parameter value of an imported flight: initial (in effect at the start) or a change during it, in log order. */
export interface FlightParametersTable {
  dataset_id: string;
  seq: number;
  name: string;
  value: number;
  boot_us: ColumnType<number | null, number | null, number | null>;
  time: ColumnType<Date | null, Date | string | null, Date | string | null>;
  initial: boolean;
}

/** The system id a narrow dataset is bound to, its highest frame_seq, and a version bumped by every write. */
export interface NarrowDatasetsTable {
  dataset_id: string;
  sysid: number;
  max_frame_seq: ColumnType<number, number | undefined, number>;
  version: ColumnType<number, number | undefined, number>;
  /** True while the dataset's first frames still go to its shared table (docs/decisions/0015). */
  shared_open: ColumnType<boolean, boolean | undefined, boolean>;
}

/** A boot session of one component of a narrow dataset and what read-time alignment needs; µs. */
export interface NarrowBootSessionsTable {
  dataset_id: string;
  boot_session: number;
  compid: number;
  first_frame_seq: number;
  last_frame_seq: number;
  last_boot_us: number | null;
  gps_offset_us: number | null;
  gps_offset_frame_seq: number | null;
  agent_offset_us: number | null;
  first_received_us: number;
  last_received_us: number;
  /** The boot clock rule's state, on the component's newest session (narrow/boot-sessions.ts ClockState). */
  clock_state: unknown | null;
}

export interface Database {
  organizations: OrganizationsTable;
  users: UsersTable;
  api_keys: ApiKeysTable;
  deployment_settings: DeploymentSettingsTable;
  experiments: ExperimentsTable;
  datasets: DatasetsTable;
  channels: ChannelsTable;
  events: EventsTable;
  command_templates: CommandTemplatesTable;
  commands: CommandsTable;
  armings: ArmingsTable;
  webhook_endpoints: WebhookEndpointsTable;
  delivery_jobs: DeliveryJobsTable;
  delivery_attempts: DeliveryAttemptsTable;
  ack_tokens: AckTokensTable;
  ack_attempts: AckAttemptsTable;
  telemetry_rollup_packs: TelemetryRollupPacksTable;
  narrow_message_tables: NarrowMessageTablesTable;
  log_imports: LogImportsTable;
  flight_parameters: FlightParametersTable;
  narrow_datasets: NarrowDatasetsTable;
  narrow_boot_sessions: NarrowBootSessionsTable;
  notifications: NotificationsTable;
  limit_rules: LimitRulesTable;
  limit_states: LimitStatesTable;
}

export type Organization = Selectable<OrganizationsTable>;
export type User = Selectable<UsersTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;
export type NewApiKey = Insertable<ApiKeysTable>;
export type DatasetRow = Selectable<DatasetsTable>;
export type ChannelRow = Selectable<ChannelsTable>;
export type ChannelUpdate = Updateable<ChannelsTable>;
export type EventRow = Selectable<EventsTable>;
export type CommandRow = Selectable<CommandsTable>;
export type CommandTemplateRow = Selectable<CommandTemplatesTable>;
export type ArmingRow = Selectable<ArmingsTable>;
export type WebhookEndpointRow = Selectable<WebhookEndpointsTable>;
export type DeliveryJobRow = Selectable<DeliveryJobsTable>;
export type DeliveryAttemptRow = Selectable<DeliveryAttemptsTable>;
export type NotificationRow = Selectable<NotificationsTable>;
export type LimitRuleRow = Selectable<LimitRulesTable>;
export type LimitStateRow = Selectable<LimitStatesTable>;
export type { Generated };
