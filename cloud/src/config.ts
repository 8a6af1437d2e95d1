import { z } from 'zod';

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
  /** How long gRPC trusts a key check before asking the database again (at most 300 s, as the spec allows). */
  SORTIE_GRPC_KEY_CACHE_SECONDS: z.coerce.number().int().min(0).max(300).default(300),
});
export type Env = z.infer<typeof EnvSchema>;

export interface Config {
  databaseUrl: string | undefined;
  dataDir: string;
  natsUrl: string | undefined;
  http: { host: string; port: number; bodyLimit: number };
  grpc: { host: string; port: number; keyCacheSeconds: number };
  logLevel: Env['SORTIE_LOG_LEVEL'];
  publicUrl: string;
  secretKey: string | undefined;
  webhook: { allowCidrs: string; caFile: string | undefined };
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
  return {
    databaseUrl: e.SORTIE_DATABASE_URL,
    dataDir: e.SORTIE_DATA_DIR,
    natsUrl: e.SORTIE_NATS_URL,
    http: { host: e.SORTIE_HTTP_HOST, port: e.SORTIE_HTTP_PORT, bodyLimit: e.SORTIE_HTTP_BODY_LIMIT },
    grpc: { host: e.SORTIE_GRPC_HOST, port: e.SORTIE_GRPC_PORT, keyCacheSeconds: e.SORTIE_GRPC_KEY_CACHE_SECONDS },
    logLevel: e.SORTIE_LOG_LEVEL,
    publicUrl: (e.SORTIE_PUBLIC_URL ?? `http://localhost:${e.SORTIE_HTTP_PORT}`).replace(/\/+$/, ''),
    secretKey: e.SORTIE_SECRET_KEY,
    webhook: { allowCidrs: e.SORTIE_WEBHOOK_ALLOW_CIDRS, caFile: e.SORTIE_WEBHOOK_CA_FILE },
  };
}
