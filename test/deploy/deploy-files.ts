// Small readers for the deployment files, enough for test/deploy/compose.test.ts to check them without a
// Docker engine: Compose variable interpolation, Dockerfile instructions by stage, port specs,
// .dockerignore matching, and the Caddyfile's block structure.

/** A `${VAR:?message}` (or `${VAR?message}`) whose variable is missing, as `docker compose` refuses it. */
export class MissingVariableError extends Error {
  override name = 'MissingVariableError';
  readonly variable: string;
  constructor(variable: string, message: string) {
    super(`required variable ${variable} is missing a value: ${message}`);
    this.variable = variable;
  }
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Compose's interpolation of one string: `$$` is a literal `$`; `$VAR`, `${VAR}`; `${VAR:-default}` and
 * `${VAR-default}`; `${VAR:?err}` and `${VAR?err}`; `${VAR:+alt}` and `${VAR+alt}`. With the colon an
 * empty value counts as unset. Defaults may themselves hold `${…}`.
 */
export function interpolate(text: string, env: Env): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c !== '$') {
      out += c;
      i++;
      continue;
    }
    const next = text[i + 1];
    if (next === '$') {
      out += '$';
      i += 2;
    } else if (next === '{') {
      const end = closingBrace(text, i + 1);
      out += expand(text.slice(i + 2, end), env);
      i = end + 1;
    } else {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i + 1));
      if (!m) {
        out += '$';
        i++;
        continue;
      }
      out += env[m[0]] ?? '';
      i += 1 + m[0].length;
    }
  }
  return out;
}

function closingBrace(text: string, open: number): number {
  let depth = 0;
  for (let j = open; j < text.length; j++) {
    if (text[j] === '{') depth++;
    else if (text[j] === '}' && --depth === 0) return j;
  }
  throw new Error(`unterminated \${ in ${JSON.stringify(text)}`);
}

function expand(body: string, env: Env): string {
  const m = /^([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?+])([\s\S]*))?$/.exec(body);
  if (!m) throw new Error(`invalid interpolation \${${body}}`);
  const name = m[1]!;
  const op = m[3];
  const rest = m[4] ?? '';
  const value = env[name];
  const unset = m[2] ? value === undefined || value === '' : value === undefined;
  if (op === '-') return unset ? interpolate(rest, env) : value!;
  if (op === '?') {
    if (unset) throw new MissingVariableError(name, interpolate(rest, env));
    return value!;
  }
  if (op === '+') return unset ? '' : interpolate(rest, env);
  return value ?? '';
}

/** Interpolates every string in a parsed YAML document (values only: Compose leaves keys alone). */
export function interpolateDeep<T>(value: T, env: Env): T {
  if (typeof value === 'string') return interpolate(value, env) as T;
  if (Array.isArray(value)) return value.map((v) => interpolateDeep(v, env)) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolateDeep(v, env)])) as T;
  }
  return value;
}

/** Every variable name a text refers to, with whether a `:?`/`?` makes it required. */
export function referencedVariables(text: string): Map<string, { required: boolean }> {
  const found = new Map<string, { required: boolean }>();
  for (const m of text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)(:?[-?+])?/g)) {
    const required = m[2] === '?' || m[2] === ':?';
    found.set(m[1]!, { required: required || (found.get(m[1]!)?.required ?? false) });
  }
  return found;
}

/** A service's `environment`, list or map form, as strings (null → empty, as Compose passes it). */
export function environmentOf(service: { environment?: unknown }): Record<string, string> {
  const env = service.environment;
  if (env === undefined || env === null) return {};
  if (Array.isArray(env)) {
    return Object.fromEntries(
      env.map((entry: string) => {
        const eq = entry.indexOf('=');
        return eq < 0 ? [entry, ''] : [entry.slice(0, eq), entry.slice(eq + 1)];
      }),
    );
  }
  return Object.fromEntries(Object.entries(env as Record<string, unknown>).map(([k, v]) => [k, v === null ? '' : String(v)]));
}

export interface PortMapping {
  hostIp: string | undefined;
  published: string | undefined;
  target: number;
  protocol: string;
}

