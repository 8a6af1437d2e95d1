import { z } from 'zod';
import { ERROR_STATUS, type ErrorCode } from '../core/error-codes.ts';
import { API_KEY_HEADER } from '../tokens/api-key.ts';
import { API_ROUTES, REQUEST_SCHEMAS, RESPONSE_SCHEMAS, type ApiRoute } from './routes.ts';

/** A JSON Schema (2020-12) object as it appears in the document. */
export type JsonSchema = { [keyword: string]: unknown };

export interface OpenApiParameter {
  name: string;
  in: 'query' | 'header';
  required?: boolean;
  description?: string;
  schema: JsonSchema;
}

export interface OpenApiResponse {
  description: string;
  headers?: Record<string, { $ref: string }>;
  /** `application/json` for JSON bodies; a streamed file's media types otherwise (ApiSuccess.media). */
  content?: Record<string, { schema: JsonSchema }>;
}

export interface OpenApiOperation {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  security: Record<string, string[]>[];
  parameters: (OpenApiParameter | { $ref: string })[];
  /** JSON of a named schema (`application/json`), or a file sent as it is (`application/octet-stream`, ApiRoute.rawBody). */
  requestBody?: { required: true; description?: string; content: Record<string, { schema: JsonSchema }> };
  responses: Record<string, OpenApiResponse | { $ref: string }>;
  /** The API key scope, or `ack-token`: the same fact as `security`, easier for people and tools to read. */
  'x-sortie-auth': string;
}

export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description: string };
  jsonSchemaDialect: string;
  servers: { url: string }[];
  tags: { name: string }[];
  paths: Record<string, Partial<Record<ApiRoute['method'], OpenApiOperation>>>;
  components: {
    schemas: Record<string, JsonSchema>;
    responses: Record<string, OpenApiResponse>;
    parameters: Record<string, OpenApiParameter>;
    headers: Record<string, { description: string; schema: JsonSchema }>;
    securitySchemes: Record<string, JsonSchema>;
  };
}

export interface OpenApiOptions {
  /** Base URL of the service, e.g. SORTIE_PUBLIC_URL. Omitted: no `servers` (clients use the document's origin). */
  serverUrl?: string;
  version?: string;
}

const SCHEMA_REF = '#/components/schemas/';
const API_KEY_SCHEME = 'apiKey';
const ACK_TOKEN_SCHEME = 'ackToken';

/** Convert one set of named zod schemas; shared members that are also named become `$ref`s. */
function convertNamed(schemas: Record<string, z.ZodType>, io: 'input' | 'output'): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(schemas)) {
    if (registry.has(schema)) throw new Error(`schema ${id} is already named ${registry.get(schema)?.id}`);
    registry.add(schema, { id });
  }
  const { schemas: converted } = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io,
    // z.unknown() and friends are fine as {}; anything truly unrepresentable should fail the build loudly.
    unrepresentable: 'throw',
    uri: (id) => SCHEMA_REF + id,
  }) as { schemas: Record<string, JsonSchema> };
  const out: Record<string, JsonSchema> = {};
  for (const [id, schema] of Object.entries(converted)) {
    // Components are subschemas of the document: a fragment `$id` is invalid there and `$schema` is the document's dialect.
    const { $schema: _schema, $id: _id, ...rest } = schema;
    out[id] = rest;
  }
  return out;
}

/** A query object's fields as OpenAPI query parameters. */
function queryParameters(query: z.ZodObject): OpenApiParameter[] {
  const { properties = {}, required = [] } = z.toJSONSchema(query, { target: 'draft-2020-12', io: 'input' }) as {
    properties?: Record<string, JsonSchema>;
    required?: string[];
  };
  return Object.entries(properties).map(([name, schema]) => ({
    name,
    in: 'query',
    required: required.includes(name),
    schema,
  }));
}

