import type { MessageInitShape } from '@bufbuild/protobuf';
import { ConnectError, createClient } from '@connectrpc/connect';
import type { Client, Interceptor, Transport } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-web';
import { API_KEY_HEADER, TelemetryService, telemetryServiceWithBytesFields } from '@sortie/contracts';
import type { FollowRequestSchema, SubmitRequestSchema } from '@sortie/contracts';
import { followAnswer, queryAnswer, queryRequest, submitAnswer, type FollowAnswer, type QueryAnswer, type QueryInput, type SubmitAnswer } from './answers.ts';
import { SortieApiError } from './errors.ts';
import type { ResponseInfo } from './http.ts';
import { rpcError } from './rpc-errors.ts';
import { newRequestId, REQUEST_ID_HEADER } from './wire.ts';

export { ERROR_CODE_TRAILER, rpcError } from './rpc-errors.ts';

/** Query's request: `from` and `to` as RFC 3339 text, a Date or a Timestamp. */
export type QueryRequestInit = QueryInput;
export type SubmitRequestInit = MessageInitShape<typeof SubmitRequestSchema>;
export type FollowRequestInit = MessageInitShape<typeof FollowRequestSchema>;

export interface RpcOptions {
  signal?: AbortSignal;
  requestId?: string;
  timeoutMs?: number;
  onResponse?: (info: ResponseInfo) => void;
}


/** Sends the API key and a request id on every call of a transport. */
export function authInterceptor(apiKey: string | undefined): Interceptor {
  return (next) => async (request) => {
    if (apiKey) request.header.set(API_KEY_HEADER, apiKey);
    if (!request.header.has(REQUEST_ID_HEADER)) request.header.set(REQUEST_ID_HEADER, newRequestId());
    return await next(request);
  };
}

/** Answers are plain JSON-serialisable data (answers.ts): times as RFC 3339 text, counters as numbers. */
export interface TelemetryClient {
  /** Downsampled read-back of channels over a time range (scope telemetry:read). */
  query(request: QueryRequestInit, options?: RpcOptions): Promise<QueryAnswer>;
  /** One batch of points into one dataset (scope telemetry:write). */
  submit(request: SubmitRequestInit, options?: RpcOptions): Promise<SubmitAnswer>;
  /**
   * Follow a dataset live (scope telemetry:read): the window's series first (`reset`), then what each
   * committed batch adds, events and command changes, until `signal` aborts (the iteration then ends
   * quietly) or the stream fails (thrown as SortieApiError, like the other calls). No timeout applies.
   */
  follow(request: FollowRequestInit, options?: Omit<RpcOptions, 'timeoutMs'>): AsyncIterable<FollowAnswer>;
}

/** A time the caller wrote that is no RFC 3339 time: refused before sending, as a bad HTTP input is. */
function refusedInput(error: unknown): never {
  if (error instanceof RangeError) throw new SortieApiError({ status: 0, code: 'invalid_request', message: error.message, details: [{ field: 'from/to', message: error.message }] });
  throw error;
}

/**
 * TelemetryService as this client reads binary answers: Query's and Follow's series are left as bytes
 * and read by hand (series-wire.ts), several times faster than through protobuf-es.
 */
const WireTelemetryService = telemetryServiceWithBytesFields({ QueryResponse: [1], FollowUpdate: [2] });

/**
 * Query and Submit over a fetch-based Connect transport: the Connect protocol is plain HTTP/1.1 POSTs,
 * so the same client runs in Node, Deno and the browser (gRPC proper needs HTTP/2 trailers, which
 * fetch cannot read). Binary protobuf on the wire, the smaller and faster form.
 */
export function createTelemetryClient(options: {
  baseUrl: string;
  apiKey?: string;
  fetch?: typeof globalThis.fetch;
  /** Another transport (gRPC over HTTP/2 from `@connectrpc/connect-node`, say); binary unless `json`. */
  transport?: Transport;
  /** The given transport speaks JSON (`useBinaryFormat: false`): answers are decoded by protobuf-es. */
  json?: boolean;
}): TelemetryClient {
  const transport =
    options.transport ??
    createConnectTransport({
      baseUrl: options.baseUrl,
      useBinaryFormat: true,
      fetch: options.fetch,
      interceptors: [authInterceptor(options.apiKey)],
    });
  // Typed as the generated service: the wire descriptor differs only in series arriving as bytes,
  // which queryAnswer and followAnswer take as they come (answers.ts WireSeries).
  const client = createClient(options.json ? TelemetryService : WireTelemetryService, transport) as unknown as Client<typeof TelemetryService>;
  const run = async <T>(call: (headers: Headers, signal?: AbortSignal, timeoutMs?: number) => Promise<T>, operationId: string, rpc: RpcOptions = {}): Promise<T> => {
    const requestId = rpc.requestId ?? newRequestId();
    const headers = new Headers({ [REQUEST_ID_HEADER]: requestId });
    try {
      const answer = await call(headers, rpc.signal, rpc.timeoutMs);
      rpc.onResponse?.({ operationId, status: 200, requestId });
      return answer;
    } catch (error) {
      const mapped = rpcError(error, requestId);
      if (mapped instanceof SortieApiError) rpc.onResponse?.({ operationId, status: mapped.status, requestId: mapped.requestId });
      throw mapped;
    }
  };
  return {
    query: async (request, rpc) => {
      let init;
      try {
        init = queryRequest(request);
      } catch (error) {
        refusedInput(error);
      }
      return queryAnswer(await run((headers, signal, timeoutMs) => client.query(init, { headers, signal, timeoutMs }), 'TelemetryService.Query', rpc));
    },
    submit: async (request, rpc) =>
      submitAnswer(await run((headers, signal, timeoutMs) => client.submit(request, { headers, signal, timeoutMs }), 'TelemetryService.Submit', rpc)),
    follow: (request, rpc = {}) => ({
      async *[Symbol.asyncIterator]() {
        const requestId = rpc.requestId ?? newRequestId();
        const headers = new Headers({ [REQUEST_ID_HEADER]: requestId });
        let answered = false;
        try {
          for await (const update of client.follow(request, { headers, signal: rpc.signal })) {
            if (!answered) rpc.onResponse?.({ operationId: 'TelemetryService.Follow', status: 200, requestId });
            answered = true;
            yield followAnswer(update);
          }
        } catch (error) {
          // The caller's own abort (or AbortSignal.timeout) ends the iteration: that is how a follower stops.
          if (rpc.signal?.aborted && error instanceof ConnectError) return;
          const mapped = rpcError(error, requestId);
          if (mapped instanceof SortieApiError) rpc.onResponse?.({ operationId: 'TelemetryService.Follow', status: mapped.status, requestId: mapped.requestId });
          throw mapped;
        }
      },
    }),
  };
}
