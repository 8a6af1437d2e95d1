import { API_KEY_HEADER, API_ROUTES, ErrorEnvelopeSchema, REQUEST_SCHEMAS, RESPONSE_SCHEMAS, zodIssuesToDetails } from '@sortie/contracts';
import type { ApiRoute } from '@sortie/contracts';
import type { z } from 'zod';
import { SortieApiError } from './errors.ts';
import type { InputOf, OperationId, OutputOf } from './routes.ts';
import { newRequestId, queryString, REQUEST_ID_HEADER } from './wire.ts';

export { newRequestId, queryString, REQUEST_ID_HEADER } from './wire.ts';


/** What every call may add. */
export interface CallOptions {
  signal?: AbortSignal;
  /** Sent as X-Request-Id (the service echoes an id of `[A-Za-z0-9._:-]{1,128}`); one is made when absent. */
  requestId?: string;
  /** The delivery's `cak_` token, for `commands.ack` (sent as `Authorization: Bearer`, without the API key). */
  ackToken?: string;
  /** Told of every answer (also failed ones) with its status and request id. */
  onResponse?: (info: ResponseInfo) => void;
}

export interface ResponseInfo {
  operationId: string;
  status: number;
  requestId: string | undefined;
}

/** A call's parsed answer together with what came with it. */
export interface CallResult<T> extends ResponseInfo {
  data: T;
  headers: Headers;
}

export interface HttpTransportOptions {
  baseUrl: string;
  apiKey?: string;
  fetch?: typeof globalThis.fetch;
  /** Per call, unless the caller's signal ends it first; default 30 s. */
  timeoutMs?: number;
  onResponse?: (info: ResponseInfo) => void;
}

const ROUTES_BY_ID = new Map(API_ROUTES.map((route) => [route.operationId, route]));

export function routeOf(operationId: string): ApiRoute {
  const route = ROUTES_BY_ID.get(operationId);
  if (!route) throw new Error(`no route ${operationId} in the contracts' route table`);
  return route;
}

/** An input the route's schema refuses, as the service would answer it (same code, same field paths). */
function invalidInput(error: z.ZodError, where: string): SortieApiError {
  const details = zodIssuesToDetails(error);
  const first = details[0];
  return new SortieApiError({
    status: 0,
    code: 'invalid_request',
    message: `${where} not sent: ${first ? `${first.field || 'body'}: ${first.message}` : 'invalid input'}`,
    details,
  });
}

/** The failure an answer stands for: the service's envelope when it sent one. */
export async function failureOf(response: Response, what: string): Promise<SortieApiError> {
  const text = await response.text().catch(() => '');
  const requestId = response.headers.get(REQUEST_ID_HEADER) ?? undefined;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const envelope = ErrorEnvelopeSchema.safeParse(body);
  if (envelope.success) {
    const { code, message, details, request_id } = envelope.data.error;
    return new SortieApiError({ status: response.status, code, message, details, requestId: request_id || requestId });
  }
  return new SortieApiError({
    status: response.status,
    code: 'http_error',
    message: `${what}: HTTP ${response.status}${text ? `: ${text.slice(0, 200)}` : ''}`,
    requestId,
  });
}

export interface HttpTransport {
  call<Op extends OperationId>(operationId: Op, input: InputOf<Op>, options?: CallOptions): Promise<CallResult<OutputOf<Op>>>;
  /**
   * A GET whose answer is not JSON (a streamed export): validated query, API key, request id, failures
   * as SortieApiError; the Response is handed back unread.
   */
  stream<Op extends OperationId>(operationId: Op, query: InputOf<Op>, options?: Omit<CallOptions, 'ackToken'>): Promise<Response>;
  /**
   * A POST whose body is a file sent as it is (a route with `rawBody`): validated query, API key, request
   * id, failures as SortieApiError; the Response is handed back unread. A stream body is sent as it is
   * read (`duplex: 'half'`), never gathered first; `size` becomes Content-Length.
   */
  upload<Op extends OperationId>(operationId: Op, query: InputOf<Op>, body: UploadBody, options?: UploadOptions): Promise<Response>;
}

/** A raw body: a stream of its bytes (with its length when known), or a Blob, which fetch reads itself. */
export type UploadBody = { stream: ReadableStream<Uint8Array>; size?: number } | Blob;

export interface UploadOptions extends Omit<CallOptions, 'ackToken'> {
  /** The Accept header: which of the route's answers is wanted (an import's NDJSON progress). */
  accept?: string;
}

