import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  cycles,
  folderAtDepth,
  folderOf,
  isAncestorFolder,
  readImports,
  readWorkspaces,
  resolveExport,
  splitSpecifier,
  TEST_FILE,
  type ImportEdge,
} from '../../scripts/import-graph.ts';

/**
 * The structure rules of docs/CONVENTIONS.md, read from the import graph, so that a change that brings
 * back a cycle, has a subfolder use its parent or reaches into another package fails here rather than in
 * a reviewer's head. The same rules hold for every package: each workspace of the root package.json, and
 * the console while it still lives inside the cloud's folder.
 */
const ROOT = join(import.meta.dirname, '..', '..');

/**
 * The top-level folders of cloud/src from the bottom up: a folder imports only folders on an earlier
 * line, and folders on one line do not import each other. The rule it serves (docs/CONVENTIONS.md):
 * each table has one owner folder that writes it (test/architecture/table-writers.test.ts), and a
 * capability uses another by calling the owner's named functions, which it may do only downwards. An
 * owner above its caller is reached through a port declared in platform/ and put on the AppContext:
 * commands and limits enqueue delivery's jobs through `ctx.outbox`, which delivery implements.
 * service/ is the composition root (app.ts, service.ts, shutdown.ts, banner.ts), the one folder that
 * knows every capability; testing/ starts it for tests; `.` is the package's entries (main.ts, index.ts).
 * admin/ sits below service/: a running embedded server runs the admin CLI's commands itself (admin/socket.ts).
 */
const CLOUD_LAYERS: readonly (readonly string[])[] = [
  ['db', 'net', 'crypto'],
  ['platform'],
  ['http'],
  ['auth'],
  ['datasets', 'templates', 'notifications', 'webhooks'],
  ['experiments', 'arming'],
  ['telemetry'],
  ['channels', 'events'],
  ['limits'],
  ['commands', 'imports'],
  ['delivery', 'live'],
  ['grpc', 'observability', 'console', 'export'],
  ['api-docs', 'admin'],
  ['service'],
  ['testing'],
  ['.'],
];
const CLOUD_SRC = 'cloud/src';

/** A package the rules apply to: its name, its folder, and what its package.json exports. */
interface Package {
  name: string;
  root: string;
  exports: unknown;
}

/**
 * The console's folder while it is part of the cloud package. It is a package of its own for these rules
 * (nothing imports it: the cloud bundles it by path), and once it is a workspace it is found as one.
 */
const CONSOLE_INSIDE_CLOUD = 'cloud/console';

const WORKSPACES: Package[] = readWorkspaces(ROOT);
const PACKAGES: Package[] = [
  ...WORKSPACES,
  ...(existsSync(join(ROOT, CONSOLE_INSIDE_CLOUD, 'src')) && !WORKSPACES.some((w) => w.root === CONSOLE_INSIDE_CLOUD)
    ? [{ name: 'console (cloud/console)', root: CONSOLE_INSIDE_CLOUD, exports: undefined }]
    : []),
];

/** Every import of the packages, the cross-package tests in test/ and the repository's scripts. */
const edges = readImports(ROOT, [...new Set([...PACKAGES.map((p) => p.root.split('/')[0]!), 'test', 'scripts'])]);

/** The package a repository path belongs to (the innermost one), or undefined outside every package. */
function packageOf(path: string): Package | undefined {
  let found: Package | undefined;
  for (const pkg of PACKAGES) {
    if (path.startsWith(`${pkg.root}/`) && (found === undefined || pkg.root.length > found.root.length)) found = pkg;
  }
  return found;
}

/** The file an import reaches: the relative path, or for a package's name the file its `exports` names. */
function targetOf(edge: ImportEdge): string | undefined {
  if (edge.to !== undefined) return edge.to;
  const { name, subpath } = splitSpecifier(edge.specifier);
  const pkg = PACKAGES.find((p) => p.name === name);
  return pkg && resolveExport(pkg, subpath);
}

/** The imports of a package's own files (tests stand outside: they may start all of it to check a part). */
function internalEdges(pkg: Package): ImportEdge[] {
  return edges.filter((e) => e.to !== undefined && !TEST_FILE.test(e.from) && packageOf(e.from) === pkg && packageOf(e.to) === pkg);
}

function describeEdges(list: readonly ImportEdge[]): string {
  return [...new Set(list.map((e) => `${e.from} -> ${e.specifier}`))].join('\n');
}

/**
 * The folder cycles of a package at every depth: folders cut to their first 1, 2, … segments below the
 * package's root, so two folders that use each other through any of their subfolders are a cycle too.
 * Each cycle is listed once (at the shallowest depth it shows) with the imports between its folders.
 */
