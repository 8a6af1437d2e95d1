import { formatIssuePath, type ErrorDetail } from '@sortie/contracts';
import { z } from 'zod';
import type { CommandTemplateRow } from '../db/schema.ts';

/**
 * The JSON Schema subset a template may use for `args` (documented on the contract, templates.ts).
 *
 * Validation runs through zod's own `z.fromJSONSchema` rather than a hand-written validator. That
 * converter is lenient: it ignores keywords it does not know, ignores a constraint whose `type` is
 * missing, lets `enum` override sibling keywords, applies `default` to missing required properties and
 * compiles `pattern` as a live RegExp. `checkArgsSchema` therefore admits only schemas on which the
 * conversion is exact, and `compileArgsSchema` strips annotations before converting.
 */

const MAX_DEPTH = 16;
const MAX_SCHEMA_CHARS = 64 * 1024;

const TYPES = ['object', 'array', 'string', 'number', 'integer', 'boolean', 'null'] as const;
type TypeName = (typeof TYPES)[number];

const FORMATS = new Set(['date-time', 'date', 'time', 'duration', 'email', 'uri', 'uuid', 'ipv4', 'ipv6', 'hostname']);
const SCHEMA_URIS = new Set(['https://json-schema.org/draft/2020-12/schema', 'http://json-schema.org/draft-07/schema#']);
const ANNOTATIONS = new Set(['title', 'description', '$comment', 'examples', 'default', 'deprecated']);

/** Keywords that only constrain one kind of value, and the types that make them meaningful. */
const TYPED_KEYWORDS: Record<string, readonly TypeName[]> = {
  properties: ['object'],
  required: ['object'],
  additionalProperties: ['object'],
  minProperties: ['object'],
  maxProperties: ['object'],
  items: ['array'],
  minItems: ['array'],
  maxItems: ['array'],
  uniqueItems: ['array'],
  minLength: ['string'],
  maxLength: ['string'],
  format: ['string'],
  minimum: ['number', 'integer'],
  maximum: ['number', 'integer'],
  exclusiveMinimum: ['number', 'integer'],
  exclusiveMaximum: ['number', 'integer'],
  multipleOf: ['number', 'integer'],
};

const REFUSED: Record<string, string> = {
  $ref: 'references ($ref) are not supported; write the schema inline',
  $defs: 'definitions ($defs) are not supported; write the schema inline',
  definitions: 'definitions are not supported; write the schema inline',
  pattern: 'pattern is not supported: a regular expression from a template could stall the shared server',
  patternProperties: 'patternProperties is not supported: a regular expression from a template could stall the shared server',
  not: 'not is not supported',
  if: 'if/then/else is not supported',
  then: 'if/then/else is not supported',
  else: 'if/then/else is not supported',
  prefixItems: 'tuples (prefixItems) are not supported',
};

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Node = { [key: string]: unknown };

const isPlainObject = (v: unknown): v is Node => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNonNegInt = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
const isPrimitive = (v: unknown) => v === null || ['string', 'number', 'boolean'].includes(typeof v);

function matchesType(value: unknown, type: TypeName): boolean {
  switch (type) {
    case 'null':
      return value === null;
    case 'integer':
      return Number.isInteger(value);
    case 'object':
      return isPlainObject(value);
    case 'array':
      return Array.isArray(value);
    default:
      return typeof value === type;
  }
}

function join(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return path === '' ? key : `${path}.${key}`;
}

/**
 * Problems with a template's args schema, each with a field path under `field` (e.g.
 * `argsSchema.properties.altitude.minimum`). Empty means the schema is accepted and will compile.
 */
