import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, posix, relative, sep } from 'node:path';

/**
 * The import graph of the repository's TypeScript, read with a regular expression (every import in this
 * code base is a static `import … from '…'`, an `export … from '…'`, a side-effect `import '…'` or a
 * literal `import('…')`), so the structure rules in docs/CONVENTIONS.md can be checked by a test without
 * a parser dependency. A small scanner first finds what is code: an `import` inside a comment, a string,
 * a template literal or a regular expression is not counted.
 */
export interface ImportEdge {
  /** Repository-relative path of the importing file. */
  from: string;
  /** The specifier as written. */
  specifier: string;
  /**
   * Repository-relative path of the imported file for relative specifiers (the file on disk when the
   * specifier leaves out its extension or names a folder's index); undefined for packages.
   */
  to: string | undefined;
}

/** The files the reader reads: TypeScript and JavaScript, with or without JSX. */
export const SOURCE_FILE = /\.(?:ts|tsx|mts|cts|js|jsx|mjs|cjs)$/;
/** Tests stand outside a package's structure (they may start the whole of it to check a part). */
export const TEST_FILE = /\.test\.(?:ts|tsx|mts|cts|js|jsx|mjs|cjs)$/;

// Folders that hold no source of the repository's own: installed packages, build output, tool state.
const SKIPPED_FOLDERS = new Set(['node_modules', 'dist', 'coverage']);

const STATIC_IMPORT =
  /(?<![\w$.])(?:import|export)(?:\s+|(?=[{*]))(?:type\s+)?(?:[\w*{}\s,$]+?\s*\bfrom\s*)?(['"])([^'"\n]+)\1|(?<![\w$.])import\s*\(\s*(?:(['"])([^'"\n]+)\3|`([^`$\n]+)`)\s*[,)]/g;

/** The specifiers a module's text imports, in order: static imports and re-exports, then `import()`. */
export function importsOf(text: string): string[] {
  const { masked, code } = scan(text);
  const found: Array<[number, string]> = [];
  for (const match of masked.matchAll(STATIC_IMPORT)) {
    if (!code[match.index]) continue;
    found.push([match.index, (match[2] ?? match[4] ?? match[5])!]);
  }
  return found.sort((a, b) => a[0] - b[0]).map(([, specifier]) => specifier);
}

/**
 * The text with comments blanked (newlines kept), and which characters are code: not inside a string,
 * a template literal's text or a regular expression. Strings end at a line's end, so an apostrophe in
 * JSX text (`<p>Don't</p>`), which this scanner does not tell from a string, costs at most that line.
 */
function scan(text: string): { masked: string; code: Uint8Array } {
  const out = text.split('');
  const code = new Uint8Array(text.length);
  // Brace depths at which a template literal's `${` opened: the `}` closing it resumes the template.
  const templates: number[] = [];
  let depth = 0;
  let i = 0;
  let last = ''; // the last significant code character, to tell a regular expression from a division
  let lastWord = '';
  const blank = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  const template = () => {
    // i is just past a backtick or a `}` closing a substitution; read the literal's text.
    while (i < text.length) {
      const c = text[i]!;
      if (c === '\\') i += 2;
      else if (c === '`') {
        i++;
        return;
      } else if (c === '$' && text[i + 1] === '{') {
        i += 2;
        templates.push(depth);
        depth++;
        return;
      } else i++;
    }
  };
  while (i < text.length) {
    const c = text[i]!;
    const next = text[i + 1];
    if (c === '/' && next === '/') {
      const end = text.indexOf('\n', i);
      const stop = end === -1 ? text.length : end;
      blank(i, stop);
      i = stop;
    } else if (c === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end === -1 ? text.length : end + 2;
      blank(i, stop);
      i = stop;
    } else if (c === "'" || c === '"') {
      code[i] = 1;
      i++;
      while (i < text.length && text[i] !== c && text[i] !== '\n') i += text[i] === '\\' ? 2 : 1;
      i++;
      last = c;
      lastWord = '';
    } else if (c === '`') {
      i++;
      template();
      last = '`';
      lastWord = '';
    } else if (c === '/' && startsRegExp(last, lastWord)) {
      i++;
      let inClass = false;
      while (i < text.length && text[i] !== '\n' && (inClass || text[i] !== '/')) {
        if (text[i] === '\\') i++;
        else if (text[i] === '[') inClass = true;
        else if (text[i] === ']') inClass = false;
        i++;
      }
      i++;
      while (i < text.length && /[a-z]/i.test(text[i]!)) i++;
      last = '/';
      lastWord = '';
    } else {
      code[i] = 1;
      if (c === '{') depth++;
      else if (c === '}') {
        depth--;
        if (templates.length > 0 && templates[templates.length - 1] === depth) {
          templates.pop();
          i++;
          template();
          last = '`';
          lastWord = '';
          continue;
        }
      }
      if (/[\w$]/.test(c)) {
        lastWord = /[\w$]/.test(last) ? lastWord + c : c;
        last = c;
      } else if (!/\s/.test(c)) {
        last = c;
        lastWord = '';
      }
      i++;
    }
  }
  return { masked: out.join(''), code };
}

const BEFORE_REGEXP_WORDS = new Set(['return', 'typeof', 'case', 'do', 'else', 'in', 'of', 'new', 'delete', 'void', 'throw', 'yield', 'await']);

/** Whether a `/` after this code starts a regular expression rather than dividing. */
function startsRegExp(last: string, lastWord: string): boolean {
  if (last === '') return true;
  if (/[\w$]/.test(last)) return BEFORE_REGEXP_WORDS.has(lastWord);
  return !/[)\]}'"`]/.test(last);
}

/** Every import of every source file under the given repository-relative folders. */
export function readImports(root: string, folders: readonly string[]): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const folder of folders) {
    for (const file of sourceFiles(join(root, folder))) {
      const path = posix.join(folder, file);
      for (const specifier of importsOf(readFileSync(join(root, path), 'utf8'))) {
        edges.push({ from: path, specifier, to: isRelative(specifier) ? resolveRelative(root, path, specifier) : undefined });
      }
    }
  }
  return edges;
}

