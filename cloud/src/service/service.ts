import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import { sql } from 'kysely';
import { systemClock, type Clock } from '../platform/clock.ts';
import type { Config } from '../platform/config.ts';
import type { AppContext } from '../platform/context.ts';
import { detectTimescale, migrateToLatest, openDatabase, PRELOAD_FIX, withStartupLock, type DatabaseHandle } from '../db/connect.ts';
import { applyTimescaleLayout, TIMESCALE_MIN_VERSION } from '../db/timescale.ts';
import { markEmbeddedInUse } from '../db/embedded-lock.ts';
import { serveAdminSocket, type AdminSocket } from '../admin/socket.ts';
import { applyNarrowTimescaleLayout, moveLegacyNarrowSamples } from '../telemetry/sinks.ts';
import { startSweeper } from '../commands/sweeper.ts';
import { startHttpKeyCache } from '../auth/http-key-cache.ts';
import { DeliveryEngine, type DeliveryEngineOverrides } from '../delivery/engine.ts';
import { outboxStatements } from '../delivery/outbox-port.ts';
import { startGrpcServer, type GrpcServer } from '../grpc/server.ts';
import { createHttpApp } from './app.ts';
import { gracefulCloser } from '../http/graceful-close.ts';
import { answerParserErrors, httpServerOptions } from '../http/client-error.ts';
import { createLogger, type Logger } from '../platform/logger.ts';
import { Metrics } from '../platform/metrics.ts';
import { LocalLiveBus, NatsLiveBus, type LiveBus } from '../platform/live-bus.ts';
import { liveFeeds } from '../telemetry/follow.ts';
import type { Outbox, OutboxJob } from '../platform/outbox.ts';
import { NO_LIMIT_WATCH } from '../platform/limit-watch.ts';
import { LimitWatcher } from '../limits/watch.ts';
import { Readiness } from '../platform/readiness.ts';
import { resolveSecretKey } from '../platform/secret-key.ts';
import { parseAllowCidrs } from '../net/address-policy.ts';
import { WebhookTrust } from '../platform/webhook-trust.ts';
import { systemResolver, type Resolver } from '../net/url-guard.ts';

export interface ServiceOverrides {
  clock?: Clock;
  logger?: Logger;
  /** DNS for webhook URL checks; tests answer from a table. */
  resolver?: Resolver;
  delivery?: DeliveryEngineOverrides;
  /**
   * Runs after a dispatch commits and before its jobs are published. Crash tests kill the process here
   * to prove the relay delivers what was committed but never published.
   */
  afterDispatchCommit?: (jobs: readonly OutboxJob[]) => void;
}

/** A service's metrics and readiness, made before anything that reports to them. */
function createObservability(database: DatabaseHandle, logger: Logger): { metrics: Metrics; readiness: Readiness } {
  const metrics = new Metrics({ logger });
  const readiness = new Readiness(logger);
  readiness.set('database', () => sql`select 1`.execute(database.db));
  return { metrics, readiness };
}

/**
 * Start-up's schema work, in order: which TimescaleDB path the database takes (first: a database that
 * uses TimescaleDB on a server that no longer loads it fails any DDL through the extension's event
 * triggers, so it is refused before a migration can stumble on it), migrations, the move of narrow data
 * of the former shape, then the TimescaleDB layout (tables written before it was present become
 * hypertables). Runs under the start-up lock, so replicas starting together on one database each find
 * the work of the first done.
 */
async function prepareDatabase(database: DatabaseHandle, logger: Logger): Promise<void> {
  const timescale = await detectTimescale(database);
  if (timescale.path === 'too-old') {
    logger.warn({ version: timescale.version, minimum: TIMESCALE_MIN_VERSION }, 'TimescaleDB too old for hypertables; using plain tables');
  } else if (timescale.path === 'not-preloaded') {
    logger.warn(
      { version: timescale.version },
      `TimescaleDB is installed but not preloaded, so Sortie uses plain tables: ${PRELOAD_FIX}; the next start converts the tables written meanwhile`,
    );
  }
  database.timescale = timescale.path === 'in-use';
  const applied = await migrateToLatest(database.db);
  if (applied.length > 0) logger.info({ applied }, 'migrations applied');
  // Narrow data of the former one-row-per-field shape moves to one row per message (decision 0006).
  const moved = await moveLegacyNarrowSamples(database.db);
  if (moved.datasets > 0) logger.info(moved, 'narrow samples moved to one row per message');
  if (!database.timescale) return;
  // Wide tables written before TimescaleDB was present become hypertables (decision 0007).
  const converted = await applyTimescaleLayout(database.db);
  if (converted.length > 0) logger.info({ tables: converted }, 'wide tables moved to hypertables with compression');
  // Narrow message tables likewise (decision 0007); new ones are made so by the writer.
  const narrow = await applyNarrowTimescaleLayout(database.db);
  if (narrow.length > 0) logger.info({ tables: narrow }, 'narrow message tables moved to hypertables with compression');
}

