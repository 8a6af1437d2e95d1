import type { JsonSchema, OpenApiDocument } from './document.ts';

const REF_PREFIX = '#/components/schemas/';

/** Resolve a `#/components/schemas/X` reference, or fail naming it. */
export function resolveSchemaRef(document: Pick<OpenApiDocument, 'components'>, ref: string): JsonSchema {
  const target = ref.startsWith(REF_PREFIX) ? document.components.schemas[ref.slice(REF_PREFIX.length)] : undefined;
  if (!target) throw new Error(`unresolvable $ref ${ref}`);
  return target;
}

/**
 * The smallest instance the schema describes: required properties only, each at its lower bound. Good
 * for examples on the docs page and for tests that send what the document promises is valid. Keywords
 * it cannot satisfy in general (a `pattern` the stock string misses) fall back to a plain value. A
 * schema with `examples` answers its first: rules across fields are not in its keywords.
 */
export function sampleFromSchema(document: Pick<OpenApiDocument, 'components'>, schema: JsonSchema, depth = 0): unknown {
  if (depth > 32) throw new Error('schema nests too deeply for a sample');
  if (typeof schema.$ref === 'string') return sampleFromSchema(document, resolveSchemaRef(document, schema.$ref), depth + 1);
  // A schema whose validity spans fields (a limit rule's condition and bounds) says what a valid instance is.
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return structuredClone(schema.examples[0]);
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = schema[key];
    if (Array.isArray(options) && options.length > 0) return sampleFromSchema(document, options[0] as JsonSchema, depth + 1);
  }
  const type = Array.isArray(schema.type) ? (schema.type.find((t) => t !== 'null') ?? 'null') : schema.type;
  switch (type) {
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
      const required = (schema.required ?? []) as string[];
      const out: Record<string, unknown> = {};
      for (const name of required) out[name] = properties[name] ? sampleFromSchema(document, properties[name], depth + 1) : null;
      return out;
    }
    case 'array': {
      const items = (schema.items ?? {}) as JsonSchema;
      const count = typeof schema.minItems === 'number' ? schema.minItems : 0;
      return Array.from({ length: count }, () => sampleFromSchema(document, items, depth + 1));
    }
    case 'string':
      return sampleString(schema);
    case 'integer':
    case 'number':
      return sampleNumber(schema, type === 'integer');
    case 'boolean':
      return false;
    case 'null':
      return null;
    default:
      return {};
  }
}

const FORMAT_SAMPLES: Record<string, string> = {
  uuid: '00000000-0000-4000-8000-000000000000',
  'date-time': '2026-01-01T00:00:00.000Z',
  date: '2026-01-01',
  email: 'someone@example.com',
  uri: 'https://example.com/',
};

function sampleString(schema: JsonSchema): string {
  const format = typeof schema.format === 'string' ? FORMAT_SAMPLES[schema.format] : undefined;
  if (format) return format;
  const min = typeof schema.minLength === 'number' ? schema.minLength : 0;
  const max = typeof schema.maxLength === 'number' ? schema.maxLength : Infinity;
  let value = 'sample'.padEnd(min, 'x').slice(0, max);
  if (typeof schema.pattern === 'string' && !new RegExp(schema.pattern, 'u').test(value)) value = 'a'.repeat(Math.max(min, 1));
  return value;
}

function sampleNumber(schema: JsonSchema, integer: boolean): number {
  let value = 0;
  if (typeof schema.minimum === 'number') value = schema.minimum;
  else if (typeof schema.exclusiveMinimum === 'number') value = schema.exclusiveMinimum + 1;
  else if (typeof schema.maximum === 'number' && schema.maximum < 0) value = schema.maximum;
  return integer ? Math.ceil(value) : value;
}
