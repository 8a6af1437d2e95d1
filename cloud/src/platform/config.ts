import { z } from 'zod';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** `"500ms,1s,2m"` → `[500, 1000, 120000]`: SORTIE_WEBHOOK_RETRY_SCHEDULE as delivery/backoff.ts uses it. */
export function parseRetrySchedule(text: string): number[] {
  const parts = text.split(',').map((p) => p.trim()).filter((p) => p !== '');
  if (parts.length === 0) throw new Error('the retry schedule needs at least one wait, e.g. "1s,5s,30s"');
  return parts.map((part) => {
    const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(part);
    if (!match) throw new Error(`"${part}" is not a wait (use e.g. 500ms, 5s, 2m)`);
    const ms = Math.round(Number(match[1]) * UNIT_MS[match[2]!]!);
    if (ms <= 0 || ms > 3_600_000) throw new Error(`"${part}" must be more than 0 and at most 1h`);
    return ms;
  });
}

const port = z.coerce.number().int().min(0).max(65535);
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

/** Every setting Sortie reads, from `SORTIE_*` environment variables, read once at start-up. */
export const EnvSchema = z.object({
  /** Postgres connection string. Unset: embedded PGlite in SORTIE_DATA_DIR (nothing to install). */
  SORTIE_DATABASE_URL: optionalString,
  /** Folder for the embedded database and the generated secret key when SORTIE_DATABASE_URL is unset. */
  SORTIE_DATA_DIR: z.string().default('.sortie-data'),
  /** NATS server with JetStream for delivery work. Unset: an in-process queue driven from Postgres. */
  SORTIE_NATS_URL: optionalString,
  /**
   * Names on NATS: stream `<NS>_DELIVERIES` (upper case), subjects `<ns>.deliveries.<organizationId>`,
   * durable consumer `<ns>-delivery-worker`. Change it only to run two deployments on one NATS.
   */
  SORTIE_NATS_NAMESPACE: z
    .string()
    .regex(/^[a-z][a-z0-9_]{0,31}$/, 'lower-case letters, digits and _, starting with a letter')
    .default('sortie'),
  /**
   * Copies JetStream keeps of the delivery stream (and its consumer): 1 on a single NATS server; 3 on a
   * three-node cluster, so losing one node (even the stream's leader) loses no delivery and stops
   * deliveries only for the leader election. Applied at start-up to an existing stream too.
   */
  SORTIE_NATS_STREAM_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  /** HTTP API port. */
  SORTIE_HTTP_PORT: port.default(8080),
  /** HTTP bind address. Loopback by default so a laptop never exposes it by accident; compose sets 0.0.0.0. */
  SORTIE_HTTP_HOST: z.string().default('127.0.0.1'),
  /** gRPC (Connect, gRPC, gRPC-Web over h2c) port. */
  SORTIE_GRPC_PORT: port.default(50051),
  /** gRPC bind address; the reference deployment keeps it on loopback behind no TLS front. */
  SORTIE_GRPC_HOST: z.string().default('127.0.0.1'),
  /** Largest accepted HTTP request body in bytes; larger gives 413 payload_too_large. */
  SORTIE_HTTP_BODY_LIMIT: z.coerce.number().int().min(1024).default(4 * 1024 * 1024),
  /**
   * Request-body bytes the HTTP API handles at once (by Content-Length; a chunked body counts as the body
   * limit). A request past it waits its turn, so a burst of large bodies cannot take memory without
   * bound (a parsed JSON body takes several times its size). At least SORTIE_HTTP_BODY_LIMIT.
   */
  SORTIE_HTTP_BODY_BYTES_IN_FLIGHT: z.coerce.number().int().min(1024).default(32 * 1024 * 1024),
  /**
   * Time a client has to send the request line and headers (408 request_timeout after it): short, so
   * a connection that trickles headers (slowloris) cannot hold a socket for long.
   */
  SORTIE_HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600_000).default(20_000),
  /** Time a client has to send the whole request, body included: a 4 MiB body at about 35 kB/s. 408 after it. */
  SORTIE_HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1000).max(3_600_000).default(120_000),
  /**
   * How long an idle keep-alive connection stays open. Longer than the 60 s idle timeout of common load
   * balancers, so the proxy closes first and never sends a request onto a connection being closed here.
   */
  SORTIE_HTTP_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(0).max(600_000).default(65_000),
  /** pino level: trace, debug, info, warn, error, fatal, silent. */
  SORTIE_LOG_LEVEL: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
  /** The address receivers use to reach the ack endpoint (goes into ack.url of every delivery). */
  SORTIE_PUBLIC_URL: optionalString,
  /**
   * 32-byte key (base64) that encrypts webhook secrets at rest. Required with SORTIE_DATABASE_URL;
   * in embedded mode one is generated into SORTIE_DATA_DIR on first start.
   */
  SORTIE_SECRET_KEY: optionalString,
  /** Comma-separated CIDRs webhook URLs may resolve into despite being private (tests, labs). Empty by default. */
  SORTIE_WEBHOOK_ALLOW_CIDRS: z.string().default(''),
  /** Extra PEM CA bundle trusted for webhook HTTPS (self-signed test receivers). */
  SORTIE_WEBHOOK_CA_FILE: optionalString,
  /**
   * Waits between webhook attempts, comma-separated (`500ms`, `5s`, `2m`); the last repeats until the
   * command's ack deadline. Each wait gets ±20 % jitter. See docs/delivery.md.
   */
  SORTIE_WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .default('1s,2s,5s,10s,20s,30s,60s')
    .transform((v, ctx) => {
      try {
        return parseRetrySchedule(v);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
        return z.NEVER;
      }
    }),
  /** Per-attempt time limit in milliseconds. The spec's 10 s is the ceiling; tests shorten it. */
  SORTIE_WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(10_000).default(10_000),
  /** Webhook attempts one process runs at the same time. */
  SORTIE_DELIVERY_CONCURRENCY: z.coerce.number().int().min(1).max(512).default(64),
  /** `smtp://user:pass@host:587` or `smtps://…`: owners are emailed when an endpoint is auto-disabled. Unset: no email. */
  SORTIE_SMTP_URL: optionalString,
  /** From address of those emails. */
  SORTIE_SMTP_FROM: z.string().default('Sortie <sortie@localhost>'),
  /** How long gRPC trusts a key check before asking the database again (at most 300 s, as the spec allows). */
  SORTIE_GRPC_KEY_CACHE_SECONDS: z.coerce.number().int().min(0).max(300).default(300),
  /**
   * On SIGTERM/SIGINT the process stops accepting, finishes requests and webhook attempts in flight and
   * exits; after this many seconds (or a second signal) it exits at once. 25 fits inside Kubernetes' 30 s.
   */
  SORTIE_SHUTDOWN_GRACE_SECONDS: z.coerce.number().int().min(1).max(3600).default(25),
  /**
   * The largest log file POST /api/imports/create takes (payload_too_large above). An upload is streamed
   * to a file in SORTIE_IMPORT_DIR while it arrives and read from there, never held in memory; a
   * PX4 or ArduPilot SD-card log of a long flight is a few GB.
   */
  SORTIE_IMPORT_MAX_BYTES: z.coerce.number().int().min(1024).default(16 * 1024 ** 3),
  /** Where uploads wait while they are imported (deleted after): the system's temporary directory by default. */
  SORTIE_IMPORT_DIR: optionalString,
});
export type Env = z.infer<typeof EnvSchema>;