const ERROR_DESCRIPTIONS: Record<ErrorCode, string> = {
  invalid_request: 'the body or query is invalid; `details[].field` names each offending field',
  unauthorized: 'missing, malformed, unknown, revoked or expired API key',
  insufficient_scope: 'the API key lacks the required scope',
  forbidden: 'not allowed for this principal',
  not_found: "no such resource in the caller's organization",
  conflict: "the resource's state does not allow this (see the message)",
  payload_too_large: 'the body exceeds SORTIE_HTTP_BODY_LIMIT',
  request_timeout: 'the request (headers within SORTIE_HTTP_HEADERS_TIMEOUT_MS, all of it within SORTIE_HTTP_REQUEST_TIMEOUT_MS) did not arrive in time',
  headers_too_large: 'the request line and headers exceed 16 KiB',
  rate_limited: 'too many attempts; wait for Retry-After seconds',
  internal_error: 'an unexpected fault; quote the request id when reporting it',
  unavailable: 'the database is unreachable for the moment (restarting, failing over); send the same request again after Retry-After seconds (one cut off mid-way may have taken effect: a repeated dispatch then answers 409, a create with the same clientToken the first command)',
};

/** Codes every route of a kind can answer, on top of those the table names. */
function errorCodes(route: ApiRoute): ErrorCode[] {
  const codes = new Set<ErrorCode>();
  if (route.auth !== 'ack-token') {
    codes.add('unauthorized');
    codes.add('insufficient_scope');
  }
  if (route.body || route.query) codes.add('invalid_request');
  if (route.body || route.rawBody) codes.add('payload_too_large');
  for (const code of route.errors) codes.add(code);
  codes.add('internal_error');
  codes.add('unavailable');
  return [...codes];
}

/**
 * The error answers, one per status. A code whose meaning is the shared one is a `$ref`; `own` gives a
 * code this route's own meaning (a raw body's size limit is not the JSON body limit).
 */
function errorResponses(codes: ErrorCode[], own: Partial<Record<ErrorCode, string>> = {}): Record<string, OpenApiResponse | { $ref: string }> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  const out: Record<string, OpenApiResponse | { $ref: string }> = {};
  for (const [status, sharing] of [...byStatus].sort(([a], [b]) => a - b)) {
    out[String(status)] =
      sharing.length === 1 && !own[sharing[0]!]
        ? { $ref: `#/components/responses/${sharing[0]}` }
        : {
            description: sharing.map((code) => `\`${code}\`: ${own[code] ?? ERROR_DESCRIPTIONS[code]}`).join('; '),
            headers: { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } },
            content: { 'application/json': { schema: { $ref: SCHEMA_REF + 'ErrorEnvelope' } } },
          };
  }
  return out;
}

function operation(route: ApiRoute): OpenApiOperation {
  const responses: OpenApiOperation['responses'] = {};
  for (const success of route.success) {
    const content: Record<string, { schema: JsonSchema }> = Object.fromEntries(
      (success.media ?? ['application/json']).map((type) => [type, { schema: { $ref: SCHEMA_REF + success.schema } }]),
    );
    let description = success.description;
    // The same status with another body the request's Accept asks for: one more media type, said in the description.
    if (success.alternative) {
      content[success.alternative.media] = { schema: { $ref: SCHEMA_REF + success.alternative.schema } };
      description += `; \`${success.alternative.media}\`, ${success.alternative.description}`;
    }
    responses[String(success.status)] = { description, headers: { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } }, content };
  }
  const own = route.rawBody ? { payload_too_large: `the file exceeds ${route.rawBody.limit}` } : {};
  Object.assign(responses, errorResponses(errorCodes(route), own));
  return {
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description && { description: route.description }),
    tags: [route.tag],
    // OpenAPI 3.1 lets a non-OAuth requirement list roles: the scope the key must hold.
    security: route.auth === 'ack-token' ? [{ [ACK_TOKEN_SCHEME]: [] }] : [{ [API_KEY_SCHEME]: [route.auth] }],
    parameters: [...(route.query ? queryParameters(route.query) : []), { $ref: '#/components/parameters/X-Request-Id' }],
    ...(route.body && {
      requestBody: { required: true as const, content: { 'application/json': { schema: { $ref: SCHEMA_REF + route.body } } } },
    }),
    ...(route.rawBody && {
      requestBody: {
        required: true as const,
        description: route.rawBody.description,
        content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
      },
    }),
    responses,
    'x-sortie-auth': route.auth,
  };
}

