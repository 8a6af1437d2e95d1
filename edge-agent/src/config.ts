// The agent's settings: command-line flags, each with a SORTIE_AGENT_* environment variable behind it
// (a flag wins over its variable). The service and the key also fall back to SORTIE_URL and
// SORTIE_API_KEY, the variables the `sortie` CLI and the local receiver read, so one pair of exports
// serves every tool on a laptop; the agent's own variables win, so a deployment that sets them keeps its
// meaning. Parsed once, validated with zod, and refused with one message that names every bad setting by
// its flag.
import { isIP } from 'node:net';
import { basename, extname } from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import type { FullPolicy } from './spool/spool.ts';
import type { CloudConfig } from './uplink/uplink.ts';

export type { CloudConfig };

export type SourceSpec =
  | { readonly kind: 'serial'; readonly path: string; readonly baudRate: number }
  | { readonly kind: 'udp'; readonly host: string; readonly port: number }
  | { readonly kind: 'file'; readonly path: string; readonly format: 'tlog' | 'raw' };

/** The gRPC port of the reference deployment (the spec's {grpc_host}:50051). */
export const DEFAULT_GRPC_PORT = 50051;

export interface AgentConfig {
  readonly source: SourceSpec;
  readonly speed: number | 'max';
  /** Raw file replay: bytes per second at speed 1; undefined = as fast as possible. */
  readonly byteRate: number | undefined;
  readonly spool: { readonly dir: string; readonly maxBytes: number; readonly fullPolicy: FullPolicy };
  /** null: spool only (no --cloud, or --no-cloud). */
  readonly cloud: CloudConfig | null;
  readonly linkLossSeconds: number;
  /** Replay a file this spool already holds in full, again (new frames, new seqs). */
  readonly replayAgain: boolean;
  /** Seconds between JSON status lines when stdout is not a terminal. */
  readonly statusIntervalSeconds: number;
  readonly logLevel: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/**
 * Flag → environment variable. Every flag that takes a value has one; `shared` is the variable the other
 * tools read for the same setting, used when neither the flag nor the agent's own variable is set.
 */
const OPTIONS = {
  source: { type: 'string', env: 'SORTIE_AGENT_SOURCE' },
  format: { type: 'string', env: 'SORTIE_AGENT_FORMAT' },
  speed: { type: 'string', env: 'SORTIE_AGENT_SPEED' },
  'byte-rate': { type: 'string', env: 'SORTIE_AGENT_BYTE_RATE' },
  'spool-dir': { type: 'string', env: 'SORTIE_AGENT_SPOOL_DIR' },
  'spool-max-bytes': { type: 'string', env: 'SORTIE_AGENT_SPOOL_MAX_BYTES' },
  'spool-full-policy': { type: 'string', env: 'SORTIE_AGENT_SPOOL_FULL_POLICY' },
  cloud: { type: 'string', env: 'SORTIE_AGENT_CLOUD', shared: 'SORTIE_URL' },
  grpc: { type: 'string', env: 'SORTIE_AGENT_GRPC' },
  'no-cloud': { type: 'boolean', env: 'SORTIE_AGENT_NO_CLOUD' },
  'api-key': { type: 'string', env: 'SORTIE_AGENT_API_KEY', shared: 'SORTIE_API_KEY' },
  experiment: { type: 'string', env: 'SORTIE_AGENT_EXPERIMENT' },
  sortie: { type: 'string', env: 'SORTIE_AGENT_SORTIE' },
  'retry-max-seconds': { type: 'string', env: 'SORTIE_AGENT_RETRY_MAX_SECONDS' },
  'link-loss-seconds': { type: 'string', env: 'SORTIE_AGENT_LINK_LOSS_SECONDS' },
  'replay-again': { type: 'boolean', env: 'SORTIE_AGENT_REPLAY_AGAIN' },
  'status-interval': { type: 'string', env: 'SORTIE_AGENT_STATUS_INTERVAL' },
  'log-level': { type: 'string', env: 'SORTIE_AGENT_LOG_LEVEL' },
  help: { type: 'boolean', short: 'h', env: null },
} as const;

type OptionName = keyof typeof OPTIONS;

export const HELP_TEXT = `Sortie edge agent: reads MAVLink from a vehicle link (never transmits to it), frames it, and keeps
every frame in a durable spool until the cloud acknowledges it.

Usage:
  npm run agent -- --source SOURCE --spool-dir DIR [options]

Sources:
  serial:PATH[:BAUD]     serial port, e.g. serial:/dev/ttyUSB0:57600 (baud default 57600)
  udp:[HOST:]PORT        listen for datagrams, e.g. udp:0.0.0.0:14550 (host default 0.0.0.0; [::] for IPv6)
  file:PATH              replay a recording: .tlog (timestamped) or .bin/.raw/.mavlink (raw bytes)

Options (each also read from the environment variable shown):
  --source SOURCE              SORTIE_AGENT_SOURCE
  --format tlog|raw            SORTIE_AGENT_FORMAT             file format when the extension does not tell
  --speed N|max                SORTIE_AGENT_SPEED              replay speed: 1 = as recorded (default), max = as fast as possible
  --byte-rate N                SORTIE_AGENT_BYTE_RATE          raw file replay: bytes/s at speed 1 on the agent clock (default: paced by the messages' boot time)
  --replay-again               SORTIE_AGENT_REPLAY_AGAIN=1     replay a file this spool already holds in full (else: nothing to do)
  --spool-dir DIR              SORTIE_AGENT_SPOOL_DIR          required; one agent per directory
  --spool-max-bytes SIZE       SORTIE_AGENT_SPOOL_MAX_BYTES    bound on the spool, e.g. 512MiB, 2GiB (default 1GiB)
  --spool-full-policy POLICY   SORTIE_AGENT_SPOOL_FULL_POLICY  drop-oldest (default for live links) | reject-new (default for files)
  --link-loss-seconds N        SORTIE_AGENT_LINK_LOSS_SECONDS  vehicle silence that counts as LINK_LOSS (default 5)
  --cloud URL                  SORTIE_AGENT_CLOUD, SORTIE_URL  Sortie HTTP API, e.g. https://sortie.example; absent = spool only
  --grpc URL                   SORTIE_AGENT_GRPC               Sortie gRPC endpoint (default: the --cloud host, port 50051)
  --no-cloud                   SORTIE_AGENT_NO_CLOUD=1         spool only, even when SORTIE_AGENT_CLOUD or SORTIE_URL is set
  --api-key KEY                SORTIE_AGENT_API_KEY,           with --cloud (prefer a variable: flags show in ps)
                               SORTIE_API_KEY
  --experiment ID              SORTIE_AGENT_EXPERIMENT         with --cloud: the experiment (UUID) the datasets belong to
  --sortie NAME                SORTIE_AGENT_SORTIE             with --cloud: dataset name prefix, one dataset NAME-sys<id> per
                                                               system id (default for a file: its name without extension)
  --retry-max-seconds N        SORTIE_AGENT_RETRY_MAX_SECONDS  longest wait between reconnection attempts (default 30)
  --status-interval SECONDS    SORTIE_AGENT_STATUS_INTERVAL    JSON status line period when stdout is not a terminal (default 10)
  --log-level LEVEL            SORTIE_AGENT_LOG_LEVEL          trace|debug|info|warn|error|fatal|silent (default info)
  -h, --help

A flag wins over its variables; of two variables, the agent's own (SORTIE_AGENT_*) wins over the one
the sortie CLI shares (SORTIE_URL, SORTIE_API_KEY).

Ctrl-C (SIGINT) or SIGTERM stops the source, makes the spool durable and exits 0; a stopped replay
resumes where it left off when started again with the same file and spool directory.
`;

const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, k: 1e3, kb: 1e3, kib: 1024, m: 1e6, mb: 1e6, mib: 1024 ** 2, g: 1e9, gb: 1e9, gib: 1024 ** 3 };

