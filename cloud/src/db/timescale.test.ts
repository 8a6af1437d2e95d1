import { parse } from 'libpg-query';
import { describe, expect, it } from 'vitest';
import * as timescale from './timescale.ts';
import {
  checkWideTable,
  pendingWideTablesSql,
  timescaleVersionSupported,
  wideCompressionPolicySql,
  wideCompressionSql,
  wideHypertableSql,
  wideLayoutStatements,
} from './timescale.ts';

// The SQL checked without a server (a real TimescaleDB runs it in timescale-startup.test.ts and
// telemetry/timescale-compression.test.ts, which catch behaviour; this catches a renamed parameter
// for every version at once): every statement the module can produce goes through PostgreSQL's own parser (libpg-query),
// and every TimescaleDB function call and table option is checked against the API's parameter names.

const SAMPLE = `wide_${'0123456789abcdef'.repeat(2)}`;

/**
 * Parameter names of the TimescaleDB functions we call, as declared in its SQL API (2.13 to 2.2x):
 * https://docs.timescale.com/api/latest/hypertable/create_hypertable/ ,
 * https://docs.timescale.com/api/latest/compression/add_compression_policy/ (sql/ddl_api.sql and
 * sql/policy_api.sql in github.com/timescale/timescaledb). `required` lists the ones without a default.
 */
const TIMESCALE_FUNCTIONS: Record<string, { params: string[]; required: string[] }> = {
  create_hypertable: { params: ['relation', 'dimension', 'create_default_indexes', 'if_not_exists', 'migrate_data'], required: ['relation', 'dimension'] },
  by_range: { params: ['column_name', 'partition_interval', 'partition_func'], required: ['column_name'] },
  add_compression_policy: {
    params: ['hypertable', 'compress_after', 'if_not_exists', 'schedule_interval', 'initial_start', 'timezone', 'compress_created_before'],
    required: ['hypertable'],
  },
};
/** `ALTER TABLE … SET (timescaledb.…)` options (https://docs.timescale.com/api/latest/compression/alter_table_compression/). */
const TIMESCALE_TABLE_OPTIONS = ['compress', 'compress_segmentby', 'compress_orderby', 'compress_chunk_time_interval'];
/** Plain PostgreSQL functions the module may call; anything else is a typo or a new dependency to review. */
const POSTGRES_FUNCTIONS = ['current_schema', 'to_regclass', 'pg_advisory_xact_lock', 'hashtext'];

interface Call {
  name: string;
  named: string[];
  positional: number;
}

/** Walk a libpg-query AST: every function call (name, named arguments) and every namespaced reloption. */
function inspect(tree: unknown): { calls: Call[]; options: Array<{ namespace: string | undefined; name: string }> } {
  const calls: Call[] = [];
  const options: Array<{ namespace: string | undefined; name: string }> = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (node === null || typeof node !== 'object') return;
    const record = node as Record<string, unknown>;
    const call = record.FuncCall as { funcname: Array<{ String: { sval: string } }>; args?: unknown[] } | undefined;
    if (call) {
      const args = call.args ?? [];
      calls.push({
        name: call.funcname.map((part) => part.String.sval).join('.'),
        named: args.flatMap((a) => ((a as { NamedArgExpr?: { name: string } }).NamedArgExpr ? [(a as { NamedArgExpr: { name: string } }).NamedArgExpr.name] : [])),
        positional: args.filter((a) => !(a as { NamedArgExpr?: unknown }).NamedArgExpr).length,
      });
    }
    const cmd = record.AlterTableCmd as { subtype: string; def?: { List?: { items: Array<{ DefElem: { defnamespace?: string; defname: string } }> } } } | undefined;
    if (cmd?.subtype === 'AT_SetRelOptions') {
      for (const item of cmd.def?.List?.items ?? []) options.push({ namespace: item.DefElem.defnamespace, name: item.DefElem.defname });
    }
    Object.values(record).forEach(visit);
  };
  visit(tree);
  return { calls, options };
}

/** The problems of one statement against the allow-lists; empty when it is fine. */
async function problemsOf(statement: string): Promise<string[]> {
  const tree = await parse(statement);
  expect(tree.stmts).toHaveLength(1);
  const { calls, options } = inspect(tree);
  const problems: string[] = [];
  for (const call of calls) {
    const api = TIMESCALE_FUNCTIONS[call.name];
    if (!api) {
      if (!POSTGRES_FUNCTIONS.includes(call.name)) problems.push(`unknown function ${call.name}`);
      continue;
    }
    if (call.positional > 0) problems.push(`${call.name}: positional arguments`);
    for (const name of call.named) if (!api.params.includes(name)) problems.push(`${call.name}: no parameter ${name}`);
    for (const name of api.required) if (!call.named.includes(name)) problems.push(`${call.name}: missing ${name}`);
  }
  for (const option of options) {
    if (option.namespace !== 'timescaledb' || !TIMESCALE_TABLE_OPTIONS.includes(option.name)) problems.push(`table option ${option.namespace}.${option.name}`);
  }
  return problems;
}

