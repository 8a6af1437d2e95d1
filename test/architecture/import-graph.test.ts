import { existsSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cycles, folderOf, readImports, type ImportEdge } from '../../scripts/import-graph.ts';

/**
 * The layering rules of docs/CONVENTIONS.md, read from the import graph, so that a change that brings
 * back a cycle or reaches across a package boundary fails here rather than in a reviewer's head.
 */
const ROOT = join(import.meta.dirname, '..', '..');
const PACKAGES = ['contracts', 'cloud', 'edge-agent'] as const;
const edges = readImports(ROOT, [...PACKAGES, 'test', 'scripts']);
const CLOUD_SRC = 'cloud/src';

/**
 * The top-level folders of cloud/src from the bottom up: a folder imports only folders on an earlier
 * line. Folders on one line do not import each other. `.` is the composition root (app.ts, service.ts,
 * main.ts); testing/ is an entry point beside it. admin/ is an entry point below it: a running embedded
 * server runs the admin CLI's commands itself (admin/socket.ts).
 */
const CLOUD_LAYERS: readonly (readonly string[])[] = [
  ['db', 'net', 'crypto'],
  ['platform'],
  ['http'],
  ['auth'],
  ['datasets', 'templates', 'notifications', 'webhooks'],
  ['experiments', 'arming'],
  ['telemetry'],
  ['channels', 'events', 'limits'],
  ['commands', 'imports'],
  ['delivery', 'live'],
  ['grpc', 'observability', 'console', 'export'],
  ['api-docs', 'admin'],
  ['.'],
  ['testing'],
];

/** The top-level folder of cloud/src a file belongs to (`.` for the files of cloud/src itself). */
function cloudFolder(path: string): string {
  const folder = folderOf(path, CLOUD_SRC);
  return folder === '.' ? '.' : folder.split('/')[0]!;
}

// Tests stand outside the layers: they start the whole service through testing/ to check a part of it.
const cloudEdges = edges.filter(
  (e) => e.to?.startsWith(`${CLOUD_SRC}/`) && e.from.startsWith(`${CLOUD_SRC}/`) && !e.from.endsWith('.test.ts'),
);

function describeEdges(list: ImportEdge[]): string {
  return list.map((e) => `${e.from} -> ${e.specifier}`).join('\n');
}

/** The package a repository path belongs to: contracts, cloud, edge-agent, test or scripts. */
function packageOf(path: string): string {
  return path.split('/')[0]!;
}

describe('cloud/src import graph', () => {
  it('has no cycle between files', () => {
    expect(cycles(cloudEdges.map((e) => [e.from, e.to!] as const))).toEqual([]);
  });

  it('has no cycle between its top-level folders', () => {
    const between = cloudEdges
      .map((e) => [cloudFolder(e.from), cloudFolder(e.to!)] as const)
      .filter(([a, b]) => a !== b);
    expect(cycles(between)).toEqual([]);
  });

  it('has no cycle between folders at any depth (a subfolder never uses its parent)', () => {
    const between = cloudEdges
      .map((e) => [folderOf(e.from, CLOUD_SRC), folderOf(e.to!, CLOUD_SRC)] as const)
      .filter(([a, b]) => a !== b);
    expect(cycles(between)).toEqual([]);
  });

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

  it('is checked on real files (the reader finds the imports it is meant to find)', () => {
    // Guards the regular expression: if it stopped matching, every rule above would pass vacuously.
    expect(cloudEdges.length).toBeGreaterThan(300);
    expect(cloudEdges.some((e) => e.from === 'cloud/src/service.ts' && e.to === 'cloud/src/app.ts')).toBe(true);
    expect(cycles([['a', 'b'], ['b', 'c'], ['c', 'a'], ['c', 'd']])).toEqual([['a', 'b', 'c']]);
  });
});

describe('package boundaries', () => {
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

  it('no source or test reaches into another package by relative path (only through its package entry)', () => {
    // Benchmarks are tools, not code: the MAVLink bench drives the agent's phases and the cloud in one run.
    const leaks = edges.filter(
      (e) => e.to !== undefined && packageOf(e.to) !== packageOf(e.from) && !e.from.includes('/bench/') && packageOf(e.to) !== 'scripts',
    );
    expect(describeEdges(leaks)).toBe('');
  });

  it("every workspace's package.json exports point at files that exist", () => {
    const missing: string[] = [];
    for (const pkg of PACKAGES) {
      const manifest = JSON.parse(readFileSync(join(ROOT, pkg, 'package.json'), 'utf8')) as { exports?: Record<string, string> };
      for (const [entry, file] of Object.entries(manifest.exports ?? {})) {
        if (!existsSync(join(ROOT, pkg, file))) missing.push(`${pkg} ${entry} -> ${posix.join(pkg, file)}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