/** Compose's short (`[HOST_IP:][PUBLISHED:]TARGET[/PROTOCOL]`) or long port syntax. */
export function parsePort(spec: unknown): PortMapping {
  if (spec && typeof spec === 'object') {
    const s = spec as { host_ip?: string; published?: string | number; target: number; protocol?: string };
    return { hostIp: s.host_ip, published: s.published === undefined ? undefined : String(s.published), target: Number(s.target), protocol: s.protocol ?? 'tcp' };
  }
  const text = String(spec);
  const [addr, protocol = 'tcp'] = text.split('/') as [string, string | undefined];
  const v6 = /^\[([^\]]+)\]:(.*)$/.exec(addr);
  const parts = v6 ? [v6[1]!, ...v6[2]!.split(':')] : addr.split(':');
  const target = Number(parts.at(-1));
  if (parts.length === 1) return { hostIp: undefined, published: undefined, target, protocol };
  if (parts.length === 2) return { hostIp: undefined, published: parts[0], target, protocol };
  return { hostIp: parts[0], published: parts[1], target, protocol };
}

export interface DockerInstruction {
  /** Upper case: FROM, RUN, COPY, … */
  readonly keyword: string;
  /** Everything after the keyword, continuation lines joined. */
  readonly args: string;
}

export interface DockerStage {
  readonly image: string;
  readonly name: string | undefined;
  readonly instructions: DockerInstruction[];
}

/** Splits a Dockerfile into stages of instructions (comments, parser directives and `\` continuations handled). */
export function parseDockerfile(text: string): { args: DockerInstruction[]; stages: DockerStage[] } {
  const instructions: DockerInstruction[] = [];
  let pending = '';
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line.startsWith('#') || (line === '' && pending === '')) continue;
    if (line.endsWith('\\')) {
      pending += line.slice(0, -1) + ' ';
      continue;
    }
    const full = (pending + line).trim();
    pending = '';
    if (full === '') continue;
    const m = /^(\S+)\s*([\s\S]*)$/.exec(full)!;
    instructions.push({ keyword: m[1]!.toUpperCase(), args: m[2]!.replace(/\s+/g, ' ').trim() });
  }
  const args: DockerInstruction[] = [];
  const stages: DockerStage[] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === 'FROM') {
      const m = /^(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?$/i.exec(instruction.args);
      if (!m) throw new Error(`cannot read FROM ${instruction.args}`);
      stages.push({ image: m[1]!, name: m[2], instructions: [] });
    } else if (stages.length === 0) {
      args.push(instruction);
    } else {
      stages.at(-1)!.instructions.push(instruction);
    }
  }
  return { args, stages };
}

/** `ARG NAME=value` defaults before the first FROM, substituted into an image reference. */
export function resolveImage(image: string, args: readonly DockerInstruction[]): string {
  const defaults = new Map<string, string>();
  for (const a of args) {
    if (a.keyword !== 'ARG') continue;
    const [name, value = ''] = a.args.split('=', 2) as [string, string | undefined];
    defaults.set(name.trim(), value.trim());
  }
  return image.replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (_, name: string) => defaults.get(name) ?? '');
}

/** The JSON exec form of CMD/ENTRYPOINT/HEALTHCHECK CMD, or null for the shell form. */
export function execForm(args: string): string[] | null {
  const trimmed = args.trim();
  if (!trimmed.startsWith('[')) return null;
  const parsed: unknown = JSON.parse(trimmed);
  if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === 'string')) throw new Error(`not an exec form: ${args}`);
  return parsed;
}

/** `ENV A=1 B=2` (and the legacy `ENV A 1`) of a stage, in order. */
export function stageEnv(stage: DockerStage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { keyword, args } of stage.instructions) {
    if (keyword !== 'ENV') continue;
    if (!/^[A-Za-z_][A-Za-z0-9_]*=/.test(args)) {
      const [name, ...rest] = args.split(' ');
      env[name!] = rest.join(' ');
      continue;
    }
    for (const m of args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
      env[m[1]!] = m[2]!.startsWith('"') ? (JSON.parse(m[2]!) as string) : m[2]!;
    }
  }
  return env;
}