export function createHttpTransport(options: HttpTransportOptions): HttpTransport {
  const base = options.baseUrl.replace(/\/+$/, '');
  // Looked up per call, so a fetch installed later (a polyfill, a test's stub) is the one used.
  const doFetch = options.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => globalThis.fetch(input, init));
  const timeoutMs = options.timeoutMs ?? 30_000;

  const headersFor = (callOptions: CallOptions, useKey: boolean): Record<string, string> => {
    const headers: Record<string, string> = { [REQUEST_ID_HEADER]: callOptions.requestId ?? newRequestId() };
    if (useKey && options.apiKey) headers[API_KEY_HEADER] = options.apiKey;
    if (callOptions.ackToken) headers.authorization = `Bearer ${callOptions.ackToken}`;
    return headers;
  };

  const tell = (callOptions: CallOptions, info: ResponseInfo) => {
    options.onResponse?.(info);
    callOptions.onResponse?.(info);
  };

  return {
    async call(operationId, input, callOptions = {}) {
      const route = routeOf(operationId);
      const headers = headersFor(callOptions, route.auth !== 'ack-token');
      let url = base + route.path;
      let body: string | undefined;
      if (route.body) {
        const checked = REQUEST_SCHEMAS[route.body].safeParse(input);
        if (!checked.success) throw invalidInput(checked.error, `${operationId}:`);
        // The input as the caller wrote it: the service applies the same schema (and its defaults) itself.
        body = JSON.stringify(input);
        headers['content-type'] = 'application/json';
      } else if (route.query) {
        const checked = route.query.safeParse(input ?? {});
        if (!checked.success) throw invalidInput(checked.error, `${operationId}:`);
        url += queryString((input ?? {}) as Record<string, unknown>);
      }
      const timeout = AbortSignal.timeout(timeoutMs);
      const response = await doFetch(url, {
        method: route.method.toUpperCase(),
        headers,
        body,
        signal: callOptions.signal ? AbortSignal.any([callOptions.signal, timeout]) : timeout,
      });
      const requestId = response.headers.get(REQUEST_ID_HEADER) ?? undefined;
      tell(callOptions, { operationId, status: response.status, requestId });
      if (!response.ok) throw await failureOf(response, `${route.method.toUpperCase()} ${route.path}`);
      const success = route.success.find((s) => s.status === response.status) ?? route.success[0]!;
      const text = await response.text();
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        throw new SortieApiError({ status: response.status, code: 'bad_response', message: `${operationId}: the answer is not JSON: ${text.slice(0, 200)}`, requestId });
      }
      const parsed = RESPONSE_SCHEMAS[success.schema].safeParse(json);
      if (!parsed.success) {
        const details = zodIssuesToDetails(parsed.error);
        throw new SortieApiError({
          status: response.status,
          code: 'bad_response',
          message: `${operationId}: the answer does not match the contract (${details[0]?.field || 'body'}: ${details[0]?.message})`,
          details,
          requestId,
        });
      }
      return { data: parsed.data as OutputOf<typeof operationId>, status: response.status, requestId, headers: response.headers, operationId };
    },

    async stream(operationId, query, callOptions = {}) {
      const route = routeOf(operationId);
      const checked = route.query?.safeParse(query ?? {});
      if (checked && !checked.success) throw invalidInput(checked.error, `${operationId}:`);
      // No time-out: a long export ends when its data does; the caller's signal can still end it.
      const response = await doFetch(base + route.path + queryString((query ?? {}) as Record<string, unknown>), {
        method: 'GET',
        headers: headersFor(callOptions, true),
        signal: callOptions.signal,
      });
      tell(callOptions, { operationId, status: response.status, requestId: response.headers.get(REQUEST_ID_HEADER) ?? undefined });
      if (!response.ok) throw await failureOf(response, `GET ${route.path}`);
      return response;
    },

    async upload(operationId, query, body, callOptions = {}) {
      const route = routeOf(operationId);
      const checked = route.query?.safeParse(query ?? {});
      if (checked && !checked.success) throw invalidInput(checked.error, `${operationId}:`);
      const headers = headersFor(callOptions, true);
      headers['content-type'] = 'application/octet-stream';
      if (callOptions.accept) headers.accept = callOptions.accept;
      const isBlob = body instanceof Blob;
      if (!isBlob && body.size !== undefined) headers['content-length'] = String(body.size);
      // No time-out: a big log takes minutes to send and import; the caller's signal can still end it.
      const response = await doFetch(base + route.path + queryString((query ?? {}) as Record<string, unknown>), {
        method: route.method.toUpperCase(),
        headers,
        body: isBlob ? body : body.stream,
        // A stream body is sent while it is read; fetch asks for this to say so (a Blob needs none).
        ...(!isBlob && { duplex: 'half' }),
        signal: callOptions.signal,
      } as RequestInit);
      tell(callOptions, { operationId, status: response.status, requestId: response.headers.get(REQUEST_ID_HEADER) ?? undefined });
      if (!response.ok) throw await failureOf(response, `${route.method.toUpperCase()} ${route.path}`);
      return response;
    },
  };
}
