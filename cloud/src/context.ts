import type { Config } from './config.ts';
import type { Clock } from './clock.ts';
import type { DatabaseHandle, Db } from './db/connect.ts';
import type { Logger } from './logger.ts';

/** Everything a handler may depend on, wired once by the service. */
export interface AppContext {
  config: Config;
  db: Db;
  database: DatabaseHandle;
  logger: Logger;
  clock: Clock;
  /** Encrypts webhook secrets at rest. */
  secretKey: Uint8Array;
}
