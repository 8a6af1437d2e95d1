/**
 * `@sortie/client/node`: what needs Node's HTTP/2 (or Deno's node:http2) — StreamSubmit, a client stream
 * that only gRPC over HTTP/2 carries — and a file on disk as an import's source. Everything else is in
 * `@sortie/client`, which runs anywhere fetch does.
 */
import { openAsBlob } from 'node:fs';
import { basename } from 'node:path';
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { createClient } from '@connectrpc/connect';
import type { Transport } from '@connectrpc/connect';
import { compressionBrotli, compressionGzip, createGrpcTransport } from '@connectrpc/connect-node';
import { StreamSubmitRequestSchema, TelemetryService } from '@sortie/contracts';
import type { PointBatchSchema, StreamSessionHeaderSchema } from '@sortie/contracts';
import { streamSubmitAnswer, type StreamSubmitAnswer } from './answers.ts';
import { newRequestId, REQUEST_ID_HEADER } from './http.ts';
import { authInterceptor, createTelemetryClient, rpcError, type RpcOptions, type TelemetryClient } from './telemetry.ts';

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

/**
 * gRPC over HTTP/2 to the telemetry port, e.g. `http://localhost:50051`. Answers are asked for in brotli
 * first: the service writes it at a fast quality, a third of gzip's CPU for a Query answer at a better
 * ratio; gzip stays acceptable.
 */
function grpcTransport(options: { grpcUrl: string; apiKey?: string }): Transport {
  return createGrpcTransport({ baseUrl: options.grpcUrl, interceptors: [authInterceptor(options.apiKey)], acceptCompression: [compressionBrotli, compressionGzip] });
}

/** Query, Submit and Follow over gRPC (HTTP/2) to the telemetry port, e.g. `http://localhost:50051`. */
export function createGrpcTelemetryClient(options: { grpcUrl: string; apiKey?: string }): TelemetryClient {
  return createTelemetryClient({ baseUrl: options.grpcUrl, transport: grpcTransport(options) });
}

/** A gRPC (HTTP/2) client of the telemetry port, e.g. `http://localhost:50051`. */
export function createStreamSubmitClient(options: { grpcUrl: string; apiKey?: string }): StreamSubmitClient {
  const transport = grpcTransport(options);
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