/** Every statement the module exports: constants named *_SQL and functions named *Sql, for the sample table. */
function everyStatement(): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(timescale)) {
    if (typeof value === 'string' && name.endsWith('_SQL')) out.push([name, value]);
    if (typeof value === 'function' && name.endsWith('Sql')) {
      out.push([`${name}(table)`, (value as (table: string) => string)(SAMPLE)]);
      if (value.length === 0 || name === 'pendingWideTablesSql') out.push([`${name}()`, (value as () => string)()]);
    }
  }
  return out;
}

describe('TimescaleDB statements', () => {
  const statements = everyStatement();

  it('covers every statement the module exports', () => {
    expect(statements.map(([name]) => name).sort()).toEqual(
      [
        'CREATE_EXTENSION_SQL',
        'LAYOUT_LOCK_SQL',
        'pendingWideTablesSql()',
        'pendingWideTablesSql(table)',
        'wideCompressionPolicySql(table)',
        'wideCompressionSql(table)',
        'wideHypertableSql(table)',
      ].sort(),
    );
  });

  it.each(everyStatement())('%s parses and uses only known TimescaleDB names', async (_, statement) => {
    expect(await problemsOf(statement)).toEqual([]);
  });

  it('the new-table sequence is hypertable, compression, policy, with the chosen interval and age', async () => {
    const statements = wideLayoutStatements({ table: SAMPLE, hypertable: false, compressed: false });
    expect(statements).toEqual([wideHypertableSql(SAMPLE), wideCompressionSql(SAMPLE), wideCompressionPolicySql(SAMPLE)]);
    const [hypertable, compression, policy] = await Promise.all(statements.map((s) => parse(s)));
    expect(JSON.stringify(hypertable)).toContain('"sval":"1 hour"');
    expect(JSON.stringify(hypertable)).toContain(`"sval":"\\"${SAMPLE}\\""`);
    expect(JSON.stringify(compression)).toContain('"defname":"compress_orderby","arg":{"String":{"sval":"time"}}');
    expect(JSON.stringify(policy)).toContain('"sval":"7 days"');
  });

  it('an existing table gets only what it lacks', () => {
    expect(wideLayoutStatements({ table: SAMPLE, hypertable: true, compressed: false })).toEqual([wideCompressionSql(SAMPLE), wideCompressionPolicySql(SAMPLE)]);
    expect(wideLayoutStatements({ table: SAMPLE, hypertable: false, compressed: true })).toEqual([wideHypertableSql(SAMPLE)]);
    expect(wideLayoutStatements({ table: SAMPLE, hypertable: true, compressed: true })).toEqual([]);
  });

  it('the pending query narrows to one table when given one', () => {
    expect(pendingWideTablesSql(SAMPLE)).toContain(`d.table_name = '${SAMPLE}'`);
    expect(pendingWideTablesSql()).not.toContain(SAMPLE);
  });
});

describe('the checks themselves can fail', () => {
  it('a broken statement does not parse', async () => {
    await expect(parse(wideCompressionSql(SAMPLE).replace(')', ''))).rejects.toThrow(/syntax error/);
    await expect(parse(wideHypertableSql(SAMPLE).replace('select', 'selec'))).rejects.toThrow(/syntax error at or near/);
  });

  it('a misspelt or positional argument, a missing required one, an unknown option or function is reported', async () => {
    expect(await problemsOf(wideHypertableSql(SAMPLE).replace('if_not_exists', 'if_not_exist'))).toEqual(['create_hypertable: no parameter if_not_exist']);
    expect(await problemsOf(wideCompressionPolicySql(SAMPLE).replace('hypertable => ', ''))).toEqual([
      'add_compression_policy: positional arguments',
      'add_compression_policy: missing hypertable',
    ]);
    expect(await problemsOf(wideCompressionSql(SAMPLE).replace('compress_orderby', 'compress_order_by'))).toEqual(['table option timescaledb.compress_order_by']);
    expect(await problemsOf("select add_retention_policy(relation => 'x', drop_after => interval '1 day')")).toEqual(['unknown function add_retention_policy']);
  });
});

describe('names and versions', () => {
  it('refuses anything but a wide table name, so nothing reaches the SQL unvalidated', () => {
    expect(checkWideTable(SAMPLE)).toBe(SAMPLE);
    for (const bad of ['wide_x', `${SAMPLE}"; drop table datasets; --`, 'narrow_samples', `WIDE_${SAMPLE.slice(5)}`, `wide_${'0'.repeat(33)}`]) {
      expect(() => wideHypertableSql(bad)).toThrow(/not a wide table name/);
      expect(() => wideCompressionSql(bad)).toThrow(/not a wide table name/);
      expect(() => wideCompressionPolicySql(bad)).toThrow(/not a wide table name/);
      expect(() => pendingWideTablesSql(bad)).toThrow(/not a wide table name/);
    }
  });

  it('supports TimescaleDB 2.13 and later', () => {
    for (const v of ['2.13.0', '2.13', '2.17.2', '2.27.2', '3.0.0', '2.18.0-dev']) expect(timescaleVersionSupported(v)).toBe(true);
    for (const v of ['2.12.2', '2.9.3', '1.7.5', '', 'dev']) expect(timescaleVersionSupported(v)).toBe(false);
  });
});
