import { describe, expect, it } from 'vitest';
import { formatIssuePath } from '../core/errors.ts';
import { SCOPES } from '../core/scopes.ts';
import { buildOpenApiDocument, type JsonSchema, type OpenApiDocument } from './document.ts';
import { API_ROUTES, REQUEST_SCHEMAS, RESPONSE_SCHEMAS, type RequestSchemaName } from './routes.ts';
import { sampleFromSchema } from './sample.ts';

const document = buildOpenApiDocument({ serverUrl: 'https://sortie.example' });

/** Every `$ref` in the document with where it sits. */
function collectRefs(node: unknown, at: string, out: { at: string; ref: string }[] = []): { at: string; ref: string }[] {
  if (Array.isArray(node)) node.forEach((item, i) => collectRefs(item, `${at}/${i}`, out));
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') out.push({ at, ref: value });
      else collectRefs(value, `${at}/${key}`, out);
    }
  }
  return out;
}

/** Follow a local JSON pointer (`#/components/schemas/X`) through the document. */
function resolvePointer(doc: OpenApiDocument, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (!node || typeof node !== 'object' || !(key in node)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

const operations = Object.entries(document.paths).flatMap(([path, item]) =>
  Object.entries(item).map(([method, operation]) => ({ path, method, operation: operation! })),
);

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1.0 with the configured server', () => {
    expect(document.openapi).toBe('3.1.0');
    expect(document.servers).toEqual([{ url: 'https://sortie.example' }]);
    expect(buildOpenApiDocument().servers).toEqual([]);
    expect(document.info.title).toBeTruthy();
  });

  it('resolves every $ref', () => {
    const refs = collectRefs(document, '#');
    expect(refs.length).toBeGreaterThan(50);
    const broken = refs.filter(({ ref }) => resolvePointer(document, ref) === undefined);
    expect(broken).toEqual([]);
  });

  it('has unique operationIds and one operation per route of the table', () => {
    const ids = operations.map((op) => op.operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(operations.map((op) => `${op.method.toUpperCase()} ${op.path}`).sort()).toEqual(
      API_ROUTES.map((r) => `${r.method.toUpperCase()} ${r.path}`).sort(),
    );
    expect(new Set(API_ROUTES.map((r) => `${r.method} ${r.path}`)).size).toBe(API_ROUTES.length);
  });

  it('holds every named request and response schema, as bare 2020-12 subschemas', () => {
    for (const name of [...Object.keys(REQUEST_SCHEMAS), ...Object.keys(RESPONSE_SCHEMAS)]) {
      const schema = document.components.schemas[name];
      expect(schema, name).toBeDefined();
      expect(schema!.$id, name).toBeUndefined();
      expect(schema!.$schema, name).toBeUndefined();
    }
    expect(document.jsonSchemaDialect).toBe('https://spec.openapis.org/oas/3.1/dialect/base');
  });

  it('gives every body route a required JSON body (or a file, for a raw body) and every query route its parameters', () => {
    for (const route of API_ROUTES) {
      const operation = document.paths[route.path]![route.method]!;
      if (route.body) {
        expect(operation.requestBody?.required, route.path).toBe(true);
        expect(operation.requestBody!.content['application/json']!.schema.$ref).toBe(`#/components/schemas/${route.body}`);
      } else if (route.rawBody) {
        expect(operation.requestBody, route.path).toEqual({
          required: true,
          description: route.rawBody.description,
          content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
        });
      } else {
        expect(operation.requestBody, route.path).toBeUndefined();
      }
      const queryNames = operation.parameters.flatMap((p) => ('in' in p && p.in === 'query' ? [p.name] : []));
      expect(queryNames, route.path).toEqual(route.query ? Object.keys(route.query.shape) : []);
    }
  });

  it('answers each operation with a schema, the error envelope and X-Request-Id', () => {
    for (const { path, operation } of operations) {
      const statuses = Object.keys(operation.responses);
      expect(statuses.some((s) => s.startsWith('2')), path).toBe(true);
      expect(statuses, path).toContain('500');
      for (const [status, response] of Object.entries(operation.responses)) {
        const resolved = ('$ref' in response ? resolvePointer(document, response.$ref) : response) as {
          headers?: Record<string, { $ref: string }>;
          content?: Record<string, { schema: JsonSchema }>;
        };
        expect(resolved.headers?.['X-Request-Id'], `${path} ${status}`).toEqual({ $ref: '#/components/headers/X-Request-Id' });
        // JSON, or a streamed file's media types (export), each with its schema.
        const [schema] = Object.values(resolved.content ?? {}).map((media) => media.schema);
        expect(schema?.$ref, `${path} ${status}`).toMatch(/^#\/components\/schemas\//);
        if (!status.startsWith('2')) expect(schema!.$ref).toBe('#/components/schemas/ErrorEnvelope');
      }
    }
  });

  it('requires the right credential: an x-api-key scope, or the ack bearer token for /api/commands/ack', () => {
    expect(document.components.securitySchemes.apiKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'x-api-key' });
    expect(document.components.securitySchemes.ackToken).toMatchObject({ type: 'http', scheme: 'bearer' });
    for (const { path, operation } of operations) {
      if (path === '/api/commands/ack') {
        expect(operation.security).toEqual([{ ackToken: [] }]);
        expect(Object.keys(operation.responses)).not.toContain('401');
        expect(Object.keys(operation.responses)).toContain('429');
      } else {
        expect(operation.security, path).toHaveLength(1);
        const [scope] = operation.security[0]!.apiKey!;
        expect(SCOPES, path).toContain(scope);
        expect(Object.keys(operation.responses), path).toEqual(expect.arrayContaining(['401', '403']));
      }
    }
  });

  it('describes request bodies the zod schemas agree with: the smallest sample parses, and each required field is required', () => {
    for (const [name, zodSchema] of Object.entries(REQUEST_SCHEMAS)) {
      const ref = { $ref: `#/components/schemas/${name}` };
      const sample = sampleFromSchema(document, ref) as Record<string, unknown>;
      const parsed = zodSchema.safeParse(sample);
      expect(parsed.success, `${name}: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
      const required = (document.components.schemas[name]!.required ?? []) as string[];
      expect(required.length, name).toBeGreaterThan(0);
      for (const field of required) {
        const { [field]: _dropped, ...without } = sample;
        const result = zodSchema.safeParse(without);
        expect(result.success, `${name} without ${field}`).toBe(false);
        expect(result.error!.issues.map((i) => formatIssuePath(i.path)), `${name} without ${field}`).toContain(field);
      }
    }
  });

  it('marks defaulted request fields optional and refuses unknown fields where zod is strict', () => {
    const create = document.components.schemas.CreateCommandRequest!;
    expect(create.required).toEqual(['experimentId', 'datasetId', 'commandText', 'relTime']);
    expect((create.properties as Record<string, JsonSchema>).description!.default).toBe('');
    expect(document.components.schemas.UpdateChannelRequest!.additionalProperties).toBe(false);
    // Responses are output shapes: a defaulted field is always present.
    expect(document.components.schemas.CommandRecord!.required).toContain('description');
  });

  it('documents the log upload: a file as the body, its own size limit, and the NDJSON progress answer beside the JSON one', () => {
    const create = document.paths['/api/imports/create']!.post!;
    expect(Object.keys(create.requestBody!.content)).toEqual(['application/octet-stream']);
    expect(create['x-sortie-auth']).toBe('telemetry:write');
    expect(create.parameters.flatMap((p) => ('in' in p ? [p.name] : []))).toEqual(['experimentId', 'name', 'fileName', 'format', 'start']);
    const ok = create.responses['200'] as { description: string; content: Record<string, { schema: JsonSchema }> };
    expect(ok.content).toEqual({
      'application/json': { schema: { $ref: '#/components/schemas/CreateImportResponse' } },
      'application/x-ndjson': { schema: { $ref: '#/components/schemas/ImportProgressLine' } },
    });
    expect(ok.description).toContain('application/x-ndjson');
    expect(create.responses['201']).toMatchObject({ content: { 'application/json': { schema: { $ref: '#/components/schemas/CreateImportResponse' } } } });
    expect((create.responses['413'] as { description: string }).description).toContain('SORTIE_IMPORT_MAX_BYTES');
    // A line is progress, the import, or the error envelope.
    const line = document.components.schemas.ImportProgressLine!;
    expect((line.anyOf as JsonSchema[]).map((branch) => branch.$ref ?? Object.keys(branch.properties as object))).toEqual([
      '#/components/schemas/ImportProgress',
      ['import'],
      '#/components/schemas/ErrorEnvelope',
    ]);
    // JSON routes keep the shared 413.
    expect(document.paths['/api/datasets/append']!.post!.responses['413']).toEqual({ $ref: '#/components/responses/payload_too_large' });
  });

  it('is built once: later calls share the components', () => {
    expect(buildOpenApiDocument({ serverUrl: 'http://other' }).components).toBe(document.components);
  });
});

describe('sampleFromSchema', () => {
  it('fills required fields at their bounds', () => {
    const sample = sampleFromSchema(document, { $ref: '#/components/schemas/CreateEventsRequest' }) as {
      events: { timestamp: string; kind: string }[];
    };
    expect(sample.events).toHaveLength(1);
    expect(Date.parse(sample.events[0]!.timestamp)).not.toBeNaN();
    const rotate = sampleFromSchema(document, { $ref: '#/components/schemas/RotateWebhookRequest' });
    expect(rotate).toEqual({ id: '00000000-0000-4000-8000-000000000000', overlapSeconds: 0 });
  });

  it('fails on a reference the document does not hold', () => {
    expect(() => sampleFromSchema(document, { $ref: '#/components/schemas/Nope' })).toThrow(/Nope/);
  });

  it('covers every request schema name the routes use', () => {
    const used = new Set(API_ROUTES.flatMap((r) => (r.body ? [r.body] : [])));
    const unused = (Object.keys(REQUEST_SCHEMAS) as RequestSchemaName[]).filter((n) => !used.has(n) && n !== 'ChannelDeclaration');
    expect(unused).toEqual([]);
  });
});