/** The cloud process: create wires dependencies and migrates, start listens, destroy lets go of everything. */
export class SortieService {
  readonly ctx: AppContext;
  readonly delivery: DeliveryEngine;
  #http: ServerType | undefined;
  #httpCloser: ReturnType<typeof gracefulCloser> | undefined;
  #grpc: GrpcServer | undefined;
  #sweeper: { stop(): Promise<void> } | undefined;
  #keys: { stop(): Promise<void> } | undefined;
  #releaseEmbedded: (() => void) | undefined;
  #adminSocket: AdminSocket | undefined;
  #destroyed: Promise<void> | undefined;

  private constructor(ctx: AppContext, delivery: DeliveryEngine) {
    this.ctx = ctx;
    this.delivery = delivery;
  }

  static async create(config: Config, overrides: ServiceOverrides = {}): Promise<SortieService> {
    const logger = overrides.logger ?? createLogger(config.logLevel);
    const secretKey = await resolveSecretKey(config);
    // Refused before the database is opened: a typo in the allow list is a start-up error, not a surprise later.
    parseAllowCidrs(config.webhook.allowCidrs);
    const database = await openDatabase({
      url: config.databaseUrl,
      dataDir: config.dataDir,
      onPoolError: (err) => logger.warn({ err }, 'idle database connection lost; the pool replaces it'),
    });
    try {
      await withStartupLock(database, () => prepareDatabase(database, logger));
    } catch (error) {
      await database.close();
      throw error;
    }
    logger.info({ database: database.kind, timescale: database.timescale }, 'database ready');
    // The engine is made from the context (DeliveryEngine.create takes ctx), so the context's outbox port
    // cannot hold the engine when the context is made: it forwards to the engine attached just below.
    // Nothing can reach the port before that: only start() opens the listeners that dispatch (and jobs
    // that did arrive early would only wait in the outbox for the relay).
    let engine: DeliveryEngine | undefined;
    const outbox: Outbox = {
      ...outboxStatements,
      committed: (jobs, inline = []) => {
        overrides.afterDispatchCommit?.([...jobs, ...inline]);
        engine?.committed(jobs, inline);
      },
      reserveInline: (wanted) => engine?.reserveInline(wanted) ?? 0,
      releaseInline: (count) => engine?.releaseInline(count),
    };
    let webhookTrust: WebhookTrust;
    let live: LiveBus;
    try {
      // Embedded, every change of the stored trust is made in this process (the admin CLI hands its
      // command to the running server), so only PostgreSQL needs reading again.
      webhookTrust = await WebhookTrust.open({ db: database.db, logger, allowCidrs: config.webhook.allowCidrs, caFile: config.webhook.caFile, poll: database.kind !== 'pglite' });
    } catch (error) {
      await database.close();
      throw error;
    }
    try {
      live = config.natsUrl ? await NatsLiveBus.connect({ url: config.natsUrl, namespace: config.natsNamespace, logger }) : new LocalLiveBus(logger);
    } catch (error) {
      webhookTrust.stop();
      await database.close();
      throw error;
    }
    const ctx: AppContext = {
      config,
      db: database.db,
      database,
      logger,
      clock: overrides.clock ?? systemClock,
      secretKey,
      webhookGuard: {
        resolve: overrides.resolver ?? systemResolver,
        get allow() {
          return webhookTrust.allow;
        },
      },
      webhookTrust,
      ...createObservability(database, logger),
      outbox,
      live,
      limits: NO_LIMIT_WATCH,
    };
    // The watcher writes LIMIT events and their webhook jobs through the context it is part of.
    ctx.limits = new LimitWatcher(ctx);
    try {
      engine = await DeliveryEngine.create(ctx, overrides.delivery);
    } catch (error) {
      webhookTrust.stop();
      await live.close();
      await database.close();
      throw error;
    }
    return new SortieService(ctx, engine);
  }

