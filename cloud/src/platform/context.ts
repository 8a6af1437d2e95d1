import type { Config } from './config.ts';
import type { Clock } from './clock.ts';
import type { DatabaseHandle, Db } from '../db/connect.ts';
import type { Logger } from './logger.ts';
import type { Metrics } from './metrics.ts';
import type { LiveBus } from './live-bus.ts';
import type { LimitWatch } from './limit-watch.ts';
import type { Outbox } from './outbox.ts';
import type { Readiness } from './readiness.ts';
import type { AllowList } from '../net/address-policy.ts';
import type { Resolver } from '../net/url-guard.ts';
import type { WebhookTrust } from './webhook-trust.ts';

/** Everything a handler may depend on, wired once by the service. */
export interface AppContext {
  config: Config;
  db: Db;
  database: DatabaseHandle;
  logger: Logger;
  clock: Clock;
  /** Encrypts webhook secrets at rest. */
  secretKey: Uint8Array;
  /**
   * What webhook URLs are checked against: DNS (injectable for tests) and the private-range allow list,
   * read from webhookTrust on every check (the operator may widen or narrow it while the server runs).
   */
  webhookGuard: { resolve: Resolver; readonly allow: AllowList };
  /** The operator's webhook trust: allowed private ranges and extra CA certificates, environment and stored. */
  webhookTrust: WebhookTrust;
  /** This instance's Prometheus series (its own registry). */
  metrics: Metrics;
  /** What /readyz checks. */
  readiness: Readiness;
  /** Where committed delivery jobs go to be published (the delivery engine, wired by service.ts). */
  outbox: Outbox;
  /** Announces committed telemetry to live followers on every replica (NATS core, or in-process without NATS). */
  live: LiveBus;
  /** Where ingest hands each committed batch to the limit rules (limits/watch.ts, wired by service.ts). */
  limits: LimitWatch;
}
