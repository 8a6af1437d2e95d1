import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  cycles,
  folderAtDepth,
  folderOf,
  importsOf,
  isAncestorFolder,
  readImports,
  readWorkspaces,
  resolveExport,
  splitSpecifier,
} from './import-graph.ts';

describe('importsOf', () => {
  it('reads every form of static import and re-export', () => {
    const text = [
      "import a from './a.ts';",
      "import type { B } from './b.ts';",
      'import { type C, d } from "./c.ts";',
      "import * as e from './e.ts';",
      "import type * as t from './t.ts';",
      "import f, { g as h } from './f.ts';",
      "import './side-effect.css';",
      "import{i}from'./i.ts';",
      'import {\n  j,\n  k,\n} from \'./jk.ts\';',
      "import data from './data.json' with { type: 'json' };",
      "export { l } from './l.ts';",
      "export type { M } from './m.ts';",
      "export * from './n.ts';",
      "export * as o from './o.ts';",
      "export{p}from'./p.ts';",
    ].join('\n');
    expect(importsOf(text)).toEqual([
      './a.ts', './b.ts', './c.ts', './e.ts', './t.ts', './f.ts', './side-effect.css', './i.ts', './jk.ts',
      './data.json', './l.ts', './m.ts', './n.ts', './o.ts', './p.ts',
    ]);
  });

  it('reads import() with a literal specifier, in code and in types', () => {
    const text = [
      "const a = await import('./a.ts');",
      'const b = await import(`./b.ts`);',
      "const c = await import('./c.ts', { with: { type: 'json' } });",
      "type D = import('./d.ts').D;",
      "const e = await import(`./${name}.ts`); // not a literal: not an edge",
      'const f = await import(specifier);',
    ].join('\n');
    expect(importsOf(text)).toEqual(['./a.ts', './b.ts', './c.ts', './d.ts']);
  });

  it('reads package specifiers as written', () => {
    expect(importsOf("import { x } from '@sortie/contracts/mavlink';\nimport { y } from 'node:fs';")).toEqual([
      '@sortie/contracts/mavlink',
      'node:fs',
    ]);
  });

  it('does not count an import in a comment, a string, a template literal or a regular expression', () => {
    const text = [
      "// import a from './no-line-comment.ts';",
      "/* import b from './no-block-comment.ts'; */",
      "/** {@link import('./no-doc.ts')} */",
      'const c = "import c from \'./no-string.ts\'";',
      "const d = `import d from './no-template.ts' ${'x'} import('./no-template-2.ts')`;",
      "const e = /import e from '.\\/no-regexp.ts'/;",
      "const glob = 'src/*'; import('./after-glob.ts'); const end = '*/';",
      "const url = 'https://example.com//x'; import './after-url.ts';",
      "const ratio = total / 2; import('./after-division.ts'); const half = ratio / 2;",
      "const g = `${await import('./in-substitution.ts')}`;",
      "x.import('./no-method.ts'); const meta = import.meta.url;",
    ].join('\n');
    expect(importsOf(text)).toEqual(['./after-glob.ts', './after-url.ts', './after-division.ts', './in-substitution.ts']);
  });

  it('reads .tsx: imports above markup, and JSX text with an apostrophe costs at most its line', () => {
    const text = [
      "import { h } from 'preact';",
      "import type { View } from './view.ts';",
      "import { Chart } from './chart.tsx';",
      'export function Page(): View {',
      "  return <section><p>Don't import x from './no-jsx-text.ts'</p><Chart /></section>;",
      '}',
      "const lazy = () => import('./lazy.tsx');",
    ].join('\n');
    expect(importsOf(text)).toEqual(['preact', './view.ts', './chart.tsx', './lazy.tsx']);
  });
});

