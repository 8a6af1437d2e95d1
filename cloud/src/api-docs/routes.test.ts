import { resolveSchemaRef, sampleFromSchema, SCOPES, type JsonSchema, type OpenApiDocument } from '@sortie/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detailFields, expectEnvelope } from '../testing/expect-envelope.ts';
import { startTestService, type TestOrg, type TestService } from '../testing/test-service.ts';
import { createHttpApp } from '../service/app.ts';

let t: TestService;
let org: TestOrg;
let doc: OpenApiDocument;

beforeAll(async () => {
  t = await startTestService({ env: { SORTIE_PUBLIC_URL: 'https://sortie.example/' } });
  org = await t.createOrg();
  const response = await t.call('GET', '/openapi.json');
  expect(response.status).toBe(200);
  doc = response.body;
});
afterAll(() => t?.stop());

type Operation = OpenApiDocument['paths'][string]['get'] & {};

function operations(): { method: string; path: string; operation: Operation }[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, operation]) => ({ method, path, operation: operation! })),
  );
}

function bodySchemaRef(operation: Operation): string | undefined {
  // A file body (an imported log) has no JSON schema to sample.
  const ref = operation.requestBody?.content['application/json']?.schema.$ref;
  return typeof ref === 'string' ? ref : undefined;
}

/** A small JSON Schema check (the keywords the document uses), listing every place the value disagrees. */
function violations(schema: JsonSchema, value: unknown, at = '$'): string[] {
  if (typeof schema.$ref === 'string') return violations(resolveSchemaRef(doc, schema.$ref), value, at);
  if ('const' in schema && value !== schema.const) return [`${at}: expected ${JSON.stringify(schema.const)}`];
  if (Array.isArray(schema.enum) && !schema.enum.includes(value)) return [`${at}: ${JSON.stringify(value)} not in enum`];
  for (const key of ['anyOf', 'oneOf'] as const) {
    if (Array.isArray(schema[key])) {
      const options = schema[key] as JsonSchema[];
      if (!options.some((option) => violations(option, value, at).length === 0)) return [`${at}: matches no ${key} branch`];
    }
  }
  const types = Array.isArray(schema.type) ? (schema.type as string[]) : typeof schema.type === 'string' ? [schema.type] : [];
  if (types.length > 0 && !types.some((type) => isType(type, value))) return [`${at}: ${JSON.stringify(value)} is not ${types.join('|')}`];
  const out: string[] = [];
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
    for (const name of (schema.required ?? []) as string[]) if (!(name in value)) out.push(`${at}.${name}: missing`);
    for (const [name, field] of Object.entries(value)) {
      if (properties[name]) out.push(...violations(properties[name], field, `${at}.${name}`));
      else if (schema.additionalProperties === false) out.push(`${at}.${name}: not in the schema`);
    }
  }
  if (Array.isArray(value) && schema.items) value.forEach((item, i) => out.push(...violations(schema.items as JsonSchema, item, `${at}[${i}]`)));
  return out;
}

function isType(type: string, value: unknown): boolean {
  if (type === 'null') return value === null;
  if (type === 'array') return Array.isArray(value);
  if (type === 'object') return typeof value === 'object' && value !== null && !Array.isArray(value);
  if (type === 'integer') return Number.isInteger(value);
  return typeof value === type;
}

/** The document's smallest valid body for a route, with real ids where the route needs existing resources. */
function sample(path: string, ids: Record<string, string> = {}): Record<string, unknown> {
  const operation = doc.paths[path]!.post!;
  const body = sampleFromSchema(doc, { $ref: bodySchemaRef(operation)! }) as Record<string, unknown>;
  for (const [name, id] of Object.entries(ids)) if (name in body) body[name] = id;
  return body;
}

function expectConforms(path: string, method: 'get' | 'post', status: number, body: unknown): void {
  const answer = doc.paths[path]![method]!.responses[String(status)];
  expect(answer, `${method} ${path} documents ${status}`).toBeDefined();
  const response = '$ref' in answer! ? doc.components.responses[answer.$ref.slice(answer.$ref.lastIndexOf('/') + 1)] : answer;
  const schema = response?.content?.['application/json']?.schema;
  expect(schema, `${method} ${path} ${status} has a schema`).toBeDefined();
  expect(violations(schema!, body)).toEqual([]);
}

