/**
 * The `sortie` CLI: the service from a terminal, through `@sortie/client`. `run` is the whole program
 * (argv in, exit code out), so tests drive the very code `npx sortie` runs.
 */
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import { Code, ConnectError } from '@connectrpc/connect';
import { SortieApiError } from '@sortie/client';
import { COMMANDS } from './commands/index.ts';
import { makeClient, type CommandSpec, type Context } from './core/context.ts';
import { CliError, EXIT } from './core/exit-codes.ts';
import type { Io } from './core/output.ts';

export const DEFAULT_URL = 'http://localhost:8080';

const GLOBAL_OPTIONS: ParseArgsOptionsConfig = {
  url: { type: 'string' },
  key: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
};

export function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => `${c.words.join(' ')} ${c.usage}`.trim().length));
  const lines = COMMANDS.map((c) => `  sortie ${`${c.words.join(' ')} ${c.usage}`.trim().padEnd(width)}  ${c.summary}`);
  return [
    'usage: sortie <command> [arguments] [--url URL] [--key KEY] [--json]',
    '',
    'commands:',
    ...lines,
    '',
    'The service and key come from --url / --key, else SORTIE_URL / SORTIE_API_KEY (URL default http://localhost:8080).',
    'Tables are for people; --json prints one JSON document for scripts. `sortie <command> --help` shows its flags.',
    'Exit codes: 0 done, 1 refused or failed, 2 bad usage, 3 unreachable, 4 key refused (401/403), 5 command nacked or timed out.',
    '',
  ].join('\n');
}

function commandUsage(spec: CommandSpec): string {
  const flags = Object.entries(spec.options ?? {}).map(([name, o]) => `--${name}${o.type === 'string' ? ' VALUE' : ''}${o.multiple ? ' (repeatable)' : ''}`);
  return `usage: sortie ${spec.words.join(' ')} ${spec.usage}`.trimEnd() + `\n  ${spec.summary}\n` + (flags.length ? `flags: ${flags.join(', ')}\n` : '');
}

/** Flags that take a value, in any command: their values are not command words. */
const VALUE_FLAGS = new Set(
  [GLOBAL_OPTIONS, ...COMMANDS.map((c) => c.options ?? {})].flatMap((options) =>
    Object.entries(options).flatMap(([name, o]) => (o.type === 'string' ? [`--${name}`, ...(o.short ? [`-${o.short}`] : [])] : [])),
  ),
);

/**
 * The command the words name: the longest match, so `commands list` wins over a bare `commands`. Words
 * are the arguments that are neither flags nor a flag's value, so `--url URL` may come first.
 */
function findCommand(argv: string[]): { spec: CommandSpec; rest: string[] } | undefined {
  const wordAt: number[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') break;
    if (arg.startsWith('-')) {
      if (VALUE_FLAGS.has(arg)) i++;
      continue;
    }
    wordAt.push(i);
  }
  const words = wordAt.map((i) => argv[i]!);
  let best: CommandSpec | undefined;
  for (const spec of COMMANDS) {
    if (spec.words.every((w, i) => words[i] === w) && (!best || spec.words.length > best.words.length)) best = spec;
  }
  if (!best) return undefined;
  const taken = new Set(wordAt.slice(0, best.words.length));
  return { spec: best, rest: argv.filter((_, i) => !taken.has(i)) };
}

export async function run(argv: string[], io: Io): Promise<number> {
  const found = findCommand(argv);
  if (!found) {
    const wantsHelp = argv.length === 0 || argv.includes('--help') || argv.includes('-h') || argv[0] === 'help';
    const named = argv.filter((a, i) => !a.startsWith('-') && !VALUE_FLAGS.has(argv[i - 1] ?? '')).join(' ');
    (wantsHelp ? io.stdout : io.stderr).write(wantsHelp ? usage() : `sortie: unknown command "${named}"\n\n${usage()}`);
    return wantsHelp && argv.length > 0 ? EXIT.ok : EXIT.usage;
  }
  const { spec, rest } = found;
  let parsed;
  try {
    parsed = parseArgs({ args: rest, allowPositionals: true, strict: true, options: { ...GLOBAL_OPTIONS, ...spec.options } });
  } catch (error) {
    io.stderr.write(`sortie ${spec.words.join(' ')}: ${(error as Error).message}\n\n${commandUsage(spec)}`);
    return EXIT.usage;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.stdout.write(commandUsage(spec));
    return EXIT.ok;
  }
  const max = spec.maxPositionals ?? (spec.usage.match(/</g) ?? []).length;
  if (positionals.length < spec.required || positionals.length > max) {
    io.stderr.write(`sortie ${spec.words.join(' ')}: expected ${spec.usage || 'no arguments'}, got ${positionals.length ? positionals.map((p) => `"${p}"`).join(' ') : 'none'}\n\n${commandUsage(spec)}`);
    return EXIT.usage;
  }
  const baseUrl = (values.url as string | undefined) ?? io.env.SORTIE_URL ?? DEFAULT_URL;
  const apiKey = (values.key as string | undefined) ?? io.env.SORTIE_API_KEY ?? '';
  if (!apiKey) {
    io.stderr.write('sortie: no API key: pass --key or set SORTIE_API_KEY (npm run admin -- create-key … prints one)\n');
    return EXIT.usage;
  }
  const ctx: Context = {
    client: makeClient(baseUrl, apiKey),
    args: positionals,
    values,
    io,
    json: values.json === true,
    baseUrl,
    apiKey,
    out: (text) => io.stdout.write(text),
    note: (text) => io.stderr.write(text),
  };
  try {
    return (await spec.run(ctx)) ?? EXIT.ok;
  } catch (error) {
    return reportFailure(error, io, spec);
  }
}

/** A failure as one line a person can act on, and the exit code a script can branch on. */
function reportFailure(error: unknown, io: Io, spec: CommandSpec): number {
  const name = `sortie ${spec.words.join(' ')}`;
  if (error instanceof CliError) {
    io.stderr.write(`${name}: ${error.message}\n`);
    return error.exitCode;
  }
  if (error instanceof SortieApiError) {
    const fields = error.details.map((d) => `\n  ${d.field || '(request)'}: ${d.message}`).join('');
    const request = error.requestId ? ` (request id ${error.requestId})` : '';
    io.stderr.write(`${name}: ${error.status ? `${error.status} ` : ''}${error.code}: ${error.message}${request}${fields}\n`);
    if (error.status === 0) return EXIT.usage;
    if (error.code === 'unauthorized' || error.code === 'insufficient_scope' || error.code === 'forbidden') return EXIT.auth;
    return EXIT.failed;
  }
  const fetchFailed = error instanceof TypeError && error.message === 'fetch failed';
  const rpcUnavailable = error instanceof ConnectError && error.code === Code.Unavailable;
  if (fetchFailed || rpcUnavailable || (error instanceof Error && error.name === 'TimeoutError')) {
    // fetch says only "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND, a TLS error) is in its cause.
    const cause = (error as { cause?: unknown }).cause;
    const reason = cause instanceof Error ? cause.message : error.message;
    io.stderr.write(`${name}: cannot reach the service: ${reason}\n`);
    return EXIT.unreachable;
  }
  io.stderr.write(`${name}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  return EXIT.failed;
}