describe('readImports', () => {
  const root = mkdtempSync(join(tmpdir(), 'import-graph-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  };

  it('reads .ts, .tsx and .js files, skips installed packages, and resolves relative specifiers to files', () => {
    write('pkg/src/main.tsx', "import { a } from './a.ts';\nimport { b } from './b';\nimport { c } from './c.js';\nimport { d } from './d';\nimport '@sortie/x';\n");
    write('pkg/src/a.ts', "export { e } from '../lib/e.ts';\n");
    write('pkg/src/b.tsx', 'export const b = 1;\n');
    write('pkg/src/c.ts', 'export const c = 1;\n');
    write('pkg/src/d/index.ts', "export const d = await import('./missing.ts');\n");
    write('pkg/bin/run.js', "await import('../src/main.tsx');\n");
    write('pkg/src/types.d.ts', "import './declared.ts';\n");
    write('pkg/node_modules/dep/index.ts', "import './ignored.ts';\n");
    expect(readImports(root, ['pkg'])).toEqual([
      { from: 'pkg/bin/run.js', specifier: '../src/main.tsx', to: 'pkg/src/main.tsx' },
      { from: 'pkg/src/a.ts', specifier: '../lib/e.ts', to: 'pkg/lib/e.ts' },
      { from: 'pkg/src/d/index.ts', specifier: './missing.ts', to: 'pkg/src/d/missing.ts' },
      { from: 'pkg/src/main.tsx', specifier: './a.ts', to: 'pkg/src/a.ts' },
      { from: 'pkg/src/main.tsx', specifier: './b', to: 'pkg/src/b.tsx' },
      { from: 'pkg/src/main.tsx', specifier: './c.js', to: 'pkg/src/c.ts' },
      { from: 'pkg/src/main.tsx', specifier: './d', to: 'pkg/src/d/index.ts' },
      { from: 'pkg/src/main.tsx', specifier: '@sortie/x', to: undefined },
    ]);
  });

  it('finds the workspaces of the root package.json, a trailing /* taking each package under it', () => {
    write('package.json', JSON.stringify({ workspaces: ['pkg', 'more/*'] }));
    write('pkg/package.json', JSON.stringify({ name: '@sortie/pkg', exports: { '.': './src/main.tsx' } }));
    write('more/one/package.json', JSON.stringify({ name: '@sortie/one', exports: './index.ts' }));
    write('more/notes/readme.md', 'not a package\n');
    expect(readWorkspaces(root)).toEqual([
      { name: '@sortie/pkg', root: 'pkg', exports: { '.': './src/main.tsx' } },
      { name: '@sortie/one', root: 'more/one', exports: './index.ts' },
    ]);
  });
});

describe('resolveExport', () => {
  const pkg = (exports: unknown) => ({ root: 'contracts', exports });

  it('maps an exported subpath to its file, and nothing else', () => {
    const contracts = pkg({ '.': './src/index.ts', './mavlink': './src/mavlink/index.ts' });
    expect(resolveExport(contracts, '.')).toBe('contracts/src/index.ts');
    expect(resolveExport(contracts, './mavlink')).toBe('contracts/src/mavlink/index.ts');
    expect(resolveExport(contracts, './src/errors.ts')).toBeUndefined();
    expect(resolveExport(pkg(undefined), '.')).toBeUndefined();
  });

  it('reads the string shorthand, conditions and subpath patterns', () => {
    expect(resolveExport(pkg('./src/index.ts'), '.')).toBe('contracts/src/index.ts');
    expect(resolveExport(pkg('./src/index.ts'), './x')).toBeUndefined();
    expect(resolveExport(pkg({ types: './src/index.d.ts', default: './src/index.ts' }), '.')).toBe('contracts/src/index.d.ts');
    expect(resolveExport(pkg({ './node': { import: './src/node.ts' } }), './node')).toBe('contracts/src/node.ts');
    const patterns = pkg({ './views/*': './src/views/*.tsx', './views/internal/*': null });
    expect(resolveExport(patterns, './views/chart')).toBe('contracts/src/views/chart.tsx');
    expect(resolveExport(patterns, './views/internal/x')).toBeUndefined();
  });
});

describe('the graph helpers', () => {
  it('splits a specifier into package name and subpath', () => {
    expect(splitSpecifier('@sortie/contracts')).toEqual({ name: '@sortie/contracts', subpath: '.' });
    expect(splitSpecifier('@sortie/contracts/examples/webhook-receiver')).toEqual({ name: '@sortie/contracts', subpath: './examples/webhook-receiver' });
    expect(splitSpecifier('zod/mini')).toEqual({ name: 'zod', subpath: './mini' });
  });

  it('finds cycles, self-loops included, and nothing in a graph without one', () => {
    expect(cycles([['a', 'b'], ['b', 'c'], ['c', 'a'], ['c', 'd']])).toEqual([['a', 'b', 'c']]);
    expect(cycles([['a', 'a']])).toEqual([['a']]);
    expect(cycles([['a', 'b'], ['b', 'c'], ['a', 'c']])).toEqual([]);
  });

  it('names folders, cuts them to a depth and tells a folder above another', () => {
    expect(folderOf('cli/src/commands/query.ts', 'cli')).toBe('src/commands');
    expect(folderOf('cli/index.ts', 'cli')).toBe('.');
    expect(folderAtDepth('src/commands/deep', 2)).toBe('src/commands');
    expect(folderAtDepth('.', 3)).toBe('.');
    expect(isAncestorFolder('src', 'src/commands')).toBe(true);
    expect(isAncestorFolder('.', 'src')).toBe(true);
    expect(isAncestorFolder('src', 'src')).toBe(false);
    expect(isAncestorFolder('src/core', 'src/commands')).toBe(false);
    expect(isAncestorFolder('src/co', 'src/commands')).toBe(false);
  });
});