function folderCycles(pkg: Package, list: readonly ImportEdge[]): string[] {
  const folders = list.map((e) => [e, folderOf(e.from, pkg.root), folderOf(e.to!, pkg.root)] as const);
  const deepest = Math.max(0, ...folders.flatMap(([, a, b]) => [a, b]).map((f) => (f === '.' ? 0 : f.split('/').length)));
  const reports: string[] = [];
  const seen = new Set<string>();
  for (let depth = 1; depth <= deepest; depth++) {
    const cut = folders
      .map(([e, a, b]) => [e, folderAtDepth(a, depth), folderAtDepth(b, depth)] as const)
      .filter(([, a, b]) => a !== b);
    for (const cycle of cycles(cut.map(([, a, b]) => [a, b] as const))) {
      const key = cycle.join(' ');
      if (seen.has(key)) continue;
      seen.add(key);
      const members = new Set(cycle);
      const closing = cut.filter(([, a, b]) => members.has(a) && members.has(b)).map(([e]) => e);
      reports.push(`folders ${cycle.map((f) => posix.join(pkg.root, f)).join(' <-> ')}:\n${describeEdges(closing)}`);
    }
  }
  return reports;
}

describe.each(PACKAGES.map((pkg) => [pkg.root, pkg] as const))('%s import graph', (_root, pkg) => {
  const inside = internalEdges(pkg);

  it('has no cycle between files', () => {
    const found = cycles(inside.map((e) => [e.from, e.to!] as const));
    const reports = found.map((cycle) => {
      const members = new Set(cycle);
      return `files ${cycle.join(' <-> ')}:\n${describeEdges(inside.filter((e) => members.has(e.from) && members.has(e.to!)))}`;
    });
    expect(reports.join('\n\n')).toBe('');
  });

  it('has no cycle between folders at any depth', () => {
    expect(folderCycles(pkg, inside).join('\n\n')).toBe('');
  });

  it('has no subfolder that imports its parent folder (or any folder above it)', () => {
    // A parent's files may use its subfolders; what a subfolder needs from above belongs in a folder of
    // its own beside it.
    const upwards = inside.filter((e) => isAncestorFolder(folderOf(e.to!, pkg.root), folderOf(e.from, pkg.root)));
    expect(describeEdges(upwards), `${pkg.root}: subfolders importing their parent folder`).toBe('');
  });
});

describe('cloud/src layers', () => {
  /** The top-level folder of cloud/src a file belongs to (`.` for the files of cloud/src itself). */
  function cloudFolder(path: string): string {
    const folder = folderOf(path, CLOUD_SRC);
    return folder === '.' ? '.' : folder.split('/')[0]!;
  }
  const cloudEdges = edges.filter(
    (e) => e.to?.startsWith(`${CLOUD_SRC}/`) && e.from.startsWith(`${CLOUD_SRC}/`) && !TEST_FILE.test(e.from),
  );

  it('keeps subfolders private: from outside a top-level folder only its own files are used', () => {
    // e.g. the Query RPC calls telemetry/read.ts, never telemetry/wide/ or telemetry/narrow/ directly.
    const reachingIn = cloudEdges.filter((e) => {
      const target = folderOf(e.to!, CLOUD_SRC);
      return target.includes('/') && cloudFolder(e.from) !== cloudFolder(e.to!);
    });
    expect(describeEdges(reachingIn)).toBe('');
  });

  it('imports only downwards through the layers of docs/CONVENTIONS.md', () => {
    const rank = new Map(CLOUD_LAYERS.flatMap((layer, index) => layer.map((folder) => [folder, index] as const)));
    const unknown = [...new Set(cloudEdges.flatMap((e) => [cloudFolder(e.from), cloudFolder(e.to!)]))].filter((f) => !rank.has(f));
    expect(unknown, 'every top-level folder of cloud/src has a layer').toEqual([]);
    const upwards = cloudEdges.filter((e) => {
      const from = cloudFolder(e.from);
      const to = cloudFolder(e.to!);
      return from !== to && rank.get(to)! >= rank.get(from)!;
    });
    expect(describeEdges(upwards)).toBe('');
  });
});

