import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type { Plugin } from 'esbuild';

/** One built asset of the console, held in memory. */
export interface ConsoleAsset {
  body: Uint8Array;
  contentType: string;
  /** Strong validator, also the cache-busting part of the asset's URL. */
  etag: string;
}

export interface ConsoleBundle {
  /** File name (with its content hash) → asset. */
  assets: Map<string, ConsoleAsset>;
  script: string;
  stylesheet: string;
}

/**
 * The console's app is its own workspace package, `@sortie/console` (top-level `console/`); this folder is
 * only the cloud's edge that bundles and serves it. Its entry is found through the package's exports, so
 * the cloud depends on the package, never on where its files lie.
 */
const ENTRY = fileURLToPath(import.meta.resolve('@sortie/console/main'));

/**
 * The workspace packages the console takes types and a few values from, `@sortie/contracts` and
 * `@sortie/client`, as modules without side effects (which they are: declarations, schemas, functions),
 * so esbuild leaves out every module of theirs the console does not use. Their barrels re-export
 * everything: without this, importing the protobuf service or `SortieApiError` by name would pull in each
 * module the barrel names, zod and every schema among them (decision 0008: the script's weight).
 */
const WORKSPACE_SOURCES = /[\\/](contracts|client)[\\/]src[\\/]/;

const sideEffectFreeWorkspaces: Plugin = {
  name: 'side-effect-free-workspaces',
  setup(build) {
    build.onResolve({ filter: /.*/ }, async (args) => {
      if (args.pluginData === 'side-effect-free-workspaces') return undefined;
      if (!args.path.startsWith('@sortie/') && !WORKSPACE_SOURCES.test(args.importer)) return undefined;
      const resolved = await build.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: 'side-effect-free-workspaces',
      });
      if (resolved.errors.length > 0 || !WORKSPACE_SOURCES.test(resolved.path)) return undefined;
      return { path: resolved.path, sideEffects: false };
    });
  },
};

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/**
 * Bundle the console's TypeScript and TSX (Preact, uPlot, the Connect client) with esbuild into memory.
 * Done at start-up rather than at install so a clone runs with `npm start` alone and a source edit
 * shows on the next start; nothing is written to disk (decision 0008). esbuild is imported lazily: a
 * process that never serves the console never spawns its binary.
 */
export async function buildConsole(): Promise<ConsoleBundle> {
  const esbuild = await import('esbuild');
  const result = await esbuild.build({
    entryPoints: [ENTRY],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: ['chrome120', 'firefox120', 'safari17'],
    minify: true,
    // One script and one stylesheet: no chunks to discover at run time.
    splitting: false,
    outdir: '/console',
    entryNames: 'app-[hash]',
    legalComments: 'none',
    logLevel: 'silent',
    define: { 'process.env.NODE_ENV': '"production"' },
    // The views are TSX on Preact's automatic runtime (the root tsconfig says the same to the type-checker).
    jsx: 'automatic',
    jsxImportSource: 'preact',
    plugins: [sideEffectFreeWorkspaces],
    metafile: true,
  });
  // zod stays out of the page (decision 0008): ~35 KB of the gzipped script, and its first parse probes
  // `new Function`, which the CSP refuses. A module that parses with a contract's schema fails here, by name.
  const withZod = Object.values(result.metafile.outputs)
    .flatMap((o) => Object.entries(o.inputs))
    .filter(([input, { bytesInOutput }]) => bytesInOutput > 0 && /(^|[\\/])node_modules[\\/]zod[\\/]/.test(input))
    .map(([input]) => input);
  if (withZod.length > 0) throw new Error(`the console bundle would carry zod (${withZod[0]}, …): the console parses no schema in the browser (decision 0008)`);
  const assets = new Map<string, ConsoleAsset>();
  let script = '';
  let stylesheet = '';
  for (const file of result.outputFiles) {
    const name = file.path.slice(file.path.lastIndexOf('/') + 1);
    const extension = name.slice(name.lastIndexOf('.'));
    const contentType = CONTENT_TYPES[extension];
    if (!contentType) continue;
    const etag = `"${createHash('sha256').update(file.contents).digest('base64url').slice(0, 22)}"`;
    assets.set(name, { body: file.contents, contentType, etag });
    if (extension === '.js') script = name;
    if (extension === '.css') stylesheet = name;
  }
  if (!script) throw new Error('the console bundle produced no script');
  return { assets, script, stylesheet };
}
