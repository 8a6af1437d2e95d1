import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
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
 * zod re-exports every locale as a namespace (`z.locales`), which a bundler cannot shake: about 40 % of
 * the console's script would be error messages in fifty languages nobody reads here. Its locale index
 * becomes English alone (the one zod configures by default).
 */
const englishOnlyZod: Plugin = {
  name: 'english-only-zod',
  setup(build) {
    build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]zod[\\/]/.test(args.importer) ? { path: fileURLToPath(new URL('../locales/en.js', `file://${args.importer}`)), namespace: 'zod-locales' } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'zod-locales' }, (args) => ({
      contents: `export { default as en } from ${JSON.stringify(args.path)};`,
      resolveDir: args.path.slice(0, args.path.lastIndexOf('/')),
      loader: 'js',
    }));
  },
};

/**
 * zod modules the console never runs, each standing in for a stub with the same exports: `z.compile`
 * (its parsers are built with `new Function`, which the page's CSP refuses: zod runs jitless there) and
 * `z.fromJSONSchema`. zod lists the first as having side effects and re-exports both from `z`, so esbuild
 * keeps them whole: about 12 KB of the gzipped script, room the budget needs.
 */
const UNUSED_ZOD: Record<string, { from: RegExp; contents: string }> = {
  './compile.js': {
    from: /[\\/]zod[\\/]v4[\\/]core[\\/]/,
    contents: `const no = () => { throw new Error('z.compile is not in the console'); };
export const INVALID = Symbol.for('zod.compile.invalid');
export const toZod = no, compile = no, withParser = no;
export class ZodCompileAsyncError extends Error {}
export class ZodCompileUnsupportedError extends Error {}`,
  },
  './from-json-schema.js': {
    from: /[\\/]zod[\\/]v4[\\/]classic[\\/]/,
    contents: `export const fromJSONSchema = () => { throw new Error('z.fromJSONSchema is not in the console'); };`,
  },
};

const unusedZod: Plugin = {
  name: 'unused-zod',
  setup(build) {
    build.onResolve({ filter: /^\.\/(compile|from-json-schema)\.js$/ }, (args) =>
      UNUSED_ZOD[args.path]?.from.test(args.importer) ? { path: args.path, namespace: 'zod-unused' } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'zod-unused' }, (args) => ({ contents: UNUSED_ZOD[args.path]!.contents, loader: 'js' }));
  },
};

/**
 * zod's JSON Schema generation (`z.toJSONSchema`, a schema's `toJSONSchema()`, its introspection getters
 * such as `minLength`): every schema class refers to it, so esbuild keeps it whole, about 6 KB of the
 * gzipped script, yet the console never generates a JSON Schema (the service documents its API itself).
 * Each of its modules becomes one with the same export names, each a function that throws when called (a
 * use added later fails loudly, never silently wrong). The names are read from the real module, so a newer
 * zod that exports more still builds.
 */
const JSON_SCHEMA_MODULES = /[\\/]zod[\\/]v4[\\/]core[\\/](json-schema-processors|to-json-schema|json-schema-generator)\.js$/;

const zodWithoutJsonSchema: Plugin = {
  name: 'zod-without-json-schema',
  setup(build) {
    build.onLoad({ filter: JSON_SCHEMA_MODULES }, async (args) => {
      const source = await readFile(args.path, 'utf8');
      const names = new Set<string>();
      for (const m of source.matchAll(/^export (?:const|function|class|let) (\w+)/gm)) names.add(m[1]!);
      for (const m of source.matchAll(/^export \{([^}]*)\}/gm)) for (const part of m[1]!.split(',')) names.add(part.trim().split(/\s+as\s+/).pop()!);
      names.delete('');
      // The `create…Method` factories run when a schema's `~standard` is read: they hand back the thrower.
      const stub = [...names].map((name) => `export const ${name} = ${/^create\w*Method$/.test(name) ? '() => no' : 'no'};`);
      return { contents: `const no = () => { throw new Error('zod JSON Schema is not in the console'); };\n${stub.join('\n')}`, loader: 'js' };
    });
  },
};

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/**
 * Bundle the console's TypeScript (Preact, uPlot, the contracts' schemas) with esbuild into memory.
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
    plugins: [englishOnlyZod, unusedZod, zodWithoutJsonSchema],
  });
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
