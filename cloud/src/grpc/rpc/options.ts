import { compressionGzip } from '@connectrpc/connect-node';
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
    acceptCompression: [compressionGzip],
    ...(shutdownSignal && { shutdownSignal }),
    // Zero counters and empty lists are written, not left out: `{"accepted":"2","written":"0"}` says
    // nothing was written, where a missing `written` looked like a field the server does not have.
    jsonOptions: { alwaysEmitImplicit: true },
    // Authenticate from the headers alone, before a single request byte is read or parsed.
    requestGate: telemetryRequestGate(deps),
  };
}