export interface Config {
  /** Log file imports (imports/): the largest upload, and where uploads wait (undefined: the system's temp dir). */
  imports: { maxBytes: number; dir: string | undefined };
  databaseUrl: string | undefined;
  dataDir: string;
  natsUrl: string | undefined;
  natsNamespace: string;
  natsStreamReplicas: number;
  http: { host: string; port: number; bodyLimit: number; bodyBytesInFlight: number; timeouts: HttpTimeouts };
  grpc: { host: string; port: number; keyCacheSeconds: number };
  logLevel: Env['SORTIE_LOG_LEVEL'];
  publicUrl: string;
  secretKey: string | undefined;
  webhook: { allowCidrs: string; caFile: string | undefined; retryScheduleMs: number[]; timeoutMs: number };
  delivery: { concurrency: number };
  smtp: { url: string | undefined; from: string };
  shutdownGraceMs: number;
}

/** The HTTP server's own clocks (Node's headersTimeout, requestTimeout, keepAliveTimeout). */
export interface HttpTimeouts {
  headersMs: number;
  requestMs: number;
  keepAliveMs: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  if (e.SORTIE_HTTP_BODY_BYTES_IN_FLIGHT < e.SORTIE_HTTP_BODY_LIMIT) {
    throw new ConfigError('invalid configuration:\n  SORTIE_HTTP_BODY_BYTES_IN_FLIGHT: must be at least SORTIE_HTTP_BODY_LIMIT');
  }
  if (e.SORTIE_HTTP_HEADERS_TIMEOUT_MS > e.SORTIE_HTTP_REQUEST_TIMEOUT_MS) {
    throw new ConfigError('invalid configuration:\n  SORTIE_HTTP_HEADERS_TIMEOUT_MS: must not exceed SORTIE_HTTP_REQUEST_TIMEOUT_MS');
  }
  return {
    databaseUrl: e.SORTIE_DATABASE_URL,
    dataDir: e.SORTIE_DATA_DIR,
    natsUrl: e.SORTIE_NATS_URL,
    natsNamespace: e.SORTIE_NATS_NAMESPACE,
    natsStreamReplicas: e.SORTIE_NATS_STREAM_REPLICAS,
    http: {
      host: e.SORTIE_HTTP_HOST,
      port: e.SORTIE_HTTP_PORT,
      bodyLimit: e.SORTIE_HTTP_BODY_LIMIT,
      bodyBytesInFlight: e.SORTIE_HTTP_BODY_BYTES_IN_FLIGHT,
      timeouts: { headersMs: e.SORTIE_HTTP_HEADERS_TIMEOUT_MS, requestMs: e.SORTIE_HTTP_REQUEST_TIMEOUT_MS, keepAliveMs: e.SORTIE_HTTP_KEEP_ALIVE_TIMEOUT_MS },
    },
    grpc: { host: e.SORTIE_GRPC_HOST, port: e.SORTIE_GRPC_PORT, keyCacheSeconds: e.SORTIE_GRPC_KEY_CACHE_SECONDS },
    logLevel: e.SORTIE_LOG_LEVEL,
    publicUrl: (e.SORTIE_PUBLIC_URL ?? `http://localhost:${e.SORTIE_HTTP_PORT}`).replace(/\/+$/, ''),
    secretKey: e.SORTIE_SECRET_KEY,
    webhook: {
      allowCidrs: e.SORTIE_WEBHOOK_ALLOW_CIDRS,
      caFile: e.SORTIE_WEBHOOK_CA_FILE,
      retryScheduleMs: e.SORTIE_WEBHOOK_RETRY_SCHEDULE,
      timeoutMs: e.SORTIE_WEBHOOK_TIMEOUT_MS,
    },
    delivery: { concurrency: e.SORTIE_DELIVERY_CONCURRENCY },
    smtp: { url: e.SORTIE_SMTP_URL, from: e.SORTIE_SMTP_FROM },
    shutdownGraceMs: e.SORTIE_SHUTDOWN_GRACE_SECONDS * 1000,
    imports: { maxBytes: e.SORTIE_IMPORT_MAX_BYTES, dir: e.SORTIE_IMPORT_DIR },
  };
}
