import { describe, expect, it } from 'vitest';
import { checkArgsSchema, validateArgs } from './args-schema.ts';

const gotoSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  title: 'goto',
  type: 'object',
  additionalProperties: false,
  required: ['altitude'],
  properties: {
    altitude: { type: 'number', minimum: 0, maximum: 120, default: 10, description: 'metres AGL' },
    mode: { enum: ['GUIDED', 'AUTO'] },
    waypoints: {
      type: 'array',
      maxItems: 3,
      items: { type: 'object', required: ['lat'], properties: { lat: { type: 'number', minimum: -90, maximum: 90 } } },
    },
    at: { type: 'string', format: 'date-time' },
    every: { type: ['integer', 'null'], multipleOf: 5 },
    target: { oneOf: [{ type: 'string', minLength: 1 }, { type: 'integer', exclusiveMinimum: 0 }] },
    tags: { type: 'array', uniqueItems: true, items: { type: 'string' } },
  },
};
const template = { args_schema: gotoSchema };

describe('checkArgsSchema', () => {
  it('accepts the documented subset', () => {
    expect(checkArgsSchema(gotoSchema)).toEqual([]);
    expect(checkArgsSchema({ type: 'object' })).toEqual([]);
    expect(checkArgsSchema({ type: 'object', additionalProperties: { type: 'string' } })).toEqual([]);
    expect(checkArgsSchema({ type: 'object', properties: { a: {} }, allOf: [{ type: 'object', properties: { a: { const: 1 } } }] })).toEqual([]);
  });

  it('requires an object schema at the root', () => {
    expect(checkArgsSchema([])).toEqual([{ field: 'argsSchema', message: 'must be a JSON Schema object' }]);
    expect(checkArgsSchema({ type: 'array' })).toEqual([{ field: 'argsSchema.type', message: expect.stringContaining('"type": "object"') }]);
    expect(checkArgsSchema({ properties: {} })).toContainEqual(expect.objectContaining({ field: 'argsSchema.type' }));
  });

  it('names each problem by its path inside argsSchema', () => {
    const details = checkArgsSchema({
      type: 'object',
      required: ['zz'],
      foo: 1,
      properties: {
        a: { minimum: 3 },
        b: { type: 'string', pattern: '^(a+)+$' },
        c: { $ref: '#/$defs/c' },
        d: { type: 'string', enum: ['x', 1] },
        e: { enum: ['x'], minLength: 2 },
        f: { type: 'strnig' },
        g: { type: 'string', format: 'phone' },
        h: { type: 'number', multipleOf: 0 },
        i: { type: 'array', items: [{ type: 'string' }] },
        j: { type: 'string', maxLength: -1 },
        k: { if: { type: 'string' }, then: { type: 'string' } },
        l: { enum: [{ nested: true }] },
      },
    });
    const fields = details.map((d) => d.field);
    expect(fields).toEqual([
      'argsSchema.required[0]',
      'argsSchema.foo',
      'argsSchema.properties.a.minimum',
      'argsSchema.properties.b.pattern',
      'argsSchema.properties.c.$ref',
      'argsSchema.properties.d.enum',
      'argsSchema.properties.e.minLength',
      'argsSchema.properties.f.type',
      'argsSchema.properties.g.format',
      'argsSchema.properties.h.multipleOf',
      'argsSchema.properties.i.items',
      'argsSchema.properties.j.maxLength',
      'argsSchema.properties.k.if',
      'argsSchema.properties.k.then',
      'argsSchema.properties.l.enum',
    ]);
    expect(details.find((d) => d.field.endsWith('.pattern'))?.message).toMatch(/not supported/);
    expect(details.find((d) => d.field.endsWith('required[0]'))?.message).toMatch(/"zz".*not listed in properties/);
  });

  it('reads keyword names as data: constructor, __proto__ or toString get a message like any unknown keyword', () => {
    const schema = JSON.parse('{"type":"object","constructor":{"prototype":{}},"__proto__":{"x":1},"toString":1,"properties":{"a":{"type":"string","hasOwnProperty":2}}}');
    const details = checkArgsSchema(schema);
    expect(details.map((d) => d.field).sort()).toEqual(['argsSchema.__proto__', 'argsSchema.constructor', 'argsSchema.properties.a.hasOwnProperty', 'argsSchema.toString']);
    for (const detail of details) expect(typeof detail.message, detail.field).toBe('string');
  });

  it('limits nesting depth', () => {
    const deep: Record<string, unknown> = { type: 'object' };
    let node = deep;
    for (let i = 0; i < 20; i++) {
      const child: Record<string, unknown> = { type: 'object' };
      node.properties = { x: child };
      node = child;
    }
    expect(checkArgsSchema(deep)).toEqual([{ field: expect.stringMatching(/^argsSchema(\.properties\.x){17}$/), message: expect.stringMatching(/16 deep/) }]);
  });
});

describe('validateArgs', () => {
  it('accepts valid args and treats a template without schema as free-form', () => {
    expect(validateArgs(template, { altitude: 50, mode: 'AUTO', waypoints: [{ lat: 1 }], every: null, target: 'home', tags: ['a', 'b'] })).toEqual([]);
    expect(validateArgs(template, { altitude: 0, every: 10, target: 3, at: '2026-01-01T00:00:00Z' })).toEqual([]);
    expect(validateArgs({ args_schema: null }, { anything: [1, 2, 3] })).toEqual([]);
  });

  it('reports a missing required argument even when the schema gives it a default', () => {
    expect(validateArgs(template, {})).toEqual([{ field: 'args.altitude', message: 'is required' }]);
  });

  it('names each bad argument with args.… paths and zero-based indexes', () => {
    const details = validateArgs(template, {
      altitude: 500,
      mode: 'RTL',
      waypoints: [{ lat: 1 }, { lat: 100 }, {}],
      at: 'yesterday',
      every: 7,
      target: true,
      tags: ['a', 'a'],
      extra: 1,
    });
    expect(details.map((d) => d.field).sort()).toEqual(
      [
        'args.altitude',
        'args.mode',
        'args.waypoints[1].lat',
        'args.waypoints[2].lat',
        'args.at',
        'args.every',
        'args.target',
        'args.tags[1]',
        'args.extra',
      ].sort(),
    );
    expect(details.find((d) => d.field === 'args.altitude')?.message).toMatch(/120/);
    expect(details.find((d) => d.field === 'args.waypoints[2].lat')?.message).toBe('is required');
    expect(details.find((d) => d.field === 'args.extra')?.message).toBe('is not an argument of this template');
  });

  it('refuses a non-object args', () => {
    expect(validateArgs(template, [1])).toEqual([{ field: 'args', message: expect.stringMatching(/expected object/) }]);
    expect(validateArgs(template, null)).toEqual([{ field: 'args', message: expect.stringMatching(/expected object/) }]);
  });

  it('keeps extra arguments when additionalProperties is not false', () => {
    expect(validateArgs({ args_schema: { type: 'object', properties: { a: { type: 'string' } } } }, { a: 'x', b: 2 })).toEqual([]);
    expect(validateArgs({ args_schema: { type: 'object', additionalProperties: { type: 'string' } } }, { b: 2 })).toEqual([
      { field: 'args.b', message: expect.stringMatching(/expected string/) },
    ]);
  });
});
