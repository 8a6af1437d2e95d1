import { parse } from 'libpg-query';
import { describe, expect, it } from 'vitest';
import { checkMessageTable, narrowHypertableStatements } from './narrow-timescale.ts';
import { messageTableName } from './message-tables.ts';

// Without a server (the real one runs them in telemetry/timescale-compression.test.ts): the statements go through PostgreSQL's own parser and every
// TimescaleDB call is checked against the API's parameter names (sql/ddl_api.sql, sql/policy_api.sql
// and sql/util_functions.sql in github.com/timescale/timescaledb, 2.13 to 2.2x).
const API: Record<string, string[]> = {
  create_hypertable: ['relation', 'dimension', 'create_default_indexes', 'if_not_exists', 'migrate_data'],
  by_range: ['column_name', 'partition_interval', 'partition_func'],
  set_integer_now_func: ['hypertable', 'integer_now_func', 'replace_if_exists'],
  add_compression_policy: ['hypertable', 'compress_after', 'if_not_exists', 'schedule_interval', 'initial_start', 'timezone', 'compress_created_before'],
};
const OPTIONS = ['compress', 'compress_segmentby', 'compress_orderby'];

function walk(node: unknown, visit: (record: Record<string, unknown>) => void): void {
  if (Array.isArray(node)) return node.forEach((n) => walk(n, visit));
  if (node === null || typeof node !== 'object') return;
  visit(node as Record<string, unknown>);
  for (const value of Object.values(node)) walk(value, visit);
}

const TABLE = messageTableName('0123abcd-0123-4567-89ab-0123456789ab', 242);

describe('narrow message tables on TimescaleDB', () => {
  it('parses, and calls TimescaleDB only by its declared parameter names', async () => {
    const statements = narrowHypertableStatements(TABLE);
    expect(statements).toHaveLength(5);
    const called = new Set<string>();
    for (const statement of statements) {
      const tree = await parse(statement);
      walk(tree, (r) => {
        const call = r.FuncCall as { funcname: Array<{ String: { sval: string } }>; args?: unknown[] } | undefined;
        if (call) {
          const name = call.funcname.map((p) => p.String.sval).join('.');
          if (!(name in API)) return;
          called.add(name);
          for (const a of call.args ?? []) {
            const named = (a as { NamedArgExpr?: { name: string } }).NamedArgExpr;
            expect(named, `${name} is called with named arguments only`).toBeDefined();
            expect(API[name]).toContain(named!.name);
          }
        }
        const def = r.DefElem as { defnamespace?: string; defname: string } | undefined;
        if (def?.defnamespace === 'timescaledb') expect(OPTIONS).toContain(def.defname);
      });
    }
    expect([...called].sort()).toEqual(Object.keys(API).sort());
    // Partitioned and ordered on the key; nothing to segment by.
    expect(statements[0]).toContain("column_name => 'frame_seq'");
    expect(statements[3]).toContain("timescaledb.compress_segmentby = ''");
    expect(statements[3]).toContain("timescaledb.compress_orderby = 'frame_seq'");
  });

  it('refuses anything but a message table name', () => {
    expect(checkMessageTable(TABLE)).toBe(TABLE);
    for (const bad of ['narrow_samples', `${TABLE}"; drop table datasets; --`, 'wide_0123456789abcdef0123456789abcdef']) {
      expect(() => narrowHypertableStatements(bad)).toThrow(/not a narrow message table/);
    }
  });
});
