/**
 * `@sortie/client/node`: what needs Node's HTTP/2 (or Deno's node:http2) — StreamSubmit, a client stream
 * that only gRPC over HTTP/2 carries — and a file on disk as an import's source. Everything else is in
 * `@sortie/client`, which runs anywhere fetch does.
 */
import { openAsBlob } from 'node:fs';
import { basename } from 'node:path';
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { createClient } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { StreamSubmitRequestSchema, TelemetryService } from '@sortie/contracts';
import type { PointBatchSchema, StreamSessionHeaderSchema } from '@sortie/contracts';
import { streamSubmitAnswer, type StreamSubmitAnswer } from './answers.ts';
import { newRequestId, REQUEST_ID_HEADER } from './http.ts';
import { authInterceptor, rpcError, type RpcOptions } from './telemetry.ts';

export * from './index.ts';

export type StreamSessionHeaderInit = MessageInitShape<typeof StreamSessionHeaderSchema>;
export type PointBatchInit = MessageInitShape<typeof PointBatchSchema>;

export interface StreamSubmitClient {
  /**
   * One StreamSubmit session: the header, then every batch `batches` yields, then half-close; answers
   * the stream's counters. Batches are pulled as the stream drains, so a long source is never buffered
   * whole. Failures are `SortieApiError`s with the service's code. The answer is plain data: counters as numbers.
   */
  streamSubmit(header: StreamSessionHeaderInit, batches: Iterable<PointBatchInit> | AsyncIterable<PointBatchInit>, options?: RpcOptions): Promise<StreamSubmitAnswer>;
}

/** A gRPC (HTTP/2) client of the telemetry port, e.g. `http://localhost:50051`. */
export function createStreamSubmitClient(options: { grpcUrl: string; apiKey?: string }): StreamSubmitClient {
  const transport = createGrpcTransport({ baseUrl: options.grpcUrl, interceptors: [authInterceptor(options.apiKey)] });
  const client = createClient(TelemetryService, transport);
  return {
    async streamSubmit(header, batches, rpc = {}) {
      const requestId = rpc.requestId ?? newRequestId();
      async function* messages() {
        yield create(StreamSubmitRequestSchema, { message: { case: 'header', value: header } });
        for await (const batch of batches) yield create(StreamSubmitRequestSchema, { message: { case: 'batch', value: batch } });
      }
      try {
        const answer = await client.streamSubmit(messages(), { headers: { [REQUEST_ID_HEADER]: requestId }, signal: rpc.signal, timeoutMs: rpc.timeoutMs });
        rpc.onResponse?.({ operationId: 'TelemetryService.StreamSubmit', status: 200, requestId });
        return streamSubmitAnswer(answer);
      } catch (error) {
        throw rpcError(error, requestId);
      }
    },
  };
}

/**
 * A file on disk as a File for `importFile`, named by the path's last part: its bytes are read from disk
 * as the upload sends them (fs.openAsBlob), never all at once. The file must not change meanwhile.
 */
export async function fileFromPath(path: string): Promise<File> {
  return new File([await openAsBlob(path)], basename(path));
}
