import fc from 'fast-check';
import type { JsonSchema, OpenApiDocument } from '@sortie/contracts';

/**
 * Request bodies for the fuzz suite, generated from the JSON Schemas of the OpenAPI document (which the
 * route table builds from the zod schemas the service validates with), then spoiled the ways an
 * attacker would. A body is a tree of plain JSON values plus two things JSON.stringify cannot write:
 * raw text (non-finite numbers, 10,000-level nesting, invalid JSON) and duplicated keys.
 */
export class Raw {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}
export const DUPLICATES = Symbol('duplicated keys');
type Tree = unknown;

/** JSON text of a tree, raw parts verbatim and duplicated keys written twice. */
export function toJsonText(value: Tree): string {
  if (value instanceof Raw) return value.text;
  if (Array.isArray(value)) return `[${value.map(toJsonText).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}:${toJsonText(v)}`);
    const dups = ((value as Record<symbol, unknown>)[DUPLICATES] as Array<[string, Tree]> | undefined) ?? [];
    for (const [k, v] of dups) entries.push(`${JSON.stringify(k)}:${toJsonText(v)}`);
    return `{${entries.join(',')}}`;
  }
  if (value === undefined) return 'null';
  return JSON.stringify(value);
}

/** Real ids of objects the suite created, by the field names that carry them. */
export type IdPools = Record<string, string[]>;

const RFC3339 = fc
  .date({ min: new Date('1971-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true })
  .map((d) => d.toISOString());

/** An arbitrary of instances of `schema` (bounded in size), with uuid fields drawn from the real ids. */
export function arbitraryFromSchema(document: Pick<OpenApiDocument, 'components'>, schema: JsonSchema, ids: IdPools, name = '', depth = 0): fc.Arbitrary<Tree> {
  if (depth > 12) return fc.constant(null);
  if (typeof schema.$ref === 'string') {
    const target = document.components.schemas[schema.$ref.replace('#/components/schemas/', '')];
    return target ? arbitraryFromSchema(document, target, ids, name, depth + 1) : fc.constant(null);
  }
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = schema[key];
    if (Array.isArray(options) && options.length > 0) return fc.oneof(...options.map((o) => arbitraryFromSchema(document, o as JsonSchema, ids, name, depth + 1)));
  }
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string | undefined];
  if (types.length > 1) return fc.oneof(...types.map((type) => arbitraryFromSchema(document, { ...schema, type }, ids, name, depth + 1)));
  switch (types[0]) {
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
      const required = new Set((schema.required ?? []) as string[]);
      const record: Record<string, fc.Arbitrary<Tree>> = {};
      for (const [key, sub] of Object.entries(properties)) record[key] = arbitraryFromSchema(document, sub, ids, key, depth + 1);
      const fixed = fc.record(record, { requiredKeys: [...required].filter((k) => k in record) });
      const extra = schema.additionalProperties;
      if (extra && typeof extra === 'object' && Object.keys(properties).length === 0) {
        const keys = fc.oneof(fc.constantFrom(...(ids.channelKey ?? ['ch_0'])), fc.string({ maxLength: 12 }));
        return fc.dictionary(keys, arbitraryFromSchema(document, extra as JsonSchema, ids, '', depth + 1), { maxKeys: 4 });
      }
      return fixed;
    }
    case 'array': {
      const items = (schema.items ?? {}) as JsonSchema;
      const minLength = typeof schema.minItems === 'number' ? Math.min(schema.minItems, 3) : 0;
      const maxLength = Math.max(minLength, Math.min(typeof schema.maxItems === 'number' ? schema.maxItems : 4, 4));
      return fc.array(arbitraryFromSchema(document, items, ids, name, depth + 1), { minLength, maxLength });
    }
    case 'string':
      return stringArbitrary(schema, ids, name);
    case 'integer':
    case 'number': {
      const min = typeof schema.minimum === 'number' ? schema.minimum : typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum + 1 : -1e6;
      const max = typeof schema.maximum === 'number' ? schema.maximum : typeof schema.exclusiveMaximum === 'number' ? schema.exclusiveMaximum - 1 : 1e6;
      return types[0] === 'integer'
        ? fc.integer({ min: Math.max(Math.ceil(min), -(2 ** 31)), max: Math.min(Math.floor(max), 2 ** 31) })
        : fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
    }
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    default:
      // {}: free-form JSON (command args, event data, ack payload).
      return fc.jsonValue({ maxDepth: 3 });
  }
}