function parseSize(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  const unit = m ? SIZE_UNITS[m[2]!.toLowerCase()] : undefined;
  if (!m || unit === undefined) return null;
  return Math.floor(Number(m[1]) * unit);
}

function isTruthy(text: string): boolean {
  return /^(1|true|yes|on)$/i.test(text.trim());
}

/** `serial:…`, `udp:…`, `file:…`; the format of a file from `format` or its extension. */
export function parseSourceSpec(spec: string, format?: 'tlog' | 'raw'): SourceSpec {
  const colon = spec.indexOf(':');
  const scheme = colon < 0 ? '' : spec.slice(0, colon);
  const rest = colon < 0 ? '' : spec.slice(colon + 1);
  if (scheme === 'serial') {
    const m = /^(.+):(\d+)$/.exec(rest);
    const path = m ? m[1]! : rest;
    const baudRate = m ? Number(m[2]) : 57_600;
    if (path === '') throw new ConfigError('serial source needs a port path, e.g. serial:/dev/ttyUSB0:57600');
    if (!Number.isInteger(baudRate) || baudRate < 50 || baudRate > 12_000_000) throw new ConfigError(`baud rate ${baudRate} is out of range`);
    return { kind: 'serial', path, baudRate };
  }
  if (scheme === 'udp') {
    const m = /^\[([^\]]+)\]:(\d+)$/.exec(rest) ?? /^([^:]+):(\d+)$/.exec(rest) ?? /^()(\d+)$/.exec(rest);
    if (!m) throw new ConfigError(`udp source must be udp:HOST:PORT or udp:PORT, got ${JSON.stringify(spec)}`);
    const host = m[1] || '0.0.0.0';
    const port = Number(m[2]);
    if (isIP(host) === 0 && host !== 'localhost') throw new ConfigError(`udp host must be an IP address to listen on, got ${JSON.stringify(host)}`);
    if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new ConfigError(`udp port ${m[2]} is out of range`);
    return { kind: 'udp', host, port };
  }
  if (scheme === 'file') {
    if (rest === '') throw new ConfigError('file source needs a path, e.g. file:flight.tlog');
    const ext = extname(rest).toLowerCase();
    const byExtension = ext === '.tlog' ? 'tlog' : ['.bin', '.raw', '.mavlink'].includes(ext) ? 'raw' : undefined;
    const resolved = format ?? byExtension;
    if (!resolved) throw new ConfigError(`cannot tell the format of ${rest} from its extension: pass --format tlog or --format raw`);
    return { kind: 'file', path: rest, format: resolved };
  }
  throw new ConfigError(`unknown source ${JSON.stringify(spec)}: use serial:PATH[:BAUD], udp:[HOST:]PORT or file:PATH`);
}