function buildComponents(): OpenApiDocument['components'] {
  const requests = convertNamed(REQUEST_SCHEMAS, 'input');
  const responses = convertNamed(RESPONSE_SCHEMAS, 'output');
  for (const name of Object.keys(requests)) {
    if (name in responses) throw new Error(`schema name ${name} is used by a request and a response`);
  }
  const errorResponses: Record<string, OpenApiResponse> = {};
  for (const code of Object.keys(ERROR_STATUS) as ErrorCode[]) {
    errorResponses[code] = {
      description: `\`${code}\` (${ERROR_STATUS[code]}): ${ERROR_DESCRIPTIONS[code]}`,
      headers: { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } },
      content: { 'application/json': { schema: { $ref: SCHEMA_REF + 'ErrorEnvelope' } } },
    };
  }
  return {
    schemas: { ...requests, ...responses },
    responses: errorResponses,
    parameters: {
      'X-Request-Id': {
        name: 'X-Request-Id',
        in: 'header',
        required: false,
        description: 'Echoed on the response and used in logs when it is 1 to 128 of A-Z a-z 0-9 . _ : -; otherwise one is generated.',
        schema: { type: 'string', pattern: '^[A-Za-z0-9._:\\-]{1,128}$' },
      },
    },
    headers: {
      'X-Request-Id': {
        description: "The request's id (the caller's when acceptable, else generated); also in every error body as request_id.",
        schema: { type: 'string' },
      },
    },
    securitySchemes: {
      [API_KEY_SCHEME]: {
        type: 'apiKey',
        in: 'header',
        name: API_KEY_HEADER,
        description: 'An `sk_` API key (admin CLI `create-key`). Each operation lists the scope it needs.',
      },
      [ACK_TOKEN_SCHEME]: {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'cak_…',
        description: 'The single-use ack token of a `command.dispatched` delivery (`ack.token`).',
      },
    },
  };
}

// zod's conversion is the expensive part and depends on nothing but the contracts: do it once.
let cached: Omit<OpenApiDocument, 'servers'> | undefined;

function buildBase(version: string): Omit<OpenApiDocument, 'servers'> {
  const paths: OpenApiDocument['paths'] = {};
  const tags: string[] = [];
  for (const route of API_ROUTES) {
    if (route.body && route.rawBody) throw new Error(`${route.path}: a body is JSON or a file, not both`);
    (paths[route.path] ??= {})[route.method] = operation(route);
    if (!tags.includes(route.tag)) tags.push(route.tag);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Sortie HTTP API',
      version,
      description:
        'Generated from the zod schemas in @sortie/contracts. Every failure is `{"error":{"code","message","details","request_id"}}`; ' +
        'every response carries X-Request-Id.',
    },
    jsonSchemaDialect: 'https://spec.openapis.org/oas/3.1/dialect/base',
    tags: tags.map((name) => ({ name })),
    paths,
    components: buildComponents(),
  };
}

/** The OpenAPI 3.1.0 document of every `/api/*` route. Callers must not mutate it (it is shared). */
export function buildOpenApiDocument(options: OpenApiOptions = {}): OpenApiDocument {
  const version = options.version ?? '0.1.0';
  if (!cached || cached.info.version !== version) cached = buildBase(version);
  const { openapi, info, jsonSchemaDialect, ...rest } = cached;
  // Key order as people expect to read it: openapi, info, servers, then the rest.
  return { openapi, info, jsonSchemaDialect, servers: options.serverUrl ? [{ url: options.serverUrl }] : [], ...rest };
}