function globToRegExp(pattern: string): RegExp {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*' && pattern[i + 1] === '*') {
      // `**/` is zero or more directories; a trailing `**` anything.
      if (pattern[i + 2] === '/') {
        re += '(?:.*/)?';
        i += 2;
      } else {
        re += '.*';
        i += 1;
      }
    } else if (c === '*') re += '[^/]*';
    else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = pattern.indexOf(']', i);
      re += pattern.slice(i, end + 1).replace('[!', '[^');
      i = end;
    } else re += c.replace(/[.+^${}()|\\]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/**
 * Whether Docker leaves `path` (relative to the context, `/`-separated) out of the build context:
 * patterns in order, the last one matching the path or one of its parent directories wins, `!` includes.
 */
export function dockerignoreExcludes(ignoreFile: string, path: string): boolean {
  const patterns = ignoreFile
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const negated = l.startsWith('!');
      const body = (negated ? l.slice(1) : l).trim().replace(/^\/+/, '').replace(/\/+$/, '');
      return { negated, re: globToRegExp(body) };
    });
  const segments = path.split('/');
  const candidates = segments.map((_, i) => segments.slice(0, i + 1).join('/'));
  let excluded = false;
  for (const { negated, re } of patterns) {
    if (candidates.some((c) => re.test(c))) excluded = !negated;
  }
  return excluded;
}

export interface CaddyNode {
  readonly tokens: string[];
  readonly children: CaddyNode[];
}

/** A Caddyfile as a tree: each line's tokens, with the lines of its `{ … }` block as children. */
export function parseCaddyfile(text: string): CaddyNode[] {
  const root: CaddyNode = { tokens: [], children: [] };
  const stack: CaddyNode[] = [root];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/(^|\s)#.*$/, '').trim();
    if (line === '') continue;
    if (line === '}') {
      if (stack.length === 1) throw new Error('unbalanced } in Caddyfile');
      stack.pop();
      continue;
    }
    const opens = line.endsWith('{');
    const tokens = (opens ? line.slice(0, -1) : line).trim().split(/\s+/).filter(Boolean);
    const node: CaddyNode = { tokens, children: [] };
    stack.at(-1)!.children.push(node);
    if (opens) stack.push(node);
  }
  if (stack.length !== 1) throw new Error('unclosed { in Caddyfile');
  return root.children;
}

/** Every node in the tree whose first token is `directive`, depth first. */
export function findDirectives(nodes: readonly CaddyNode[], directive: string): CaddyNode[] {
  const found: CaddyNode[] = [];
  for (const node of nodes) {
    if (node.tokens[0] === directive) found.push(node);
    found.push(...findDirectives(node.children, directive));
  }
  return found;
}

/** The upstreams of a `reverse_proxy`: its address arguments, or a `dynamic a { name … port … }` block. */
export function reverseProxyUpstreams(node: CaddyNode): Array<{ scheme: string | undefined; host: string; port: number }> {
  const upstreams = node.tokens.slice(1).filter((t) => !t.startsWith('/') && !t.startsWith('@'));
  const result = upstreams.map((address) => {
    const m = /^(?:([a-z0-9]+):\/\/)?([^:/]+):(\d+)$/.exec(address);
    if (!m) throw new Error(`cannot read upstream ${address}`);
    return { scheme: m[1], host: m[2]!, port: Number(m[3]) };
  });
  for (const dynamic of node.children.filter((c) => c.tokens[0] === 'dynamic' && c.tokens[1] === 'a')) {
    const [, , inlineName, inlinePort] = dynamic.tokens;
    const name = inlineName ?? dynamic.children.find((c) => c.tokens[0] === 'name')?.tokens[1];
    const port = inlinePort ?? dynamic.children.find((c) => c.tokens[0] === 'port')?.tokens[1];
    if (!name || !port) throw new Error('dynamic a upstream without name or port');
    result.push({ scheme: undefined, host: name, port: Number(port) });
  }
  return result;
}
