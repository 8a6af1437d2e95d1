import { isApiKeyFormat } from '@sortie/contracts';
import pg from 'pg';
import type { Db } from '../db/connect.ts';
import type { AppContext } from '../platform/context.ts';
import type { Logger } from '../platform/logger.ts';
import { apiKeyHash, checkApiKey, checkApiKeyHash, onKeyChangedHere, type KeyCheck } from './api-keys.ts';

/** The channel migration 0008's trigger announces every changed key on (payload: its hash, or `*`). */
export const API_KEY_CHANNEL = 'sortie_api_keys';
/** The listening connection's name in pg_stat_activity (operators and tests find it by this). */
export const KEY_LISTENER_APPLICATION = 'sortie-key-listener';

/**
 * A passing check is kept at most this long even while no change is announced: it bounds what a
 * listening connection that died without the socket noticing (no FIN, no RST) could leave standing.
 */
const ENTRY_MS = 60_000;
/** Bound so that many distinct keys cannot grow memory; oldest entries go first. */
const MAX_ENTRIES = 10_000;
/** Waits between attempts to listen again after the connection was lost. */
const RECONNECT_MS = [100, 250, 500, 1000, 2000, 5000];

/**
 * HTTP key checks without a round trip per request, and still no grace after a revoke: the spec makes a
 * revoked or expired key a 401 at once on HTTP (only gRPC may lag, auth/key-cache.ts).
 *
 * A passing check is kept, by key hash, only while this process LISTENs on `sortie_api_keys`. The
 * database announces every change of a key row there at its commit (migration 0008, a trigger: revoke,
 * scopes, expiry, delete, truncate); each process drops that key and confirms in api_key_listeners,
 * and a revoke (api-keys.ts) returns only once every listening process has confirmed. So the next
 * request after a revoke, on any replica, reads the database again. (A notification alone would not
 * do: on a busy machine the listening backend and process can take milliseconds to be scheduled, longer
 * than a client takes to send its next request.) While the listening connection is down (not yet
 * connected, lost, reconnecting) nothing is cached: every request asks the database. Losing it drops
 * every entry, because changes made while nobody listened are not announced again.
 *
 * A check started before an announcement and answered after it is not kept (it may have read the key
 * before the change), nor one started before the listening connection was (re)established.
 *
 * Embedded (PGlite): the process is the database's only user (the admin CLI refuses a folder in use), so
 * the code that changes keys (api-keys.ts) tells this process's caches itself and no connection listens.
 */
export class HttpKeyCache {
  readonly #db: Db;
  readonly #logger: Logger;
  readonly #connectionString: string | undefined;
  #entries = new Map<string, { check: Promise<KeyCheck>; until: number }>();
  /** Whether a change made now will reach us: listening (Postgres), or always (embedded). */
  #listening: boolean;
  /** Bumped whenever the listening state changes, so checks started in another state are not kept. */
  #epoch = 0;
  #client: pg.Client | undefined;
  #stopped = false;
  #failures = 0;
  #reconnect: ReturnType<typeof setTimeout> | undefined;
  readonly #unsubscribe: () => void;

  constructor(input: { db: Db; logger: Logger; connectionString?: string }) {
    this.#db = input.db;
    this.#logger = input.logger;
    this.#connectionString = input.connectionString;
    this.#listening = input.connectionString === undefined;
    this.#unsubscribe = onKeyChangedHere((hash) => this.#changed(hash));
  }

  /** Whether passing checks are being kept right now (tests, and the reason an operator may ask). */
  get caching(): boolean {
    return this.#listening;
  }