describe('GET /openapi.json', () => {
  it('is public JSON with the public URL as server and a request id', async () => {
    const response = await t.call('GET', '/openapi.json', { headers: { 'X-Request-Id': 'doc-1' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('x-request-id')).toBe('doc-1');
    expect(response.body.openapi).toBe('3.1.0');
    expect(response.body.servers).toEqual([{ url: 'https://sortie.example' }]);
  });

  it('documents exactly the /api routes the Hono app mounts', () => {
    const app = createHttpApp(t.service.ctx);
    const mounted = new Set(
      app.routes.filter((r) => r.method !== 'ALL' && r.path.startsWith('/api/')).map((r) => `${r.method} ${r.path}`),
    );
    const documented = new Set(operations().map((op) => `${op.method.toUpperCase()} ${op.path}`));
    expect(mounted.size).toBeGreaterThan(20);
    expect([...documented].sort()).toEqual([...mounted].sort());
  });

  it("documents the scope each route's middleware actually requires", async () => {
    // Per route: a key with only another scope is refused naming the documented one; a key with only that one gets past auth.
    const keys = new Map<string, string>();
    for (const scope of SCOPES) keys.set(scope, (await org.keyWith([scope])).apiKey);
    for (const { method, path, operation } of operations()) {
      const auth = operation['x-sortie-auth'];
      const call = (key: string) => t.call(method.toUpperCase(), path, { key, ...(method === 'post' && { body: {} }) });
      if (auth === 'ack-token') {
        // No API key is asked for: validation answers first, then the (missing) bearer token is a 404.
        expect((await call(keys.get('commands:write')!)).status, path).toBe(400);
        continue;
      }
      const other = SCOPES.find((s) => s !== auth)!;
      const refused = await call(keys.get(other)!);
      expectEnvelope(refused, 403, 'insufficient_scope');
      expect(refused.body.error.message, path).toContain(auth);
      const allowed = await call(keys.get(auth)!);
      expect([401, 403], `${path} with ${auth}`).not.toContain(allowed.status);
    }
  });
});

describe('request bodies the document calls valid', () => {
  it('are accepted by the live routes, and the responses match the documented schemas', async () => {
    const experiment = await t.call('POST', '/api/experiments/create', { key: org.key, body: sample('/api/experiments/create') });
    expect(experiment.status, JSON.stringify(experiment.body)).toBe(201);
    expectConforms('/api/experiments/create', 'post', 201, experiment.body);
    const experimentId = experiment.body.id as string;

    const registered = await t.call('POST', '/api/streams/register', { key: org.key, body: sample('/api/streams/register', { experimentId }) });
    expect(registered.status, JSON.stringify(registered.body)).toBe(201);
    expectConforms('/api/streams/register', 'post', 201, registered.body);
    const datasetId = registered.body.datasetId as string;

    const body = sample('/api/commands/create', { experimentId, datasetId });
    expect(Object.keys(body).sort()).toEqual(['commandText', 'datasetId', 'experimentId', 'relTime']);
    const command = await t.call('POST', '/api/commands/create', { key: org.key, body });
    expect(command.status, JSON.stringify(command.body)).toBe(201);
    expectConforms('/api/commands/create', 'post', 201, command.body);

    const armed = await t.call('POST', '/api/datasets/arm', { key: org.key, body: sample('/api/datasets/arm', { datasetId }) });
    expect(armed.status, JSON.stringify(armed.body)).toBe(200);
    expectConforms('/api/datasets/arm', 'post', 200, armed.body);

    const listed = await t.call('GET', `/api/commands/list?experimentId=${experimentId}&datasetId=${datasetId}`, { key: org.key });
    expect(listed.status).toBe(200);
    expect(listed.body).toHaveLength(1);
    expectConforms('/api/commands/list', 'get', 200, listed.body);

    const experiments = await t.call('GET', '/api/experiments/list', { key: org.key });
    expectConforms('/api/experiments/list', 'get', 200, experiments.body);

    // The rest of the routes that need no webhook receiver: the document's sample in, the documented shape out.
    const ids = { experimentId, datasetId, commandId: command.body.id as string };
    const channel = await t.call('POST', '/api/datasets/channels/create', { key: org.key, body: sample('/api/datasets/channels/create', ids) });
    const template = sample('/api/commands/templates/create');
    const calls: [method: 'get' | 'post', path: string, status: number, query?: string][] = [
      ['post', '/api/datasets/channels/update', 200],
      ['get', '/api/datasets/channels', 200, `datasetId=${datasetId}`],
      ['post', '/api/datasets/append', 200],
      ['post', '/api/datasets/events', 201],
      ['get', '/api/datasets/events', 200, `datasetId=${datasetId}`],
      ['get', '/api/datasets/arming', 200, `datasetId=${datasetId}`],
      ['post', '/api/datasets/disarm', 200],
      ['post', '/api/commands/templates/create', 201],
      ['post', '/api/commands/templates/update', 200],
      ['get', '/api/commands/templates/list', 200],
      ['post', '/api/commands/retract', 200],
      ['get', '/api/webhooks/list', 200],
      ['get', '/api/webhooks/deliveries', 200, `commandId=${ids.commandId}`],
      ['get', '/api/notifications', 200],
      ['get', '/api/imports/list', 200, `experimentId=${experimentId}`],
    ];
    expectConforms('/api/datasets/channels/create', 'post', 201, channel.body);
    expect(channel.status, JSON.stringify(channel.body)).toBe(201);
    for (const [method, path, status, query] of calls) {
      const body = method === 'post' ? { ...sample(path, { ...ids, id: channel.body.id }), ...(path.includes('templates') && { key: template.key }) } : undefined;
      const response = await t.call(method.toUpperCase(), query ? `${path}?${query}` : path, { key: org.key, body });
      expect(response.status, `${path}: ${JSON.stringify(response.body)}`).toBe(status);
      expectConforms(path, method, status, response.body);
    }

    // Limit rules: the document's example creates one; the other routes act on it.
    const rule = await t.call('POST', '/api/limits/create', { key: org.key, body: sample('/api/limits/create', ids) });
    expect(rule.status, JSON.stringify(rule.body)).toBe(201);
    expectConforms('/api/limits/create', 'post', 201, rule.body);
    const ruleCalls: [method: 'get' | 'post', path: string, query?: string][] = [
      ['get', '/api/limits/list', `experimentId=${experimentId}`],
      ['get', '/api/limits/get', `id=${rule.body.id}`],
      ['post', '/api/limits/update'],
      ['post', '/api/limits/delete'],
    ];
    for (const [method, path, query] of ruleCalls) {
      const body = method === 'post' ? sample(path, { id: rule.body.id }) : undefined;
      const response = await t.call(method.toUpperCase(), query ? `${path}?${query}` : path, { key: org.key, body });
      expect(response.status, `${path}: ${JSON.stringify(response.body)}`).toBe(200);
      expectConforms(path, method, 200, response.body);
    }
  });

  it('error answers match the documented envelope', async () => {
    const response = await t.call('POST', '/api/commands/create', { key: org.key, body: {} });
    expectEnvelope(response, 400, 'invalid_request');
    expectConforms('/api/commands/create', 'post', 400, response.body);
  });
});

describe('fields the document marks required', () => {
  it('are refused when missing, for commands/create and webhooks/rotate, naming the field', async () => {
    for (const path of ['/api/commands/create', '/api/webhooks/rotate']) {
      const schema = resolveSchemaRef(doc, bodySchemaRef(doc.paths[path]!.post!)!);
      const required = schema.required as string[];
      expect(required.length, path).toBeGreaterThan(1);
      const full = sample(path);
      for (const field of required) {
        const { [field]: _omitted, ...body } = full;
        const response = await t.call('POST', path, { key: org.key, body });
        expectEnvelope(response, 400, 'invalid_request');
        expect(detailFields(response), `${path} without ${field}`).toEqual([field]);
      }
    }
  });

  it('are refused when missing on every other body route and every query route', async () => {
    for (const { method, path, operation } of operations()) {
      const ref = bodySchemaRef(operation);
      if (ref) {
        const full = sample(path);
        for (const field of resolveSchemaRef(doc, ref).required as string[]) {
          const { [field]: _omitted, ...body } = full;
          const response = await t.call('POST', path, { key: org.key, body });
          expect(response.status, `${path} without ${field}`).toBe(400);
          expect(detailFields(response), `${path} without ${field}`).toContain(field);
        }
      }
      const query = operation.parameters.flatMap((p) => ('in' in p && p.in === 'query' ? [p] : []));
      for (const parameter of query.filter((p) => p.required)) {
        const rest = query.filter((p) => p !== parameter).map((p) => `${p.name}=${String(sampleFromSchema(doc, p.schema))}`);
        const response = await t.call(method.toUpperCase(), `${path}?${rest.join('&')}`, { key: org.key });
        expect(response.status, `${path} without ${parameter.name}`).toBe(400);
        expect(detailFields(response), `${path} without ${parameter.name}`).toContain(parameter.name);
      }
    }
  });
});

describe('GET /docs', () => {
  it('is a public, self-contained HTML page naming every path and linking the JSON', async () => {
    const response = await fetch(`${t.url}/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await response.text();
    for (const { path, operation } of operations()) {
      expect(html, path).toContain(`<code>${path}</code>`);
      expect(html, path).toContain(`id="op-${operation.operationId}"`);
    }
    expect(html).toContain('href="openapi.json"');
    expect(html).not.toMatch(/<script|<link|\ssrc=|@import|url\(/i);
    // /docs sits at the root, so the relative link is /openapi.json.
    expect(new URL('openapi.json', `${t.url}/docs`).pathname).toBe('/openapi.json');
  });

  it('is answered the same the second time (cached)', async () => {
    const [a, b] = await Promise.all([fetch(`${t.url}/docs`).then((r) => r.text()), fetch(`${t.url}/docs`).then((r) => r.text())]);
    expect(a).toBe(b);
  });
});
