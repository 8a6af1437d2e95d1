/**
 * Limits of the gRPC server, set explicitly rather than left at Connect's 4 GiB defaults. The spec's
 * batch guidance is a few to tens of kilobytes per message; a 1,000-row batch of 8 channels is about
 * 220 KB, so 4 MiB leaves room for unusually large batches while bounding what one message can cost.
 */
export const GRPC_LIMITS = {
  /** Largest request message, after decompression; larger → RESOURCE_EXHAUSTED. */
  readMaxBytes: 4 * 1024 * 1024,
  /** Largest response message (a Query answer at the point caps stays far below). */
  writeMaxBytes: 64 * 1024 * 1024,
  /** Responses smaller than this are sent uncompressed. */
  compressMinBytes: 1024,
  /** Longest deadline a client may ask for. */
  maxTimeoutMs: 60 * 60 * 1000,
  /** HTTP/2: concurrent streams per connection. */
  maxConcurrentStreams: 100,
  /** HTTP/2: flow-control window per stream; a stream whose handler waits on the database stops the sender here. */
  initialWindowSize: 1024 * 1024,
  /** HTTP/2: largest header block (metadata), per connection setting. */
  maxHeaderListSize: 64 * 1024,
  /** HTTP/2: memory one session may buffer, in MB (Node's maxSessionMemory). */
  maxSessionMemoryMb: 32,
  /** Single-point StreamSubmit messages are coalesced: written at this many points… */
  streamFlushPoints: 1000,
  /** …or this long after the first pending one, whichever comes first. */
  streamFlushMs: 100,
} as const;
