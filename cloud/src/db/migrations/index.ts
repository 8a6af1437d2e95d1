import type { Migration, MigrationProvider } from 'kysely/migration';
import * as m0001 from './0001-core.ts';
import * as m0002 from './0002-commands.ts';
import * as m0003 from './0003-telemetry-rollups.ts';
import * as m0004 from './0004-delivery-engine.ts';
import * as m0005 from './0005-narrow-telemetry.ts';
import * as m0006 from './0006-narrow-boot-clock.ts';
import * as m0007 from './0007-narrow-message-tables.ts';
import * as m0008 from './0008-api-key-changes.ts';
import * as m0009 from './0009-delivery-row-costs.ts';
import * as m0010 from './0010-live-events.ts';
import * as m0011 from './0011-limit-rules.ts';
import * as m0012 from './0012-limit-webhooks.ts';
import * as m0013 from './0013-endpoint-attempts.ts';
import * as m0014 from './0014-onboard-logs.ts';
import * as m0015 from './0015-narrow-shared-rows.ts';
import * as m0016 from './0016-rollup-packs.ts';

/** The ordered, static list of migrations. Append only; never edit a released one. */
export const migrations: Record<string, Migration> = {
  '0001-core': m0001,
  '0002-commands': m0002,
  '0003-telemetry-rollups': m0003,
  '0004-delivery-engine': m0004,
  '0005-narrow-telemetry': m0005,
  '0006-narrow-boot-clock': m0006,
  '0007-narrow-message-tables': m0007,
  '0008-api-key-changes': m0008,
  '0009-delivery-row-costs': m0009,
  '0010-live-events': m0010,
  '0011-limit-rules': m0011,
  '0012-limit-webhooks': m0012,
  '0013-endpoint-attempts': m0013,
  '0014-onboard-logs': m0014,
  '0015-narrow-shared-rows': m0015,
  '0016-rollup-packs': m0016,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: async () => migrations,
};