describe('package boundaries', () => {
  it("imports another package only by its name, through that package's exports", () => {
    // Everywhere: packages, their tests and benchmarks, the cross-package tests in test/ and scripts/.
    const leaks: string[] = [];
    for (const e of edges) {
      const from = packageOf(e.from);
      if (e.to !== undefined) {
        const to = packageOf(e.to);
        if (to !== undefined && to !== from) leaks.push(`${e.from} -> ${e.specifier} (a relative path into ${to.name}; import ${to.name} instead)`);
        continue;
      }
      if (!e.specifier.startsWith('@sortie/')) continue;
      const { name, subpath } = splitSpecifier(e.specifier);
      const pkg = PACKAGES.find((p) => p.name === name);
      if (pkg === undefined) leaks.push(`${e.from} -> ${e.specifier} (no workspace is named ${name})`);
      else if (resolveExport(pkg, subpath) === undefined) leaks.push(`${e.from} -> ${e.specifier} (${subpath} is not in ${name}'s exports)`);
    }
    expect(leaks.join('\n')).toBe('');
  });

  it('has no cycle between packages, nor between files across them', () => {
    // A cycle within one package is reported by that package's own rule above; here only those that span packages.
    const resolved = edges
      .filter((e) => !TEST_FILE.test(e.from) && packageOf(e.from) !== undefined)
      .map((e) => [e, targetOf(e)] as const)
      .filter((pair): pair is readonly [ImportEdge, string] => pair[1] !== undefined && packageOf(pair[1]) !== undefined);
    const between = resolved.map(([e, to]) => [packageOf(e.from)!.root, packageOf(to)!.root] as const).filter(([a, b]) => a !== b);
    expect(cycles(between), 'packages').toEqual([]);
    const spanning = cycles(resolved.map(([e, to]) => [e.from, to] as const)).filter(
      (cycle) => new Set(cycle.map((file) => packageOf(file))).size > 1,
    );
    expect(spanning, 'files').toEqual([]);
  });

  it('contracts imports nothing from cloud or edge-agent', () => {
    const leaks = edges.filter(
      (e) => e.from.startsWith('contracts/') && (/^@sortie\/(cloud|edge-agent)/.test(e.specifier) || /^(cloud|edge-agent)\//.test(e.to ?? '')),
    );
    expect(describeEdges(leaks)).toBe('');
  });

  it('edge-agent imports nothing from cloud', () => {
    const leaks = edges.filter(
      (e) => e.from.startsWith('edge-agent/') && (e.specifier.startsWith('@sortie/cloud') || e.to?.startsWith('cloud/')),
    );
    expect(describeEdges(leaks)).toBe('');
  });

  it("every workspace's package.json exports point at files that exist", () => {
    const missing: string[] = [];
    for (const pkg of WORKSPACES) {
      const manifest = JSON.parse(readFileSync(join(ROOT, pkg.root, 'package.json'), 'utf8')) as { exports?: unknown };
      const entries = typeof manifest.exports === 'string' ? { '.': manifest.exports } : ((manifest.exports ?? {}) as Record<string, unknown>);
      for (const entry of Object.keys(entries)) {
        if (entry.includes('*')) continue;
        const file = resolveExport(pkg, entry.startsWith('.') ? entry : '.');
        if (file === undefined || !existsSync(join(ROOT, file))) missing.push(`${pkg.name} ${entry} -> ${file}`);
      }
    }
    expect(missing).toEqual([]);
  });
});

/**
 * The least number of imports between a package's own files that its rules above check (tests left out).
 * Guards the reader: if it stopped matching, or stopped reading a kind of file, every rule would pass
 * vacuously. About two thirds of the counts when the rules were extended to every package.
 */
const CHECKED_IMPORTS_AT_LEAST: Record<string, number> = {
  '@sortie/cloud': 650,
  '@sortie/edge-agent': 120,
  '@sortie/contracts': 70,
  '@sortie/cli': 40,
  '@sortie/client': 18,
  '@sortie/console': 50,
};

/** Whether a folder holds a .tsx file (outside installed packages). */
function listsTsx(dir: string): boolean {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).some((path) => path.endsWith('.tsx') && !path.includes('node_modules'));
}

describe('the import graph is read from real files', () => {
  it('finds the imports it is meant to find in every package', () => {
    const short = PACKAGES.map((pkg) => [pkg, internalEdges(pkg).length] as const).filter(
      ([pkg, count]) => count < (CHECKED_IMPORTS_AT_LEAST[pkg.name] ?? CHECKED_IMPORTS_AT_LEAST[`@sortie/${posix.basename(pkg.root)}`] ?? 1),
    );
    expect(short.map(([pkg, count]) => `${pkg.name}: ${count} imports checked`)).toEqual([]);
    expect(PACKAGES.map((pkg) => pkg.root)).toEqual(expect.arrayContaining(['contracts', 'client', 'cloud', 'edge-agent', 'cli']));
    expect(PACKAGES.some((pkg) => posix.basename(pkg.root) === 'console'), 'the console is checked wherever it lives').toBe(true);
  });

  it('reads static, type-only, re-exporting and dynamic imports, of .ts and .js files', () => {
    const has = (from: string, specifier: string) => edges.some((e) => e.from === from && e.specifier === specifier);
    expect(edges.some((e) => e.from === 'cloud/src/service/service.ts' && e.to === 'cloud/src/service/app.ts')).toBe(true);
    expect(has('contracts/src/index.ts', './http/index.ts'), 'export * from').toBe(true);
    expect(has('client/src/errors.ts', '@sortie/contracts'), 'import type').toBe(true);
    expect(has('cli/bin/sortie.js', '../src/main.ts'), 'import() in the bin').toBe(true);
  });

  it('reads .tsx files', () => {
    const tsx = PACKAGES.filter((pkg) => listsTsx(join(ROOT, pkg.root)));
    const unread = tsx.filter((pkg) => !edges.some((e) => e.from.endsWith('.tsx') && packageOf(e.from) === pkg));
    expect(unread.map((pkg) => pkg.name)).toEqual([]);
  });

  it('resolves every relative import to a file that exists', () => {
    const unresolved = edges.filter((e) => e.to !== undefined && !existsSync(join(ROOT, e.to)));
    expect(describeEdges(unresolved)).toBe('');
  });

  it('finds cycles', () => {
    expect(cycles([['a', 'b'], ['b', 'c'], ['c', 'a'], ['c', 'd']])).toEqual([['a', 'b', 'c']]);
  });
});