const positiveNumber = (what: string) =>
  z
    .string()
    .trim()
    .refine((v) => /^\d+(\.\d+)?$/.test(v) && Number(v) > 0, `${what} must be a positive number`)
    .transform(Number);

const Schema = z
  .object({
    source: z.string({ error: 'is required: where the MAVLink comes from' }).trim().min(1, 'is required'),
    format: z.enum(['tlog', 'raw'], { error: 'must be tlog or raw' }).optional(),
    speed: z
      .string()
      .trim()
      .refine((v) => v === 'max' || (/^\d+(\.\d+)?$/.test(v) && Number(v) > 0), 'must be a positive number or max')
      .transform((v): number | 'max' => (v === 'max' ? 'max' : Number(v)))
      .default(1),
    'byte-rate': positiveNumber('byte rate').optional(),
    'spool-dir': z.string({ error: 'is required: where frames are kept until the cloud acknowledges them' }).trim().min(1, 'is required'),
    'spool-max-bytes': z
      .string()
      .transform((v, ctx) => {
        const n = parseSize(v);
        if (n === null || n < 1024 * 1024) {
          ctx.addIssue({ code: 'custom', message: 'must be a size of at least 1MiB, such as 512MiB or 2GiB' });
          return z.NEVER;
        }
        return n;
      })
      .default(1024 ** 3),
    'spool-full-policy': z.enum(['drop-oldest', 'reject-new'], { error: 'must be drop-oldest or reject-new' }).optional(),
    cloud: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL, e.g. https://sortie.example' }).optional(),
    grpc: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL, e.g. http://sortie.example:50051' }).optional(),
    'no-cloud': z.boolean().default(false),
    'api-key': z.string().trim().min(1).optional(),
    experiment: z.uuid({ error: 'must be the experiment id (a UUID)' }).optional(),
    sortie: z.string().trim().min(1, 'must not be empty').max(180, 'must be at most 180 characters').optional(),
    'retry-max-seconds': positiveNumber('retry interval').default(30),
    'link-loss-seconds': positiveNumber('link loss time').default(5),
    'replay-again': z.boolean().default(false),
    'status-interval': positiveNumber('status interval').default(10),
    'log-level': z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], { error: 'must be trace, debug, info, warn, error, fatal or silent' }).default('info'),
    help: z.boolean().default(false),
  })
  .superRefine((v, ctx) => {
    if (v.cloud && !v['no-cloud']) {
      // The cloud may come from SORTIE_URL, set for the CLI: the message says so, or it would puzzle.
      if (!v['api-key']) ctx.addIssue({ code: 'custom', path: ['api-key'], message: 'is required with --cloud (or SORTIE_URL)' });
      if (!v.experiment) ctx.addIssue({ code: 'custom', path: ['experiment'], message: 'is required with --cloud (or SORTIE_URL): create one with `npx sortie experiments create NAME`' });
      if (!v.sortie && !v.source?.trim().startsWith('file:')) {
        ctx.addIssue({ code: 'custom', path: ['sortie'], message: 'is required with --cloud (or SORTIE_URL) for a live source (it names the datasets)' });
      }
    }
  });

