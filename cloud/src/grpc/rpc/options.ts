import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import { compressionBrotli, compressionGzip } from '@connectrpc/connect-node';
import type { Compression } from '@connectrpc/connect/protocol';
import type { GrpcDeps } from './deps.ts';
import { telemetryRequestGate } from './gate.ts';
import { GRPC_LIMITS } from './limits.ts';

/**
 * The Connect handler options of TelemetryService wherever it is mounted (the gRPC port and the HTTP
 * port's /api/rpc), so both enforce the same limits, authenticate through the same gate and write the
 * same JSON.
 */
export function telemetryHandlerOptions(deps: GrpcDeps, shutdownSignal?: AbortSignal) {
  return {
    readMaxBytes: GRPC_LIMITS.readMaxBytes,
    writeMaxBytes: GRPC_LIMITS.writeMaxBytes,
    compressMinBytes: GRPC_LIMITS.compressMinBytes,
    maxTimeoutMs: GRPC_LIMITS.maxTimeoutMs,
    // A response is compressed as the client's list prefers, from these: gzip for most, brotli for
    // Sortie's own client, which lists it first.
    acceptCompression: [fastGzip, fastBrotli],
    ...(shutdownSignal && { shutdownSignal }),
    // Zero counters and empty lists are written, not left out: `{"accepted":"2","written":"0"}` says
    // nothing was written, where a missing `written` looked like a field the server does not have.
    jsonOptions: { alwaysEmitImplicit: true },
    // Authenticate from the headers alone, before a single request byte is read or parsed.
    requestGate: telemetryRequestGate(deps),
  };
}

const gzipAsync = promisify(gzip);
const brotliAsync = promisify(brotliCompress);

/**
 * gzip as Connect's, but responses are written at zlib's fastest level: a Query answer is mostly
 * doubles, which level 1 compresses as well as the default level 6 (69 % against 68 % of an
 * eight-channel answer's 256 KB) in half the server's CPU (4.7 against 8.6 ms). Requests are read by
 * Connect's own decompression, with its size limit.
 */
const fastGzip: Compression = {
  name: compressionGzip.name,
  async compress(bytes) {
    const out = await gzipAsync(bytes, { level: 1 });
    return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
  },
  decompress: compressionGzip.decompress,
};

/**
 * brotli at its fastest quality but one. On an eight-channel answer as columns (256 KB, mostly doubles)
 * quality 1 took 1.4–1.6 ms to 69 % where gzip level 1 took 4.6–6.0 ms to 73 % (docs/PERFORMANCE.md);
 * Connect's own brotli writes at quality 11, seconds for the same bytes. Requests are read by Connect's.
 */
const fastBrotli: Compression = {
  name: compressionBrotli.name,
  async compress(bytes) {
    const out = await brotliAsync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 1, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.byteLength } });
    return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
  },
  decompress: compressionBrotli.decompress,
};
