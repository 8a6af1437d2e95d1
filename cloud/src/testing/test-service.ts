import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Scope } from '@sortie/contracts';
import { SCOPES } from '@sortie/contracts';
import { issueApiKey } from '../auth/api-keys.ts';
import { createOrganization, createUser } from '../auth/organizations.ts';
import { ManualClock } from '../platform/clock.ts';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { SortieService, type ServiceOverrides } from '../service/service.ts';
import type { Resolver } from '../net/url-guard.ts';
import { dropDeliveryStream } from './nats-server.ts';
import { tableResolver } from './table-resolver.ts';
import { createTestDatabase, type TestDatabase } from './test-database.ts';

export interface TestOrg {
  organizationId: string;
  ownerUserId: string;
  memberUserId: string;
  /** A key holding every scope, for the owner. */
  key: string;
  /** Issue another key for this organization. */
  keyWith(scopes: Scope[], options?: { expiresAt?: Date; user?: 'owner' | 'member' }): Promise<{ apiKey: string; keyId: string }>;
}

export interface TestService {
  service: SortieService;
  clock: ManualClock;
  url: string;
  /** fetch against the service with JSON helpers. */
  call(method: string, path: string, options?: { key?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> }): Promise<TestResponse>;
  createOrg(name?: string): Promise<TestOrg>;
  stop(): Promise<void>;
}

export interface TestResponse {
  status: number;
  headers: Headers;
  body: any;
}

/**
 * Tests never ask real DNS (no traffic leaves loopback): every name is unknown unless a test passes
 * its own resolver.
 */
const offlineResolver: Resolver = tableResolver({});

/**
 * Start the real service on a free port. `embedded: true` runs on PGlite in a temp folder; otherwise
 * on a fresh database of the real PostgreSQL (`adminUrl`'s server, or the shared one).
 */
export async function startTestService(
  options: {
    embedded?: boolean;
    /** Another PostgreSQL server than the shared one (the TimescaleDB one, testing/timescale-server.ts). */
    adminUrl?: string;
    env?: Record<string, string>;
    resolver?: Resolver;
    clock?: ManualClock;
    overrides?: ServiceOverrides;
  } = {},
): Promise<TestService> {
  let database: TestDatabase | undefined;
  const dataDir = await mkdtemp(path.join(tmpdir(), 'sortie-test-'));
  if (!options.embedded) database = await createTestDatabase(options.adminUrl);
  const config = loadConfig({
    SORTIE_DATA_DIR: dataDir,
    SORTIE_HTTP_PORT: '0',
    SORTIE_GRPC_PORT: '0',
    SORTIE_LOG_LEVEL: 'silent',
    SORTIE_SECRET_KEY: Buffer.alloc(32, 7).toString('base64'),
    ...(database && { SORTIE_DATABASE_URL: database.url }),
    ...options.env,
  });
  const clock = options.clock ?? new ManualClock(new Date());
  const service = await SortieService.create(config, {
    clock,
    logger: createLogger('silent'),
    resolver: options.resolver ?? offlineResolver,
    ...options.overrides,
  });
  await service.start();
  const url = service.httpUrl;

  const call: TestService['call'] = async (method, p, o = {}) => {
    const headers: Record<string, string> = { ...o.headers };
    if (o.key) headers['x-api-key'] = o.key;
    let body: string | undefined = o.rawBody;
    if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers['content-type'] = 'application/json';
    }
    const response = await fetch(url + p, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON; keep the text
    }
    return { status: response.status, headers: response.headers, body: parsed };
  };

  const db = service.ctx.db;
  const createOrg = async (name = 'Test Org'): Promise<TestOrg> => {
    const { organizationId, ownerUserId } = await createOrganization(db, name);
    const { userId: memberUserId } = await createUser(db, { organizationId, role: 'member' });
    const keyWith: TestOrg['keyWith'] = async (scopes, o = {}) => {
      const userId = (o.user ?? 'owner') === 'owner' ? ownerUserId : memberUserId;
      return issueApiKey(db, { organizationId, scopes, userId, expiresAt: o.expiresAt });
    };
    const { apiKey } = await keyWith([...SCOPES]);
    return { organizationId, ownerUserId, memberUserId, key: apiKey, keyWith };
  };

  return {
    service,
    clock,
    url,
    call,
    createOrg,
    stop: async () => {
      await service.destroy();
      if (config.natsUrl) await dropDeliveryStream(config.natsUrl, config.natsNamespace).catch(() => {});
      await database?.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
