import type { Migration, MigrationProvider } from 'kysely/migration';
import * as m0001 from './0001-core.ts';
import * as m0002 from './0002-commands.ts';

/** The ordered, static list of migrations. Append only; never edit a released one. */
export const migrations: Record<string, Migration> = {
  '0001-core': m0001,
  '0002-commands': m0002,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