function isRelative(specifier: string): boolean {
  return specifier === '.' || specifier === '..' || specifier.startsWith('./') || specifier.startsWith('../');
}

/** The source files under dir (skipping installed packages and build output), '/'-separated, sorted. */
function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  const walk = (current: string): void => {
    for (const name of readdirSync(current)) {
      const path = join(current, name);
      if (statSync(path).isDirectory()) {
        if (!SKIPPED_FOLDERS.has(name) && !name.startsWith('.')) walk(path);
      } else if (SOURCE_FILE.test(name) && !name.endsWith('.d.ts')) files.push(relative(dir, path).split(sep).join('/'));
    }
  };
  walk(dir);
  return files.sort();
}

/**
 * The repository path a relative specifier names: the file itself, or — as a bundler reads it — the
 * file with a TypeScript extension for `.js`, an added extension, or a folder's index. When none exists
 * the written path is returned, so a test can report the import as unresolved.
 */
function resolveRelative(root: string, from: string, specifier: string): string {
  const written = posix.normalize(posix.join(posix.dirname(from), specifier.replace(/[?#].*$/, '')));
  const stem = written.replace(/\.(?:js|jsx|mjs|cjs)$/, '');
  const candidates = [
    written,
    ...(stem === written ? [] : ['.ts', '.tsx', '.mts', '.cts'].map((ext) => stem + ext)),
    ...['.ts', '.tsx', '.mts', '.js', '.jsx', '.mjs'].map((ext) => written + ext),
    ...['index.ts', 'index.tsx', 'index.js'].map((index) => posix.join(written, index)),
  ];
  return candidates.find((path) => isFile(join(root, path))) ?? written;
}

function isFile(path: string): boolean {
  return existsSync(path) && statSync(path).isFile();
}

/** A workspace of the root package.json: its package name, folder and `exports` map. */
export interface Workspace {
  name: string;
  /** Repository-relative folder of the package. */
  root: string;
  exports: unknown;
}

/** The workspaces the root package.json lists (a trailing `/*` takes every package folder under it). */
export function readWorkspaces(root: string): Workspace[] {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { workspaces?: string[] | { packages?: string[] } };
  const patterns = Array.isArray(manifest.workspaces) ? manifest.workspaces : (manifest.workspaces?.packages ?? []);
  const folders = patterns.flatMap((pattern) => {
    const clean = posix.normalize(pattern).replace(/\/$/, '');
    if (!clean.endsWith('/*')) return [clean];
    const parent = clean.slice(0, -2);
    return readdirSync(join(root, parent))
      .map((name) => posix.join(parent, name))
      .filter((folder) => isFile(join(root, folder, 'package.json')));
  });
  return folders
    .filter((folder) => isFile(join(root, folder, 'package.json')))
    .map((folder) => {
      const pkg = JSON.parse(readFileSync(join(root, folder, 'package.json'), 'utf8')) as { name?: string; exports?: unknown };
      return { name: pkg.name ?? folder, root: folder, exports: pkg.exports };
    });
}

/**
 * The repository path `exports` maps a package's subpath to (`.` or `./name`), or undefined when the
 * package does not export it. Handles subpath patterns (`./x/*`), conditions (the first target found)
 * and the string shorthand for `.`.
 */
export function resolveExport(workspace: Pick<Workspace, 'root' | 'exports'>, subpath: string): string | undefined {
  const { exports } = workspace;
  if (exports === undefined || exports === null) return undefined;
  const map: Record<string, unknown> =
    typeof exports === 'string' || Array.isArray(exports) || !Object.keys(exports).some((key) => key.startsWith('.'))
      ? { '.': exports }
      : (exports as Record<string, unknown>);
  let target: string | undefined;
  if (Object.hasOwn(map, subpath)) target = firstTarget(map[subpath]);
  else {
    // The longest matching pattern wins, as in Node's resolution.
    const patterns = Object.keys(map)
      .filter((key) => key.includes('*'))
      .sort((a, b) => b.length - a.length);
    for (const key of patterns) {
      const [prefix, suffix] = key.split('*') as [string, string];
      if (subpath.startsWith(prefix) && subpath.endsWith(suffix) && subpath.length >= prefix.length + suffix.length) {
        const middle = subpath.slice(prefix.length, subpath.length - suffix.length);
        target = firstTarget(map[key])?.replaceAll('*', middle);
        break;
      }
    }
  }
  return target === undefined ? undefined : posix.normalize(posix.join(workspace.root, target));
}

function firstTarget(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(firstTarget).find((t) => t !== undefined);
  if (value !== null && typeof value === 'object') return Object.values(value).map(firstTarget).find((t) => t !== undefined);
  return undefined;
}

/** A bare specifier split into package name and subpath: `@sortie/contracts/mavlink` → `@sortie/contracts`, `./mavlink`. */
export function splitSpecifier(specifier: string): { name: string; subpath: string } {
  const parts = specifier.split('/');
  const length = specifier.startsWith('@') ? 2 : 1;
  const rest = parts.slice(length).join('/');
  return { name: parts.slice(0, length).join('/'), subpath: rest === '' ? '.' : `./${rest}` };
}

/** Strongly connected components with more than one node (or a self-loop): the cycles of a graph. */
export function cycles(edges: Iterable<readonly [string, string]>): string[][] {
  const graph = new Map<string, Set<string>>();
  for (const [a, b] of edges) {
    if (!graph.has(a)) graph.set(a, new Set());
    if (!graph.has(b)) graph.set(b, new Set());
    graph.get(a)!.add(b);
  }
  // Tarjan, iterative so a deep graph cannot overflow the stack.
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const found: string[][] = [];
  for (const start of graph.keys()) {
    if (indices.has(start)) continue;
    const work: Array<{ node: string; next: Iterator<string> }> = [];
    const visit = (node: string) => {
      indices.set(node, index);
      low.set(node, index);
      index++;
      stack.push(node);
      onStack.add(node);
      work.push({ node, next: graph.get(node)!.values() });
    };
    visit(start);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      const step = frame.next.next();
      if (!step.done) {
        const child = step.value;
        if (!indices.has(child)) visit(child);
        else if (onStack.has(child)) low.set(frame.node, Math.min(low.get(frame.node)!, indices.get(child)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === indices.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        if (component.length > 1 || graph.get(frame.node)!.has(frame.node)) found.push(component.sort());
      }
    }
  }
  return found;
}

/** The folder of a file relative to base (`delivery/engine.ts` → `delivery`; a file at the top → `.`). */
export function folderOf(path: string, base: string): string {
  const rel = relative(base, path).split(sep).join('/');
  return posix.dirname(rel);
}

/** A folder cut to its first `depth` segments (`a/b/c` at depth 2 → `a/b`; `.` stays `.`). */
export function folderAtDepth(folder: string, depth: number): string {
  return folder === '.' ? '.' : folder.split('/').slice(0, depth).join('/');
}

/** Whether `ancestor` is a folder above `folder` (`.` is above every other folder). */
export function isAncestorFolder(ancestor: string, folder: string): boolean {
  if (ancestor === folder) return false;
  return ancestor === '.' || folder.startsWith(`${ancestor}/`);
}

// `node scripts/import-graph.ts [folder]` prints the cycles of a folder (cloud/src unless given), by file
// and by folder, with the imports that close each folder cycle.
if (import.meta.main) {
  const root = join(dirname(new URL(import.meta.url).pathname), '..');
  const base = process.argv[2]?.replace(/\/$/, '') ?? 'cloud/src';
  const edges = readImports(root, [base]).filter((e) => e.to?.startsWith(`${base}/`) && !TEST_FILE.test(e.from));
  const fileCycles = cycles(edges.map((e) => [e.from, e.to!] as const));
  const folderEdges = edges
    .map((e) => [folderOf(e.from, base), folderOf(e.to!, base)] as const)
    .filter(([a, b]) => a !== b);
  const folderCycles = cycles(folderEdges);
  console.log(JSON.stringify({ fileCycles, folderCycles }, null, 2));
  for (const cycle of folderCycles) {
    const members = new Set(cycle);
    for (const e of edges) {
      const a = folderOf(e.from, base);
      const b = folderOf(e.to!, base);
      if (a !== b && members.has(a) && members.has(b)) console.log(`  ${e.from} -> ${e.to}`);
    }
  }
}