function stringArbitrary(schema: JsonSchema, ids: IdPools, name: string): fc.Arbitrary<string> {
  const pool = ids[name];
  if (schema.format === 'uuid') {
    const known = pool ?? ids.any ?? [];
    return known.length > 0 ? fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...known) }, { weight: 1, arbitrary: fc.uuid() }) : fc.uuid();
  }
  if (schema.format === 'date-time') return RFC3339;
  if (pool && pool.length > 0) return fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...pool) }, { weight: 1, arbitrary: fc.string({ maxLength: 20 }) });
  const minLength = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const maxLength = Math.max(minLength, Math.min(typeof schema.maxLength === 'number' ? schema.maxLength : 40, 40));
  if (typeof schema.pattern === 'string') {
    try {
      return fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length >= minLength && s.length <= (schema.maxLength as number ?? Infinity));
    } catch {
      // a pattern fast-check cannot generate from: plain strings, which the service must refuse cleanly
    }
  }
  return fc.string({ minLength, maxLength, unit: fc.constantFrom(...'abcXYZ019 _-.é日') });
}

const deepArray = (levels: number) => new Raw('['.repeat(levels) + ']'.repeat(levels));
const deepObject = (levels: number) => new Raw('{"a":'.repeat(levels) + '1' + '}'.repeat(levels));

/** Values no well-behaved client sends, for any field. */
export const HOSTILE_VALUES: readonly Tree[] = [
  // text PostgreSQL cannot store, control characters, lone surrogates
  'a\u0000b',
  '\u0000',
  'x\u0001\u0002\u001b[31m\u007f\u0085',
  '\ud800',
  'a\udfffb',
  '\uffff\ufffe\u202e\u200b',
  new Raw('"a\u0001b"'),
  'x'.repeat(100_000),
  "'; DROP TABLE experiments; --",
  '../../../etc/passwd',
  '${jndi:ldap://127.0.0.1/x}',
  '',
  ' ',
  '🛩️'.repeat(300),
  // numbers: huge, tiny, non-finite (JSON.parse reads 1e999 as Infinity), beyond 2^53, negative zero
  new Raw('1e999'),
  new Raw('-1e999'),
  1.7976931348623157e308,
  -1.7976931348623157e308,
  5e-324,
  new Raw('-0'),
  2 ** 53 + 1,
  new Raw('123456789012345678901234567890'),
  new Raw('0.1e-400'),
  -1,
  0,
  2 ** 31,
  -(2 ** 63),
  // dates at and past every edge
  '0000-01-01T00:00:00Z',
  '0001-01-01T00:00:00Z',
  '-000001-01-01T00:00:00Z',
  '+275760-09-13T00:00:00Z',
  '9999-12-31T23:59:59.999999999Z',
  '1684-12-31T23:59:59Z',
  '2256-01-01T00:00:00Z',
  '2026-02-30T00:00:00Z',
  '2026-01-01T24:00:00Z',
  '2026-01-01T00:00:00+99:99',
  '1970-01-01T00:00:00.0000000000000000001Z',
  // ids that look right
  '00000000-0000-0000-0000-000000000000',
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  '00000000-0000-4000-8000-00000000000\u0000',
  // structure: wrong types, deep nesting, large arrays, prototype keys
  null,
  true,
  false,
  [],
  {},
  [null],
  deepArray(10_000),
  deepObject(10_000),
  deepArray(65),
  deepObject(64),
  new Array(20_000).fill(0),
  new Raw('{"__proto__":{"polluted":true}}'),
  new Raw('{"constructor":{"prototype":{"polluted":true}}}'),
  { '\u0000': 1 },
  { '\ud800': '\udc00' },
];

