// The console's JSON calls in the browser, without zod: typed by the contracts and the client but parsing
// nothing with their schemas. zod 4 alone is about 35 KB of the gzipped script whatever few schemas it
// parses, and the typed client's HTTP transport loads the contracts' whole route table with every schema
// (decision 0008: the script's weight). The service validates every input, and the page comes from the
// same process as the API it calls, so the schemas would check the service against itself. Request ids
// and query strings are the client's own (its zod-free wire.ts), as is telemetry (api.ts uses the client's
// createTelemetryClient); the route paths written here are typed as the route table's literal types, so a
// change there fails the type-check here.
import { newRequestId, queryString, REQUEST_ID_HEADER, SortieApiError, type InputOf, type OperationId, type OutputOf } from '@sortie/client';
import { API_KEY_HEADER } from '@sortie/contracts';
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
