// The console's way to the service in the browser, without zod: the JSON routes it calls and Connect for
// telemetry, typed by the contracts and the client but parsing nothing with their schemas. zod 4 alone is
// about 35 KB of the gzipped script whatever few schemas it parses, and the typed client's HTTP transport
// loads the contracts' whole route table with every schema (decision 0008: the script's weight). The
// service validates every input, and the page comes from the same process as the API it calls, so the
// schemas would check the service against itself. What is copied here of the contracts (paths, statuses,
// bounds) is typed as the contracts' own literal types: a change there fails the type-check here.
import type { Interceptor } from '@connectrpc/connect';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-web';
import {
  SortieApiError,
  timestampOf,
  timestampText,
  type FollowAnswer,
  type FollowRequestInit,
  type InputOf,
  type OperationId,
  type OutputOf,
  type QueryAnswer,
  type QueryRequestInit,
  type SeriesAnswer,
} from '@sortie/client';
import { API_KEY_HEADER, TelemetryService } from '@sortie/contracts';
import type {
  ACK_TIMEOUT_SECONDS as AckTimeoutSeconds,
  ApiRouteTable,
  ARMING_TTL_SECONDS as ArmingTtlSeconds,
  ERROR_STATUS as ErrorStatus,
  ErrorCode,
  ErrorDetail,
  FollowUpdate,
  Series,
} from '@sortie/contracts';

/** The contracts' bounds of an arming's TTL and a dispatch's ack timeout (their literal types check the copy). */
export const ARMING_TTL_SECONDS: typeof ArmingTtlSeconds = { min: 10, max: 43_200, default: 900 };
export const ACK_TIMEOUT_SECONDS: typeof AckTimeoutSeconds = { min: 1, max: 3600, default: 60 };

/** The HTTP status each of the service's error codes travels with (the contracts' table, checked by its type). */
const ERROR_STATUS: typeof ErrorStatus = {
  invalid_request: 400,
  unauthorized: 401,
  insufficient_scope: 403,
  forbidden: 403,
  not_found: 404,
  request_timeout: 408,
  conflict: 409,
  payload_too_large: 413,
  headers_too_large: 431,
  rate_limited: 429,
  internal_error: 500,
  unavailable: 503,
};

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

export const REQUEST_ID_HEADER = 'x-request-id';

/** A fresh request id in the service's own form, so logs on both sides read alike. */
export function newRequestId(): string {
  return `req_${crypto.randomUUID().replaceAll('-', '')}`;
}

/** A query object as URL parameters, as the typed client writes them: arrays repeat their key, undefined is left out. */
export function queryString(input: Record<string, unknown>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(input)) {
    if (value === undefined || value === null) continue;
    for (const item of Array.isArray(value) ? value : [value]) params.append(key, item instanceof Date ? item.toISOString() : String(item));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

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

/** The trailer (or header) in which the service sends its error code beside the gRPC status. */
const ERROR_CODE_TRAILER = 'x-sortie-error-code';

/** The spec's code for a gRPC status when the service sent none (a proxy, or the network), as the client maps it. */
const CODE_OF_STATUS: Partial<Record<Code, ErrorCode>> = {
  [Code.InvalidArgument]: 'invalid_request',
  [Code.OutOfRange]: 'invalid_request',
  [Code.Unauthenticated]: 'unauthorized',
  [Code.PermissionDenied]: 'insufficient_scope',
  [Code.NotFound]: 'not_found',
  [Code.FailedPrecondition]: 'conflict',
  [Code.AlreadyExists]: 'conflict',
  [Code.ResourceExhausted]: 'rate_limited',
  [Code.DeadlineExceeded]: 'request_timeout',
};

function isErrorCode(value: string | null): value is ErrorCode {
  return value !== null && Object.hasOwn(ERROR_STATUS, value);
}

/** A failed RPC as the typed client reports it: the service's code from its trailer, with the status that code travels with over HTTP. */
export function rpcError(error: unknown, requestId: string): unknown {
  if (!(error instanceof ConnectError)) return error;
  const sent = error.metadata.get(ERROR_CODE_TRAILER);
  if (!isErrorCode(sent) && error.code === Code.Unavailable) return error;
  const code: ErrorCode | 'http_error' = isErrorCode(sent)
    ? sent
    : (CODE_OF_STATUS[error.code] ?? (error.code === Code.Internal ? 'internal_error' : 'http_error'));
  return new SortieApiError({
    status: code === 'http_error' ? 502 : ERROR_STATUS[code],
    code,
    message: error.rawMessage,
    requestId: error.metadata.get(REQUEST_ID_HEADER) ?? requestId,
    cause: error,
  });
}

function seriesAnswer(s: Series): SeriesAnswer {
  const points = new Array<SeriesAnswer['points'][number]>(s.points.length);
  for (let i = 0; i < s.points.length; i++) {
    const p = s.points[i]!;
    points[i] = { timestamp: p.timestamp ? timestampText(p.timestamp) : '', value: p.value };
  }
  return { channelId: s.channelId, points, rawPoints: Number(s.rawPoints) };
}

function followAnswer(u: FollowUpdate): FollowAnswer {
  return {
    reset: u.reset,
    series: u.series.map(seriesAnswer),
    head: u.head ? timestampText(u.head) : null,
    events: u.events.map((e) => ({ id: e.id, time: e.time ? timestampText(e.time) : '', kind: e.kind, message: e.message, data: e.data ?? {} })),
    commands: u.commands,
    dropped: Number(u.dropped),
  };
}

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
      const init = {
        ...(request.experimentId !== undefined && { experimentId: request.experimentId }),
        datasetId: request.datasetId,
        channelIds: request.channelIds,
        ...(request.from !== undefined && { from: timestampOf(request.from) }),
        ...(request.to !== undefined && { to: timestampOf(request.to) }),
        ...(request.maxPointsPerChannel !== undefined && { maxPointsPerChannel: request.maxPointsPerChannel }),
      };
      try {
        const r = await client.query(init, { headers: new Headers({ [REQUEST_ID_HEADER]: requestId }) });
        return { series: r.series.map(seriesAnswer), totalRawPoints: Number(r.totalRawPoints) };
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
