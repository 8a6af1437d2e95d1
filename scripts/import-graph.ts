import { readFileSync } from 'node:fs';
import { dirname, join, posix, relative, sep } from 'node:path';
import { listFiles } from './list-files.ts';

/**
 * The import graph of the repository's TypeScript, read with a regular expression (every import in this
 * code base is a static `import … from '…'`, an `export … from '…'` or a literal `import('…')`), so the
 * layering rules in docs/CONVENTIONS.md can be checked by a test without a parser dependency.
 */
export interface ImportEdge {
  /** Repository-relative path of the importing file. */
  from: string;
  /** The specifier as written. */
  specifier: string;
  /** Repository-relative path of the imported file for relative specifiers; undefined for packages. */
  to: string | undefined;
}

const IMPORT = /(?:^|[;\s}])(?:import|export)\s+(?:type\s+)?(?:[\w*{}\s,$]+?\s+from\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Every import of every `.ts` file under the given repository-relative folders. */
export function readImports(root: string, folders: readonly string[]): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const folder of folders) {
    for (const file of listFiles(join(root, folder))) {
      if (!file.endsWith('.ts') || file.includes('node_modules/')) continue;
      const path = posix.join(folder, file);
      const text = stripComments(readFileSync(join(root, path), 'utf8'));
      for (const match of text.matchAll(IMPORT)) {
        const specifier = (match[1] ?? match[2])!;
        const to = specifier.startsWith('.') ? posix.normalize(posix.join(posix.dirname(path), specifier)) : undefined;
        edges.push({ from: path, specifier, to });
      }
    }
  }
  return edges;
}

/** Removes comments so an import shown in a doc comment is not counted. Strings are left alone. */
function stripComments(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
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

// `node scripts/import-graph.ts` prints the cycles of cloud/src, by file and by folder.
if (import.meta.main) {
  const root = join(dirname(new URL(import.meta.url).pathname), '..');
  const edges = readImports(root, ['cloud/src']).filter((e) => e.to && !e.from.endsWith('.test.ts'));
  const fileCycles = cycles(edges.map((e) => [e.from, e.to!] as const));
  const folderEdges = edges
    .map((e) => [folderOf(e.from, 'cloud/src'), folderOf(e.to!, 'cloud/src')] as const)
    .filter(([a, b]) => a !== b);
  const folderCycles = cycles(folderEdges);
  console.log(JSON.stringify({ fileCycles, folderCycles }, null, 2));
  for (const cycle of folderCycles) {
    const members = new Set(cycle);
    for (const e of edges) {
      const a = folderOf(e.from, 'cloud/src');
      const b = folderOf(e.to!, 'cloud/src');
      if (a !== b && members.has(a) && members.has(b)) console.log(`  ${e.from} -> ${e.to}`);
    }
  }
}