export type CliResult = { readonly help: true } | { readonly help: false; readonly config: AgentConfig };

/** Parses `argv` (without node and script) over `env`. Throws ConfigError with every problem found. */
export function parseCli(argv: readonly string[], env: Record<string, string | undefined> = process.env): CliResult {
  let values: Record<string, string | boolean | undefined>;
  try {
    const options = Object.fromEntries(
      Object.entries(OPTIONS).map(([name, o]) => [name, 'short' in o ? { type: o.type, short: o.short } : { type: o.type }]),
    );
    ({ values } = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }));
  } catch (err) {
    throw new ConfigError(`${(err as Error).message.split('\n')[0]}\nRun with --help for usage.`);
  }
  if (values['help']) return { help: true };

  const merged: Record<string, string | boolean> = {};
  for (const [name, o] of Object.entries(OPTIONS) as Array<[OptionName, (typeof OPTIONS)[OptionName]]>) {
    const fromArgs = values[name];
    const own = o.env ? env[o.env] : undefined;
    const fromEnv = own !== undefined && own !== '' ? own : 'shared' in o ? env[o.shared] : undefined;
    if (fromArgs !== undefined) merged[name] = fromArgs;
    else if (fromEnv !== undefined && fromEnv !== '') merged[name] = o.type === 'boolean' ? isTruthy(fromEnv) : fromEnv;
  }
  const parsed = Schema.safeParse(merged);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => `  ${label(String(issue.path[0] ?? ''))}: ${issue.message}`);
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}\nRun with --help for usage.`);
  }
  const v = parsed.data;
  let source: SourceSpec;
  try {
    source = parseSourceSpec(v.source, v.format);
  } catch (err) {
    throw new ConfigError(`invalid configuration:\n  ${label('source')}: ${(err as Error).message}\nRun with --help for usage.`);
  }
  const isFile = source.kind === 'file';
  return {
    help: false,
    config: {
      source,
      speed: v.speed,
      byteRate: v['byte-rate'],
      spool: {
        dir: v['spool-dir'],
        maxBytes: v['spool-max-bytes'],
        // A file can wait for the uplink to make room; a live link cannot wait, so keep the newest.
        fullPolicy: v['spool-full-policy'] ?? (isFile ? 'reject-new' : 'drop-oldest'),
      },
      cloud:
        v.cloud && !v['no-cloud']
          ? {
              url: v.cloud,
              grpcUrl: v.grpc ?? defaultGrpcUrl(v.cloud),
              apiKey: v['api-key'] ?? '',
              experimentId: v.experiment ?? '',
              sortie: v.sortie ?? defaultSortie(source),
              retryMaxMs: Math.round(v['retry-max-seconds'] * 1000),
            }
          : null,
      linkLossSeconds: v['link-loss-seconds'],
      replayAgain: v['replay-again'],
      statusIntervalSeconds: v['status-interval'],
      logLevel: v['log-level'],
    },
  };
}

/** The --cloud host on the gRPC port, same scheme (h2c for http, TLS for https). */
export function defaultGrpcUrl(cloudUrl: string): string {
  const url = new URL(cloudUrl);
  // hostname keeps the brackets of an IPv6 literal.
  return `${url.protocol}//${url.hostname}:${DEFAULT_GRPC_PORT}`;
}

/** A replayed file names its sortie after itself (`flight-12.tlog` → `flight-12`). */
function defaultSortie(source: SourceSpec): string {
  if (source.kind !== 'file') return '';
  const name = basename(source.path);
  const ext = extname(name);
  return (ext ? name.slice(0, -ext.length) : name) || name;
}

function label(name: string): string {
  const o = OPTIONS[name as OptionName];
  if (!o?.env) return `--${name}`;
  return 'shared' in o ? `--${name} (${o.env} or ${o.shared})` : `--${name} (${o.env})`;
}

/** The configuration as logged at start: the API key is never printed. */
export function describeConfig(config: AgentConfig): Record<string, unknown> {
  return {
    ...config,
    cloud: config.cloud ? { ...config.cloud, apiKey: '[redacted]' } : null,
  };
}