export function checkArgsSchema(schema: unknown, field = 'argsSchema'): ErrorDetail[] {
  const issues: ErrorDetail[] = [];
  const add = (path: string, message: string): void => {
    issues.push({ field: path, message });
  };

  let text: string | undefined;
  try {
    text = JSON.stringify(schema);
  } catch {
    // cyclic or otherwise not JSON; cannot come from a request body
  }
  if (text === undefined) return [{ field, message: 'must be a JSON object' }];
  if (text.length > MAX_SCHEMA_CHARS) return [{ field, message: `must be at most ${MAX_SCHEMA_CHARS} characters of JSON` }];
  if (!isPlainObject(schema)) return [{ field, message: 'must be a JSON Schema object' }];
  if (schema.type !== 'object') add(join(field, 'type'), 'the root of an args schema must have "type": "object"');
  if (schema.$schema !== undefined && !SCHEMA_URIS.has(schema.$schema as string)) {
    add(join(field, '$schema'), `must be one of ${[...SCHEMA_URIS].join(', ')}`);
  }

  const walk = (node: unknown, path: string, depth: number): void => {
    if (depth > MAX_DEPTH) return add(path, `schemas may nest at most ${MAX_DEPTH} deep`);
    if (!isPlainObject(node)) return add(path, 'must be a schema object');

    let types: TypeName[] | undefined;
    if (node.type !== undefined) {
      const list = Array.isArray(node.type) ? node.type : [node.type];
      const bad = list.filter((t) => !(TYPES as readonly unknown[]).includes(t));
      if (list.length === 0 || bad.length > 0 || new Set(list).size !== list.length) {
        add(join(path, 'type'), `must be one of ${TYPES.join(', ')}, or a non-empty array of distinct ones`);
      } else {
        types = list as TypeName[];
      }
    }

    const fixed = node.enum !== undefined || node.const !== undefined;
    for (const [key, value] of Object.entries(node)) {
      const at = join(path, key);
      if (key === 'type' || ANNOTATIONS.has(key) || (key === '$schema' && depth === 0)) continue;
      // Own keys only: `constructor` or `__proto__` in a schema would otherwise find Object.prototype's.
      if (Object.hasOwn(REFUSED, key)) {
        add(at, REFUSED[key]!);
        continue;
      }
      const wants = Object.hasOwn(TYPED_KEYWORDS, key) ? TYPED_KEYWORDS[key] : undefined;
      if (wants) {
        if (fixed) {
          add(at, 'cannot be combined with enum or const');
          continue;
        }
        if (!types || !types.some((t) => wants.includes(t))) {
          add(at, `applies only with "type": ${wants.map((w) => `"${w}"`).join(' or ')}; add the type`);
          continue;
        }
      }
      switch (key) {
        case 'enum':
          if (!Array.isArray(value) || value.length === 0 || !value.every(isPrimitive)) {
            add(at, 'must be a non-empty array of strings, numbers, booleans or null');
          } else if (types && value.some((v) => !types.some((t) => matchesType(v, t)))) {
            add(at, `every value must match "type": ${JSON.stringify(node.type)}`);
          }
          break;
        case 'const':
          if (!isPrimitive(value)) add(at, 'must be a string, number, boolean or null');
          else if (types && !types.some((t) => matchesType(value, t))) add(at, `must match "type": ${JSON.stringify(node.type)}`);
          break;
        case 'properties':
          if (!isPlainObject(value)) add(at, 'must be an object of schemas');
          else for (const [name, sub] of Object.entries(value)) walk(sub, join(at, name), depth + 1);
          break;
        case 'required':
          if (!Array.isArray(value) || !value.every((v) => typeof v === 'string') || new Set(value).size !== value.length) {
            add(at, 'must be an array of distinct property names');
          } else {
            const declared = isPlainObject(node.properties) ? node.properties : {};
            for (const [i, name] of value.entries()) {
              if (!Object.hasOwn(declared, name)) add(join(at, i), `"${name}" is required but not listed in properties`);
            }
          }
          break;
        case 'additionalProperties':
          if (typeof value !== 'boolean') walk(value, at, depth + 1);
          break;
        case 'items':
          if (Array.isArray(value)) add(at, 'must be one schema (tuples are not supported)');
          else walk(value, at, depth + 1);
          break;
        case 'anyOf':
        case 'oneOf':
        case 'allOf':
          if (!Array.isArray(value) || value.length === 0) add(at, 'must be a non-empty array of schemas');
          else value.forEach((sub, i) => walk(sub, join(at, i), depth + 1));
          break;
        case 'minProperties':
        case 'maxProperties':
        case 'minItems':
        case 'maxItems':
        case 'minLength':
        case 'maxLength':
          if (!isNonNegInt(value)) add(at, 'must be a non-negative integer');
          break;
        case 'uniqueItems':
          if (typeof value !== 'boolean') add(at, 'must be true or false');
          break;
        case 'format':
          if (typeof value !== 'string' || !FORMATS.has(value)) add(at, `must be one of ${[...FORMATS].join(', ')}`);
          break;
        case 'minimum':
        case 'maximum':
        case 'exclusiveMinimum':
        case 'exclusiveMaximum':
          if (typeof value !== 'number' || !Number.isFinite(value)) add(at, 'must be a number');
          break;
        case 'multipleOf':
          if (typeof value !== 'number' || !(value > 0) || !Number.isFinite(value)) add(at, 'must be a number greater than 0');
          break;
        default:
          add(at, `unsupported keyword "${key}"`);
      }
    }
  };
  walk(schema, field, 0);

  if (issues.length === 0) {
    // Belt and braces: anything the subset check admits must also convert.
    try {
      compileArgsSchema(schema as Record<string, unknown>);
    } catch (error) {
      add(field, `cannot be used: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return issues;
}

/** Remove annotations, recursively through subschemas (not through enum/const values). */
function stripAnnotations(node: Json, isSchema: boolean): Json {
  if (!isSchema || !isPlainObject(node)) return node;
  const out: { [key: string]: Json } = {};
  for (const [key, value] of Object.entries(node)) {
    if (ANNOTATIONS.has(key)) continue;
    if (key === 'properties' && isPlainObject(value)) {
      out[key] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, stripAnnotations(v as Json, true)]));
    } else if ((key === 'anyOf' || key === 'oneOf' || key === 'allOf') && Array.isArray(value)) {
      out[key] = value.map((v) => stripAnnotations(v, true));
    } else if (key === 'items' || key === 'additionalProperties') {
      out[key] = stripAnnotations(value as Json, true);
    } else {
      out[key] = value as Json;
    }
  }
  return out;
}

/** Convert an accepted schema. A private registry: zod would otherwise keep metadata of every conversion forever. */
export function compileArgsSchema(schema: Record<string, unknown>): z.ZodType {
  const stripped = stripAnnotations(schema as Json, true) as Record<string, unknown>;
  return z.fromJSONSchema(stripped as Parameters<typeof z.fromJSONSchema>[0], { registry: z.registry() });
}

/**
 * Check a command's `args` against its template's schema. Returns the problems as envelope details with
 * fields under `args` (e.g. `args.altitude`, `args.waypoints[2].lat`); empty when valid or when the
 * template has no schema.
 */
export function validateArgs(template: Pick<CommandTemplateRow, 'args_schema'>, args: unknown): ErrorDetail[] {
  if (template.args_schema === null || template.args_schema === undefined) return [];
  const result = compileArgsSchema(template.args_schema).safeParse(args);
  if (result.success) return [];
  const details: ErrorDetail[] = [];
  for (const issue of result.error.issues) {
    const field = formatIssuePath(['args', ...issue.path]);
    if (issue.code === 'unrecognized_keys') {
      // One detail per unexpected argument, so each names its own field.
      for (const key of issue.keys) details.push({ field: `${field}.${key}`, message: 'is not an argument of this template' });
    } else if (issue.code === 'invalid_type' && isMissingProperty(args, issue.path)) {
      details.push({ field, message: 'is required' });
    } else {
      details.push({ field, message: issue.message });
    }
  }
  return details;
}

/** True when the path ends at a key that its (existing) parent object does not have. */
function isMissingProperty(root: unknown, path: ReadonlyArray<PropertyKey>): boolean {
  if (path.length === 0) return false;
  let parent: unknown = root;
  for (const key of path.slice(0, -1)) {
    if (typeof parent !== 'object' || parent === null) return false;
    parent = (parent as Record<PropertyKey, unknown>)[key];
  }
  return isPlainObject(parent) && !Object.hasOwn(parent, path[path.length - 1]!);
}