  /** The key check of api-keys.ts, from the cache when it may be. */
  async check(presented: string | undefined, now: Date): Promise<KeyCheck> {
    if (!presented || !isApiKeyFormat(presented)) return { ok: false, reason: 'malformed' };
    const hash = apiKeyHash(presented);
    if (!this.#listening) return checkApiKeyHash(this.#db, hash, now);
    const at = now.getTime();
    const cached = this.#entries.get(hash);
    // A revoke has waited for this process to drop the key (api-keys.ts keyChangesSeen), so an entry
    // still here is one no finished revoke applies to.
    if (cached && cached.until > at) return cached.check;
    return this.#lookup(hash, now);
  }

  #lookup(hash: string, now: Date): Promise<KeyCheck> {
    const epoch = this.#epoch;
    const check = checkApiKeyHash(this.#db, hash, now);
    const entry = { check, until: now.getTime() + ENTRY_MS };
    this.#entries.delete(hash);
    this.#entries.set(hash, entry);
    while (this.#entries.size > MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value!);
    const forget = () => {
      if (this.#entries.get(hash) === entry) this.#entries.delete(hash);
    };
    // Only a passing check is kept (a failing one costs a round trip, as garbage should), and only if
    // nothing changed the listening state meanwhile; an announcement meanwhile already removed it.
    check.then((result) => (!result.ok || this.#epoch !== epoch) && forget(), forget);
    return check;
  }

  #changed(hash: string): void {
    if (hash === '*') this.#entries.clear();
    else this.#entries.delete(hash);
  }

  #setListening(listening: boolean): void {
    this.#listening = listening;
    this.#epoch += 1;
    this.#entries.clear();
  }

  /** Start listening (Postgres); resolves after the first attempt, connected or not (it keeps trying). */
  async start(): Promise<void> {
    if (this.#connectionString === undefined) return;
    await this.#connect();
  }

  async #connect(): Promise<void> {
    this.#reconnect = undefined;
    if (this.#stopped) return;
    const client = new pg.Client({ connectionString: this.#connectionString, application_name: KEY_LISTENER_APPLICATION, keepAlive: true });
    client.on('notification', (n) => {
      if (n.channel !== API_KEY_CHANNEL || this.#client !== client) return;
      const [seq, hash] = (n.payload ?? '0:*').split(':');
      this.#changed(hash ?? '*');
      // Dropped: say so, for the revoke waiting on every process (api-keys.ts keyChangesSeen).
      client
        .query('update api_key_listeners set seen = greatest(seen, $1) where pid = pg_backend_pid()', [seq])
        .catch((err) => this.#lost(client, err));
    });
    client.on('error', (err) => this.#lost(client, err));
    client.on('end', () => this.#lost(client));
    try {
      await client.connect();
      await client.query(`listen ${API_KEY_CHANNEL}`);
      // Listed from here, so a revoke waits for this process too. Rows of connections that are gone
      // are cleared on the way (a waiting revoke ignores them anyway).
      await client.query(`
        with gone as (delete from api_key_listeners where pid not in (select pid from pg_stat_activity where pid is not null))
        insert into api_key_listeners (pid, seen) values (pg_backend_pid(), 0)
        on conflict (pid) do update set seen = 0, since = now()
      `);
    } catch (err) {
      client.removeAllListeners('end');
      client.on('error', () => {});
      void client.end().catch(() => {});
      this.#retry(err);
      return;
    }
    if (this.#stopped) {
      await client.end().catch(() => {});
      return;
    }
    // From here every committed change reaches us; checks from now on may be kept.
    this.#client = client;
    this.#setListening(true);
    if (this.#failures > 0) this.#logger.info('API key changes heard again; HTTP key checks cached again');
    this.#failures = 0;
  }

  #lost(client: pg.Client, err?: unknown): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    this.#setListening(false);
    client.on('error', () => {});
    void client.end().catch(() => {});
    if (!this.#stopped) this.#retry(err);
  }

  #retry(err: unknown): void {
    if (this.#stopped) return;
    if (this.#failures === 0) this.#logger.warn({ err }, 'not listening for API key changes; every HTTP key check asks the database until it listens again');
    const wait = RECONNECT_MS[Math.min(this.#failures, RECONNECT_MS.length - 1)]!;
    this.#failures += 1;
    this.#reconnect = setTimeout(() => void this.#connect(), wait);
    this.#reconnect.unref();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe();
    clearTimeout(this.#reconnect);
    const client = this.#client;
    this.#client = undefined;
    this.#setListening(false);
    if (client) {
      client.on('error', () => {});
      await client.end().catch(() => {});
    }
  }
}

/** The cache of each running service, by its database handle (requireScope reaches it through ctx). */
const caches = new WeakMap<Db, HttpKeyCache>();

/** Start the HTTP key cache of a service (service.ts, before it listens); stop it after HTTP closed. */
export async function startHttpKeyCache(ctx: AppContext): Promise<{ cache: HttpKeyCache; stop(): Promise<void> }> {
  const cache = new HttpKeyCache({
    db: ctx.db,
    logger: ctx.logger,
    connectionString: ctx.database.kind === 'postgres' ? ctx.config.databaseUrl : undefined,
  });
  caches.set(ctx.db, cache);
  await cache.start();
  return {
    cache,
    stop: async () => {
      if (caches.get(ctx.db) === cache) caches.delete(ctx.db);
      await cache.stop();
    },
  };
}

/** A key check for an HTTP request: from the service's cache, or from the database when none runs. */
export function httpKeyCheck(ctx: AppContext, presented: string | undefined, now: Date): Promise<KeyCheck> {
  return caches.get(ctx.db)?.check(presented, now) ?? checkApiKey(ctx.db, presented, now);
}
