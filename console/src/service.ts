// The console's way to the service in the browser, without zod: the JSON routes it calls and Connect for
// telemetry, typed by the contracts and the client but parsing nothing with their schemas. zod 4 alone is
// about 35 KB of the gzipped script whatever few schemas it parses, and the typed client's HTTP transport
// loads the contracts' whole route table with every schema (decision 0008: the script's weight). The
// service validates every input, and the page comes from the same process as the API it calls, so the
// schemas would check the service against itself. The request ids, query strings, RPC errors and answers
// are the client's own (its zod-free modules); the route paths copied here are typed as the route table's
// literal types, so a change there fails the type-check here.
import type { Interceptor } from '@connectrpc/connect';
import { ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-web';
import {
  followAnswer,
  newRequestId,
  queryAnswer,
  queryRequest,
  queryString,
  REQUEST_ID_HEADER,
  rpcError,
  SortieApiError,
  type FollowAnswer,
  type FollowRequestInit,
  type InputOf,
  type OperationId,
  type OutputOf,
  type QueryAnswer,
  type QueryRequestInit,
} from '@sortie/client';
import { API_KEY_HEADER, TelemetryService } from '@sortie/contracts';
import type { ApiRouteTable, ErrorCode, ErrorDetail } from '@sortie/contracts';

export { ACK_TIMEOUT_SECONDS, ARMING_TTL_SECONDS } from '@sortie/contracts';

type RouteOf<Op extends OperationId> = Extract<ApiRouteTable[number], { operationId: Op }>;
type Used =
  | 'listExperiments'
  | 'createExperiment'
  | 'listChannels'
  | 'listEvents'
  | 'getDatasetSpan'
  | 'getDatasetSummary'
  | 'listCommands'
  | 'listCommandTemplates'
  | 'createCommand'
  | 'retractCommand'
  | 'dispatchCommand'
  | 'getArming'
  | 'armDataset'
  | 'disarmDataset'
  | 'listDeliveries'
  | 'listWebhooks'
  | 'createWebhook'
  | 'rotateWebhook'
  | 'deleteWebhook'
  | 'testWebhook'
  | 'listNotifications'
  | 'listImports'
  | 'getFlightParameters'
  | 'diffFlightParameters'
  | 'exportDataset';

/** Method and path of each route the console calls, as the route table has them (its literal types check each). */
const ROUTES: { [Op in Used]: { method: RouteOf<Op>['method']; path: RouteOf<Op>['path'] } } = {
  listExperiments: { method: 'get', path: '/api/experiments/list' },
  createExperiment: { method: 'post', path: '/api/experiments/create' },
  listChannels: { method: 'get', path: '/api/datasets/channels' },
  listEvents: { method: 'get', path: '/api/datasets/events' },
  getDatasetSpan: { method: 'get', path: '/api/datasets/span' },
  getDatasetSummary: { method: 'get', path: '/api/datasets/summary' },
  listCommands: { method: 'get', path: '/api/commands/list' },
  listCommandTemplates: { method: 'get', path: '/api/commands/templates/list' },
  createCommand: { method: 'post', path: '/api/commands/create' },
  retractCommand: { method: 'post', path: '/api/commands/retract' },
  dispatchCommand: { method: 'post', path: '/api/commands/dispatch' },
  getArming: { method: 'get', path: '/api/datasets/arming' },
  armDataset: { method: 'post', path: '/api/datasets/arm' },
  disarmDataset: { method: 'post', path: '/api/datasets/disarm' },
  listDeliveries: { method: 'get', path: '/api/webhooks/deliveries' },
  listWebhooks: { method: 'get', path: '/api/webhooks/list' },
  createWebhook: { method: 'post', path: '/api/webhooks/create' },
  rotateWebhook: { method: 'post', path: '/api/webhooks/rotate' },
  deleteWebhook: { method: 'post', path: '/api/webhooks/delete' },
  testWebhook: { method: 'post', path: '/api/webhooks/test' },
  listNotifications: { method: 'get', path: '/api/notifications' },
  listImports: { method: 'get', path: '/api/imports/list' },
  getFlightParameters: { method: 'get', path: '/api/datasets/parameters' },
  diffFlightParameters: { method: 'get', path: '/api/datasets/parameters/diff' },
  exportDataset: { method: 'get', path: '/api/datasets/export' },
};

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A failed answer as the typed client reports one: the error envelope's code, message, fields and request id. */
export function apiError(status: number, body: unknown, requestId: string | undefined, otherwise = `the service answered HTTP ${status}`): SortieApiError {
  const e = isRecord(body) && isRecord(body.error) ? body.error : undefined;
  if (!e || typeof e.code !== 'string' || typeof e.message !== 'string')
    return new SortieApiError({ status, code: 'http_error', message: otherwise, requestId });
  const details = Array.isArray(e.details)
    ? e.details.filter((d): d is ErrorDetail => isRecord(d) && typeof d.field === 'string' && typeof d.message === 'string')
    : [];
  const sent = typeof e.request_id === 'string' && e.request_id ? e.request_id : requestId;
  return new SortieApiError({ status, code: e.code as ErrorCode, message: e.message, details, requestId: sent });
}

export interface CallResult<T> {
  data: T;
  headers: Headers;
}

export interface Transport {
  call<Op extends Exclude<Used, 'exportDataset'>>(operationId: Op, input: InputOf<Op>): Promise<CallResult<OutputOf<Op>>>;
  /** A GET whose answer is not JSON (a streamed export), handed back unread; failures throw before. */
  stream(operationId: 'exportDataset', query: InputOf<'exportDataset'>): Promise<Response>;
}

/** The JSON routes: the key in its header, a request id on each call, 30 s per call, failures as SortieApiError. */
export function createTransport(baseUrl: string, apiKey: string, doFetch: typeof fetch): Transport {
  const headersFor = (): Record<string, string> => ({ [REQUEST_ID_HEADER]: newRequestId(), [API_KEY_HEADER]: apiKey });
  const failure = async (response: Response, what: string): Promise<SortieApiError> => {
    const text = await response.text().catch(() => '');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    // Without an envelope (a proxy's page), worded as the typed client words it.
    return apiError(
      response.status,
      body,
      response.headers.get(REQUEST_ID_HEADER) ?? undefined,
      `${what}: HTTP ${response.status}${text ? `: ${text.slice(0, 200)}` : ''}`,
    );
  };
  return {
    async call(operationId, input) {
      const route = ROUTES[operationId];
      const headers = headersFor();
      let url = baseUrl + route.path;
      let body: string | undefined;
      if (route.method === 'post') {
        body = JSON.stringify(input);
        headers['content-type'] = 'application/json';
      } else {
        url += queryString((input ?? {}) as Record<string, unknown>);
      }
      const response = await doFetch(url, { method: route.method.toUpperCase(), headers, body, signal: AbortSignal.timeout(30_000) });
      if (!response.ok) throw await failure(response, `${route.method.toUpperCase()} ${route.path}`);
      const requestId = response.headers.get(REQUEST_ID_HEADER) ?? undefined;
      let data: unknown;
      try {
        data = await response.json();
      } catch {
        throw new SortieApiError({ status: response.status, code: 'bad_response', message: `${operationId}: the answer is not JSON`, requestId });
      }
      return { data: data as OutputOf<typeof operationId>, headers: response.headers };
    },
    async stream(operationId, query) {
      const route = ROUTES[operationId];
      const response = await doFetch(baseUrl + route.path + queryString(query as Record<string, unknown>), { method: 'GET', headers: headersFor() });
      if (!response.ok) throw await failure(response, `GET ${route.path}`);
      return response;
    },
  };
}

// --- Telemetry over Connect --------------------------------------------------------------------------

/** TelemetryService.Query and Follow over Connect (binary protobuf) at `<baseUrl>/api/rpc`, answers as the typed client gives them. */
export function createTelemetry(baseUrl: string, apiKey: string, doFetch: typeof fetch) {
  const auth: Interceptor = (next) => async (request) => {
    request.header.set(API_KEY_HEADER, apiKey);
    if (!request.header.has(REQUEST_ID_HEADER)) request.header.set(REQUEST_ID_HEADER, newRequestId());
    return await next(request);
  };
  const client = createClient(
    TelemetryService,
    createConnectTransport({ baseUrl: `${baseUrl}/api/rpc`, useBinaryFormat: true, fetch: doFetch, interceptors: [auth] }),
  );
  return {
    async query(request: QueryRequestInit): Promise<QueryAnswer> {
      const requestId = newRequestId();
      const init = queryRequest(request);
      try {
        const r = await client.query(init, { headers: new Headers({ [REQUEST_ID_HEADER]: requestId }) });
        return queryAnswer(r);
      } catch (error) {
        throw rpcError(error, requestId);
      }
    },
    /** Until `signal` aborts (the iteration then ends quietly) or the stream fails (thrown as SortieApiError). */
    follow(request: FollowRequestInit, signal: AbortSignal): AsyncIterable<FollowAnswer> {
      return {
        async *[Symbol.asyncIterator]() {
          const requestId = newRequestId();
          try {
            for await (const update of client.follow(request, { headers: new Headers({ [REQUEST_ID_HEADER]: requestId }), signal })) yield followAnswer(update);
          } catch (error) {
            if (signal.aborted && error instanceof ConnectError) return;
            throw rpcError(error, requestId);
          }
        },
      };
    },
  };
}
