import type { Migration, MigrationProvider } from 'kysely/migration';
import * as m0001 from './0001-core.ts';

/** The ordered, static list of migrations. Append only; never edit a released one. */
export const migrations: Record<string, Migration> = {
  '0001-core': m0001,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
