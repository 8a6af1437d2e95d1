import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Every table has one owner: the top-level folder of cloud/src whose modules write it (docs/CONVENTIONS.md).
 * Any other folder that needs a row changed calls a named function of the owner, so changing a table's
 * columns or the rules of its writes means editing one folder. Read from the source: Kysely's
 * insertInto/updateTable/deleteFrom/mergeInto and the SQL text of `sql` templates and raw queries
 * (insert into, update, delete from, merge into, copy), comments left out.
 *
 * Not read: db/migrations/ (they create and alter anything), tests, and testing/, whose fixtures seed rows
 * straight into the tables a test needs (testing/delivery-rows.ts); no product code runs them.
 */
const ROOT = join(import.meta.dirname, '..', '..');
const CLOUD_SRC = join(ROOT, 'cloud', 'src');
const NOT_READ = ['db/migrations/', 'testing/'];

/** Tables whose names are built at run time (`insert into ${sql.table(...)}`): the per-dataset telemetry tables. */
const DYNAMIC = '(a table named at run time)';

/** Each table, and the one folder of cloud/src whose modules write it. */
const OWNERS: Record<string, string> = {
  organizations: 'auth',
  users: 'auth',
  api_keys: 'auth',
  api_key_listeners: 'auth',
  deployment_settings: 'platform',
  experiments: 'experiments',
  datasets: 'datasets',
  channels: 'datasets',
  events: 'events',
  command_templates: 'templates',
  commands: 'commands',
  ack_tokens: 'commands',
  ack_attempts: 'commands',
  armings: 'arming',
  webhook_endpoints: 'webhooks',
  delivery_jobs: 'delivery',
  delivery_attempts: 'delivery',
  notifications: 'notifications',
  limit_rules: 'limits',
  limit_states: 'limits',
  telemetry_rollup_packs: 'telemetry',
  narrow_datasets: 'telemetry',
  narrow_boot_sessions: 'telemetry',
  narrow_message_tables: 'telemetry',
  narrow_samples: 'telemetry',
  log_imports: 'imports',
  flight_parameters: 'imports',
  [DYNAMIC]: 'telemetry',
};

interface Write {
  file: string;
  table: string;
  how: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** The tables the migrations create (Kysely's createTable and `create [unlogged] table`). */
function migratedTables(): Set<string> {
  const tables = new Set<string>();
  for (const file of sourceFiles(join(CLOUD_SRC, 'db', 'migrations'))) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/createTable\(\s*['"`]([\w.]+)['"`]/g)) tables.add(bareName(m[1]!));
    for (const m of text.matchAll(/create\s+(?:unlogged\s+)?table\s+(?:if\s+not\s+exists\s+)?("?[\w.]+"?)/gi)) tables.add(bareName(m[1]!));
  }
  return tables;
}

/** `public."Commands" as c` → `commands`: no schema, no quotes, no alias. */
function bareName(name: string): string {
  const first = name.trim().split(/\s+/)[0]!;
  return first.split('.').pop()!.replaceAll('"', '').toLowerCase();
}

/** The text without comments: `//` lines and ends of lines, `/* *\/` blocks, and SQL's `--` comments. */
function withoutComments(text: string): string {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, ' ')
    .replace(/(^|[^:'"`\w])\/\/.*$/gm, '$1')
    .replace(/--\s.*$/gm, '');
}

const KYSELY = /\b(insertInto|updateTable|deleteFrom|mergeInto|replaceInto)\(\s*(?:(['"`])([^'"`]+)\2)?/g;
const RAW = /\b(insert\s+into|update|delete\s+from|merge\s+into|copy)\s+(?:only\s+)?(\$\{|"?[A-Za-z_][\w$]*"?(?:\."?[A-Za-z_][\w$]*"?)?)/gi;

function writesOf(file: string, text: string, known: Set<string>): Write[] {
  const writes: Write[] = [];
  const code = withoutComments(text);
  for (const m of code.matchAll(KYSELY)) {
    writes.push({ file, table: m[3] === undefined ? DYNAMIC : bareName(m[3]), how: m[1]! });
  }
  for (const m of code.matchAll(RAW)) {
    const how = m[1]!.toLowerCase().replace(/\s+/g, ' ');
    if (m[2] === '${') writes.push({ file, table: DYNAMIC, how });
    else {
      // Prose and SQL keywords (`do update set`, `for update skip locked`) name no table.
      const table = bareName(m[2]!);
      if (known.has(table)) writes.push({ file, table, how });
    }
  }
  return writes;
}

function topFolder(file: string): string {
  const parts = relative(CLOUD_SRC, file).split(sep);
  return parts.length === 1 ? '.' : parts[0]!;
}

const known = migratedTables();
const writes = sourceFiles(CLOUD_SRC)
  .filter((file) => !NOT_READ.some((prefix) => relative(CLOUD_SRC, file).split(sep).join('/').startsWith(prefix)))
  .flatMap((file) => writesOf(relative(ROOT, file).split(sep).join('/'), readFileSync(file, 'utf8'), known));

describe('table writers', () => {
  it('finds the writes it is meant to find (the reader is not blind)', () => {
    expect(writes.length).toBeGreaterThan(60);
    expect(writes.some((w) => w.file === 'cloud/src/commands/create-command.ts' && w.table === 'commands' && w.how === 'insertInto')).toBe(true);
    expect(writes.some((w) => w.file.startsWith('cloud/src/delivery/') && w.table === 'delivery_attempts' && w.how === 'insert into')).toBe(true);
    expect(writes.some((w) => w.file.startsWith('cloud/src/telemetry/') && w.table === DYNAMIC)).toBe(true);
    expect(known.has('commands') && known.has('api_key_listeners')).toBe(true);
    const sample = writesOf('x.ts', "await sql`UPDATE public.\"commands\" c set x = 1`; db.deleteFrom('ack_tokens as t'); // update users\n", known);
    expect(sample.map((w) => w.table)).toEqual(['ack_tokens', 'commands']);
  });

  it('every table written has an owner in the expected map', () => {
    const unowned = [...new Set(writes.map((w) => w.table))].filter((t) => !(t in OWNERS));
    expect(unowned, 'a table written outside migrations needs an owner folder here').toEqual([]);
  });

  it('each table is written by its owner folder only', () => {
    const strays = writes
      .filter((w) => OWNERS[w.table] !== undefined && topFolder(join(ROOT, w.file)) !== OWNERS[w.table])
      .map((w) => `${w.file} writes ${w.table} (${w.how}), owned by ${OWNERS[w.table]}/: call a function of ${OWNERS[w.table]}/ instead`);
    expect([...new Set(strays)].join('\n')).toBe('');
  });

  it('has exactly one writer folder per table', () => {
    const folders = new Map<string, Set<string>>();
    for (const w of writes) folders.set(w.table, (folders.get(w.table) ?? new Set()).add(topFolder(join(ROOT, w.file))));
    const shared = [...folders].filter(([, set]) => set.size > 1).map(([table, set]) => `${table}: ${[...set].sort().join(', ')}`);
    expect(shared).toEqual([]);
  });

  it('each owner does write its table (the map names no table nobody writes)', () => {
    const written = new Set(writes.map((w) => `${w.table} ${topFolder(join(ROOT, w.file))}`));
    expect(Object.entries(OWNERS).filter(([table, owner]) => !written.has(`${table} ${owner}`)).map(([t]) => t)).toEqual([]);
  });
});
