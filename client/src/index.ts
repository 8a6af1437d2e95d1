/**
 * `@sortie/client`: one typed client of the Sortie service for Node, Deno and the browser.
 *
 * HTTP methods come from the contracts' route table (`ApiRouteTable`): each takes its route's body or
 * query as the zod schema's input type, validates it with that schema before sending (a bad input is a
 * `SortieApiError` with status 0 and the service's `details[].field` paths), and answers the success
 * body parsed by the route's response schema. A log file is imported with `importFile` (its bytes
 * streamed, never held whole; a Blob or File in a browser, a path via `fileFromPath` of
 * `@sortie/client/node`). Telemetry Query, Submit and Follow go over the Connect
 * protocol (fetch) to `/api/rpc` on the same port; their answers are plain JSON-serialisable data (times
 * as RFC 3339 text, counters as numbers: answers.ts). StreamSubmit needs HTTP/2 and lives in
 * `@sortie/client/node`.
 */
import { createHttpTransport, type CallOptions, type CallResult, type ResponseInfo } from './http.ts';
import { importFile, type ImportFileOptions, type ImportSource } from './imports.ts';
import { OPERATIONS, STREAMED_OPERATIONS, type InputOf, type OperationId, type OutputOf } from './routes.ts';
import { createTelemetryClient, type TelemetryClient } from './telemetry.ts';

export { SortieApiError } from './errors.ts';
export type { ClientErrorCode } from './errors.ts';
export type { CallOptions, CallResult, ResponseInfo } from './http.ts';
export { newRequestId, queryString, REQUEST_ID_HEADER } from './wire.ts';
export { OPERATIONS, STREAMED_OPERATIONS } from './routes.ts';
export type { InputOf, OperationId, OutputOf } from './routes.ts';
export { authInterceptor, createTelemetryClient, rpcError } from './telemetry.ts';
export type { ImportFileOptions, ImportProgress, ImportSource } from './imports.ts';
export { followAnswer, queryAnswer, queryRequest, timestampOf, timestampText } from './answers.ts';
export type { FollowAnswer, FollowEventAnswer, PointAnswer, QueryAnswer, SeriesAnswer, StreamSubmitAnswer, SubmitAnswer, TimeInput } from './answers.ts';
export type { FollowRequestInit, QueryRequestInit, RpcOptions, SubmitRequestInit, TelemetryClient } from './telemetry.ts';

export interface SortieClientOptions {
  /** The service's HTTP address, e.g. `http://localhost:8080`. */
  baseUrl: string;
  /** An `sk_` API key; its scopes decide what succeeds. */
  apiKey?: string;
  /** Another fetch (a test's, or one with a proxy agent); the global one by default. */
  fetch?: typeof globalThis.fetch;
  /** Per JSON call; default 30 s. Exports are not bounded (they end when the data does). */
  timeoutMs?: number;
  /** Where the Connect handlers of TelemetryService are mounted; `<baseUrl>/api/rpc` by default. */
  telemetryUrl?: string;
  /** Told of every answer with its status and request id. */
  onResponse?: (info: ResponseInfo) => void;
}

/** A method of the route table: input as the schema takes it, answer as the schema gives it. */
export type Method<Op extends OperationId> = [InputOf<Op>] extends [void]
  ? (input?: undefined, options?: CallOptions) => Promise<OutputOf<Op>>
  : (input: InputOf<Op>, options?: CallOptions) => Promise<OutputOf<Op>>;

type Groups = typeof OPERATIONS;
/** Operations sent and answered as JSON (a streamed file has a method of its own: `exportDataset` answers one, `importFile` sends one). */
export type JsonOperationId = Exclude<OperationId, (typeof STREAMED_OPERATIONS)[number]>;
export type SortieMethods = { [G in keyof Groups]: { [M in keyof Groups[G]]: Groups[G][M] extends OperationId ? Method<Groups[G][M]> : never } };

export interface SortieClient extends SortieMethods {
  /** Any JSON operation of the route table by its operationId, answering with status, request id and headers. */
  request<Op extends JsonOperationId>(operationId: Op, input: InputOf<Op>, options?: CallOptions): Promise<CallResult<OutputOf<Op>>>;
  /** A dataset's export as a streamed Response (CSV or MCAP bytes in `body`); failures throw before. */
  exportDataset(query: InputOf<'exportDataset'>, options?: Omit<CallOptions, 'ackToken'>): Promise<Response>;
  /**
   * Import a log file (ULog, DataFlash, MAVLink .tlog or raw) into a new dataset of `query.experimentId`,
   * its bytes streamed as they are read. `options.onProgress` is told of the upload and of the service's
   * import as they go. Answers the import; the same file again answers the first import, `duplicate: true`.
   */
  importFile(query: InputOf<'createImport'>, source: ImportSource, options?: ImportFileOptions): Promise<OutputOf<'createImport'>>;
  telemetry: TelemetryClient;
}

export function createSortieClient(options: SortieClientOptions): SortieClient {
  const http = createHttpTransport(options);
  const groups = Object.fromEntries(
    Object.entries(OPERATIONS).map(([group, methods]) => [
      group,
      Object.fromEntries(
        Object.entries(methods).map(([name, operationId]) => [
          name,
          async (input: unknown, callOptions?: CallOptions) => (await http.call(operationId as OperationId, input as never, callOptions)).data,
        ]),
      ),
    ]),
  ) as unknown as SortieMethods;
  return {
    ...groups,
    request: (operationId, input, callOptions) => http.call(operationId, input, callOptions),
    exportDataset: (query, callOptions) => http.stream('exportDataset', query, callOptions),
    importFile: (query, source, importOptions) => importFile(http, query, source, importOptions),
    telemetry: createTelemetryClient({
      baseUrl: options.telemetryUrl ?? `${options.baseUrl.replace(/\/+$/, '')}/api/rpc`,
      apiKey: options.apiKey,
      fetch: options.fetch,
    }),
  };
}
