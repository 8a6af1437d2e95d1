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
}

export type Organization = Selectable<OrganizationsTable>;
export type User = Selectable<UsersTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;
export type NewApiKey = Insertable<ApiKeysTable>;
export type DatasetRow = Selectable<DatasetsTable>;
export type ChannelRow = Selectable<ChannelsTable>;
export type ChannelUpdate = Updateable<ChannelsTable>;
export type EventRow = Selectable<EventsTable>;
export type { Generated };
