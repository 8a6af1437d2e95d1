import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listFiles } from '../../scripts/list-files.ts';

/** The "where SQL lives" rule of docs/CONVENTIONS.md, checked on the source text. */
const CLOUD_SRC = join(import.meta.dirname, '..', '..', 'cloud', 'src');
const sources = listFiles(CLOUD_SRC).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
const read = (file: string) => readFileSync(join(CLOUD_SRC, file), 'utf8');

/** Kysely's statement builders and its raw `sql` tag: what writing SQL looks like in this code base. */
const SQL = /\.(selectFrom|insertInto|updateTable|deleteFrom|mergeInto)\(|\bsql\s*(<[^>]*>)?\s*`/;

describe('where SQL lives', () => {
  const routeFiles = sources.filter((f) => /(^|\/)routes\.ts$|-route\.ts$/.test(f));

  it('finds the route files it checks', () => {
    expect(routeFiles.length).toBeGreaterThan(10);
    expect(SQL.test("db.selectFrom('commands')")).toBe(true);
    expect(SQL.test('sql<Row>`select 1`')).toBe(true);
  });

  it('no route file writes SQL: routes call repository functions', () => {
    expect(routeFiles.filter((f) => SQL.test(read(f)))).toEqual([]);
  });

  it('no statement is typed as an untyped record', () => {
    expect(sources.filter((f) => /sql<Record<string,\s*(any|unknown)>>/.test(read(f)))).toEqual([]);
  });
});