/**
 * The hostile values of each kind of field, in families drawn with equal weight (a family of one NUL
 * string is as likely as the family of ten odd dates).
 */
const TEXT_FAMILIES: readonly (readonly Tree[])[] = [
  ['a\u0000b', '\u0000', 'ok\u0000'],
  ['\ud800', 'a\udfffb', '\udc00\ud800'],
  ['x\u0001\u0002\u001b[31m\u007f\u0085', new Raw('"a\u0001b"'), '\uffff\ufffe\u202e\u200b'],
  ['x'.repeat(100_000), '🛩️'.repeat(300)],
  ["'; DROP TABLE experiments; --", '../../../etc/passwd', '${jndi:ldap://127.0.0.1/x}', '', ' '],
  HOSTILE_VALUES.filter((v) => typeof v === 'string' && /^[-+]?\d{4,6}-\d\d-\d\dT/.test(v)),
  ['00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '00000000-0000-4000-8000-00000000000\u0000'],
];
const NUMBER_FAMILIES: readonly (readonly Tree[])[] = [
  [new Raw('1e999'), new Raw('-1e999')],
  [1.7976931348623157e308, -1.7976931348623157e308, 5e-324, new Raw('0.1e-400'), new Raw('-0')],
  [2 ** 53 + 1, new Raw('123456789012345678901234567890'), 2 ** 31, -(2 ** 63), -1, 0],
];
const STRUCTURE_FAMILIES: readonly (readonly Tree[])[] = [
  [null, true, false, [], {}, [null], 'text', 0],
  [deepArray(10_000), deepObject(10_000), deepArray(65), deepObject(64)],
  [new Array(20_000).fill(0)],
  [new Raw('{"__proto__":{"polluted":true}}'), new Raw('{"constructor":{"prototype":{"polluted":true}}}'), { '\u0000': 1 }, { '\ud800': '\udc00' }],
];
const ANY_FAMILIES = [...TEXT_FAMILIES, ...NUMBER_FAMILIES, ...STRUCTURE_FAMILIES];

const DATES = TEXT_FAMILIES[5]!;
const UUIDS = TEXT_FAMILIES[6]!;

/**
 * Mostly a hostile value of the field's own kind (so the rest of the body stays valid), sometimes
 * anything; a timestamp or an id mostly gets the edge cases of its own format.
 */
function pickHostile(original: Tree, choice: number): Tree {
  const pick = (family: readonly Tree[]) => family[Math.floor(choice / 1000) % family.length];
  if (typeof original === 'string' && choice % 100 < 60) {
    if (/^\d{4}-\d\d-\d\dT/.test(original)) return pick(DATES);
    if (/^[0-9a-f]{8}-[0-9a-f]{4}-/i.test(original)) return pick(UUIDS);
  }
  const families =
    choice % 10 >= 7 ? ANY_FAMILIES : typeof original === 'string' ? TEXT_FAMILIES : typeof original === 'number' ? NUMBER_FAMILIES : STRUCTURE_FAMILIES;
  return pick(families[Math.floor(choice / 10) % families.length]!);
}

/** Whole bodies that are not what any route expects. */
export const HOSTILE_BODIES: readonly string[] = [
  '',
  ' ',
  'null',
  '[]',
  '"x"',
  '1e999',
  '{',
  '{"a":1,}',
  '{"a":1}{"b":2}',
  '\u0000',
  '\ufeff{}',
  deepArray(100_000).text,
  deepObject(20_000).text,
  `{"x":"${'a'.repeat(1_000_000)}"}`,
];

/** Every path to a value in the tree (the root included), as key lists. */
function pathsOf(value: Tree, prefix: Array<string | number> = [], out: Array<Array<string | number>> = []): Array<Array<string | number>> {
  out.push(prefix);
  if (value instanceof Raw || value === null || typeof value !== 'object') return out;
  if (Array.isArray(value)) value.forEach((v, i) => pathsOf(v, [...prefix, i], out));
  else for (const [k, v] of Object.entries(value)) pathsOf(v, [...prefix, k], out);
  return out;
}

function clone(value: Tree): Tree {
  if (value instanceof Raw || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(clone);
  const out: Record<string | symbol, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = clone(v);
  const dups = (value as Record<symbol, unknown>)[DUPLICATES];
  if (dups) out[DUPLICATES] = dups;
  return out;
}

export type Mutation = { kind: 'replace' | 'duplicate-key' | 'add-key' | 'delete'; at: number; value: number; key: string };

const MUTATION = fc.record({
  kind: fc.constantFrom('replace', 'replace', 'replace', 'duplicate-key', 'add-key', 'delete') as fc.Arbitrary<Mutation['kind']>,
  at: fc.nat(),
  value: fc.nat(),
  key: fc.constantFrom('__proto__', 'constructor', 'extra', '\u0000', 'ch_0', 'ch_99999', 'id', ''),
});

/** Apply one mutation at the path it picks; returns the new tree. */
export function mutate(tree: Tree, m: Mutation): Tree {
  const root = clone(tree);
  const paths = pathsOf(root);
  // Leaves (the values) four times in five: that is where a field's own rules are tested.
  const leaves = paths.filter((p) => {
    let v: any = root;
    for (const part of p) v = v?.[part];
    return v === null || typeof v !== 'object' || v instanceof Raw;
  });
  const from = m.at % 5 !== 0 && leaves.length > 0 ? leaves : paths;
  const path = from[Math.floor(m.at / 5) % from.length]!;
  let original: any = root;
  for (const part of path) original = original?.[part];
  const hostile = pickHostile(original, m.value);
  if (path.length === 0 && m.kind === 'replace') return hostile;
  // The container the path ends in (for key mutations: the value itself when it is an object).
  const parentPath = m.kind === 'replace' || m.kind === 'delete' ? path.slice(0, -1) : path;
  let node: any = root;
  for (const part of parentPath) node = node?.[part];
  if (node === null || typeof node !== 'object' || node instanceof Raw) return root;
  const last = path[path.length - 1];
  switch (m.kind) {
    case 'replace':
      node[last!] = hostile;
      break;
    case 'delete':
      if (Array.isArray(node)) node.splice(Number(last), 1);
      else delete node[last!];
      break;
    case 'add-key':
      if (!Array.isArray(node)) node[m.key] = hostile;
      break;
    case 'duplicate-key': {
      if (Array.isArray(node)) break;
      const keys = Object.keys(node);
      const key = keys.length > 0 ? keys[m.at % keys.length]! : m.key;
      node[DUPLICATES] = [...(node[DUPLICATES] ?? []), [key, hostile]];
      break;
    }
  }
  return root;
}

export const mutations = fc.oneof(
  { weight: 3, arbitrary: fc.tuple(MUTATION) as fc.Arbitrary<Mutation[]> },
  { weight: 1, arbitrary: fc.array(MUTATION, { minLength: 2, maxLength: 3 }) },
);

/** Query values that are not what a field expects, already percent-encoded as sent. */
export const HOSTILE_QUERY_VALUES: readonly string[] = [
  '%00',
  'a%00b',
  '%ED%A0%80',
  '%FF%FE',
  '%',
  '%zz',
  '%0d%0aSet-Cookie:%20x=1',
  'x'.repeat(10_000),
  '00000000-0000-0000-0000-000000000000',
  '-1',
  '1e999',
  'NaN',
  '0000-01-01T00:00:00Z',
  '%E2%80%AE',
  '',
];