  async start(): Promise<void> {
    if (this.ctx.database.kind === 'pglite') {
      // The embedded database is this process's alone: marked before anything answers (a readiness probe
      // that passes means the admin CLI will not open it), and admin commands (the first key of the quick
      // start among them) come in through the data dir's socket and run here, with no restart.
      this.#releaseEmbedded = markEmbeddedInUse(this.ctx.config.dataDir);
      this.#adminSocket = await serveAdminSocket(this.ctx);
    }
    // Before the listeners: HTTP key checks are cached only while API key changes are heard.
    this.#keys = await startHttpKeyCache(this.ctx);
    const app = createHttpApp(this.ctx, { sendWebhook: this.delivery.send });
    const { host, port } = this.ctx.config.http;
    await new Promise<void>((resolve, reject) => {
      const server = serve({ fetch: app.fetch, hostname: host, port, serverOptions: httpServerOptions(this.ctx.config.http.timeouts) }, () => resolve());
      server.once('error', reject);
      answerParserErrors(server as Server, this.ctx.logger);
      this.#http = server;
      this.#httpCloser = gracefulCloser(server as Server);
    });
    this.ctx.logger.info({ url: `http://${host}:${this.httpPort}` }, 'HTTP API listening');
    // A wildcard bind address is not something a browser can open; name the loopback one instead.
    const browserHost = host === '0.0.0.0' || host === '::' ? 'localhost' : host.includes(':') ? `[${host}]` : host;
    this.ctx.logger.info({ url: `http://${browserHost}:${this.httpPort}/` }, `console: open http://${browserHost}:${this.httpPort}/ in a browser`);
    this.#grpc = await startGrpcServer(this.ctx);
    this.#sweeper = startSweeper(this.ctx);
    await this.delivery.start();
  }

  get httpPort(): number {
    return (this.#http?.address() as AddressInfo | null)?.port ?? 0;
  }

  get httpUrl(): string {
    return `http://127.0.0.1:${this.httpPort}`;
  }

  /** The bound gRPC port (SORTIE_GRPC_PORT 0 picks a free one). */
  get grpcPort(): number {
    return this.#grpc?.port ?? 0;
  }

  get grpcUrl(): string {
    return `http://127.0.0.1:${this.grpcPort}`;
  }

  /**
   * Graceful stop, in an order that loses nothing: stop accepting (requests in flight are answered),
   * then let delivery finish its attempts in flight and hand back queued work it has not started, then
   * close the pool. main.ts bounds the whole with SORTIE_SHUTDOWN_GRACE_SECONDS. Calling it again
   * returns the same stop.
   */
  destroy(): Promise<void> {
    this.#destroyed ??= this.#destroy();
    return this.#destroyed;
  }

  async #destroy(): Promise<void> {
    const { logger } = this.ctx;
    // First, so a load balancer polling /readyz stops routing here (/healthz stays 200).
    this.ctx.readiness.markShuttingDown();
    // Live followers never end on their own: end them (UNAVAILABLE, "follow again") so the listeners can close.
    liveFeeds(this.ctx).close();
    logger.info({ phase: 'stop-accepting' }, 'shutdown: closing listeners; requests in flight finish');
    await this.#sweeper?.stop();
    this.#sweeper = undefined;
    const http = this.#httpCloser;
    this.#http = undefined;
    this.#httpCloser = undefined;
    const grpc = this.#grpc;
    this.#grpc = undefined;
    // Streams may stay open for good; cut them early enough to leave time for delivery and the pool.
    const grace = this.ctx.config.shutdownGraceMs;
    // Both carry streams now (Follow on HTTP too): a connection whose client stopped reading is cut then.
    const forceAfterMs = Math.max(grace / 2, grace - 5000);
    await Promise.all([http?.close({ forceAfterMs }), grpc?.close({ forceAfterMs }), this.#adminSocket?.close()]);
    this.#adminSocket = undefined;
    await this.#keys?.stop();
    this.#keys = undefined;
    // Limit evaluations handed over by the last batches are stored (their webhook jobs go to delivery next).
    await this.ctx.limits.settled();
    // After HTTP: no new dispatch can arrive; attempts in flight finish and are recorded.
    logger.info({ phase: 'drain-delivery' }, 'shutdown: listeners closed; finishing delivery attempts in flight');
    await this.delivery.stop();
    this.ctx.webhookTrust.stop();
    await this.ctx.live.close();
    logger.info({ phase: 'close-database' }, 'shutdown: delivery stopped; closing the database');
    await this.ctx.database.close();
    this.#releaseEmbedded?.();
    this.#releaseEmbedded = undefined;
  }
}
