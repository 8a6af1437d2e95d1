import http2 from 'node:http2';

/**
 * TelemetryService calls with bytes of the test's choosing, on each wire protocol the gRPC port
 * speaks: what a generated client would never send (broken protobuf, bogus envelopes), read back as
 * the status, the spec's error code and the request id a client would see.
 */
export const RPC_PROTOCOLS = ['grpc', 'grpc-web', 'connect', 'connect-json'] as const;
export type RpcProtocol = (typeof RPC_PROTOCOLS)[number];
export const RPC_METHODS = ['Submit', 'Query', 'StreamSubmit', 'Follow'] as const;
/** Methods whose Connect form is a stream (enveloped messages, end-of-stream message), not a unary POST. */
export const CONNECT_STREAMING: ReadonlySet<RpcMethod> = new Set(['StreamSubmit', 'Follow']);
export type RpcMethod = (typeof RPC_METHODS)[number];

const SERVICE_PATH = '/sortie.telemetry.v1.TelemetryService/';

export interface RpcOutcome {
  /** The HTTP status of the response. */
  httpStatus: number;
  /** gRPC status code (0 = OK); for Connect, the code named in the error body mapped to its number. */
  code: number;
  message: string;
  /** The `x-sortie-error-code` trailer (or header, or Connect end-stream metadata). */
  errorCode: string | undefined;
  requestId: string | null;
}

export interface RpcRequest {
  protocol: RpcProtocol;
  method: RpcMethod;
  key?: string;
  /**
   * The request: for the enveloped protocols (gRPC, gRPC-Web, Connect streaming) the message bytes,
   * enveloped here unless `raw` is set; for Connect unary the body as is (binary, or JSON text).
   */
  body: Uint8Array;
  /** Send `body` as the whole HTTP body, framing included. */
  raw?: boolean;
  headers?: Record<string, string>;
  timeoutMs?: number;
}

/** A gRPC length-prefixed message: flag byte, 4-byte big-endian length, the bytes. */
export function envelope(message: Uint8Array, flags = 0): Uint8Array {
  const out = new Uint8Array(5 + message.byteLength);
  out[0] = flags;
  new DataView(out.buffer).setUint32(1, message.byteLength);
  out.set(message, 5);
  return out;
}

// Connect's error codes by the gRPC number they stand for.
const CONNECT_CODES = [
  'ok', 'canceled', 'unknown', 'invalid_argument', 'deadline_exceeded', 'not_found', 'already_exists', 'permission_denied',
  'resource_exhausted', 'failed_precondition', 'aborted', 'out_of_range', 'unimplemented', 'internal', 'unavailable', 'data_loss', 'unauthenticated',
];

export async function callRpc(baseUrl: string, request: RpcRequest): Promise<RpcOutcome> {
  const timeoutMs = request.timeoutMs ?? 15_000;
  const headers: Record<string, string> = { ...request.headers };
  if (request.key) headers['x-api-key'] = request.key;
  switch (request.protocol) {
    case 'grpc':
      return grpcCall(baseUrl, request, headers, timeoutMs);
    case 'grpc-web':
      return grpcWebCall(baseUrl, request, headers, timeoutMs);
    default:
      return CONNECT_STREAMING.has(request.method) ? connectStreamCall(baseUrl, request, headers, timeoutMs) : connectUnaryCall(baseUrl, request, headers, timeoutMs);
  }
}

function framed(request: RpcRequest): Uint8Array {
  return request.raw ? request.body : envelope(request.body);
}

function grpcCall(baseUrl: string, request: RpcRequest, headers: Record<string, string>, timeoutMs: number): Promise<RpcOutcome> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(baseUrl);
    const timer = setTimeout(() => {
      session.destroy();
      reject(new Error(`gRPC ${request.method}: no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    session.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    const stream = session.request({
      ':method': 'POST',
      ':path': SERVICE_PATH + request.method,
      'content-type': 'application/grpc+proto',
      te: 'trailers',
      ...headers,
    });
    let responseHeaders: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    stream.on('response', (h) => (responseHeaders = h));
    stream.on('trailers', (t) => (trailers = t));
    stream.on('data', () => {});
    stream.on('error', (error) => {
      clearTimeout(timer);
      session.destroy();
      reject(error);
    });
    stream.on('close', () => {
      clearTimeout(timer);
      session.close();
      // Trailers-only responses carry the status in the headers.
      const status = trailers['grpc-status'] ?? responseHeaders['grpc-status'];
      const message = trailers['grpc-message'] ?? responseHeaders['grpc-message'];
      const errorCode = trailers['x-sortie-error-code'] ?? responseHeaders['x-sortie-error-code'];
      resolve({
        httpStatus: Number(responseHeaders[':status']),
        code: status === undefined ? -1 : Number(status),
        message: decodeURIComponent(String(message ?? '')),
        errorCode: errorCode === undefined ? undefined : String(errorCode),
        requestId: (responseHeaders['x-request-id'] as string | undefined) ?? null,
      });
    });
    stream.end(framed(request));
  });
}

async function grpcWebCall(baseUrl: string, request: RpcRequest, headers: Record<string, string>, timeoutMs: number): Promise<RpcOutcome> {
  const response = await fetch(baseUrl + SERVICE_PATH + request.method, {
    method: 'POST',
    headers: { 'content-type': 'application/grpc-web+proto', 'x-grpc-web': '1', ...headers },
    body: framed(request) as Uint8Array<ArrayBuffer>,
    signal: AbortSignal.timeout(timeoutMs),
  });
  const bytes = new Uint8Array(await response.arrayBuffer());
  const trailer = new Headers();
  for (const frame of frames(bytes)) {
    if ((frame.flags & 0x80) === 0) continue;
    for (const line of new TextDecoder().decode(frame.data).split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon > 0) trailer.set(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
    }
  }
  const pick = (name: string) => trailer.get(name) ?? response.headers.get(name);
  const status = pick('grpc-status');
  return {
    httpStatus: response.status,
    code: status === null ? -1 : Number(status),
    message: decodeURIComponent(pick('grpc-message') ?? ''),
    errorCode: pick('x-sortie-error-code') ?? undefined,
    requestId: response.headers.get('x-request-id'),
  };
}

async function connectUnaryCall(baseUrl: string, request: RpcRequest, headers: Record<string, string>, timeoutMs: number): Promise<RpcOutcome> {
  const response = await fetch(baseUrl + SERVICE_PATH + request.method, {
    method: 'POST',
    headers: { 'content-type': request.protocol === 'connect-json' ? 'application/json' : 'application/proto', 'connect-protocol-version': '1', ...headers },
    body: request.body as Uint8Array<ArrayBuffer>,
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await response.text();
  let code = 0;
  let message = '';
  if (response.status !== 200) {
    const error = parseJson(text) as { code?: string; message?: string } | undefined;
    code = CONNECT_CODES.indexOf(error?.code ?? '');
    message = error?.message ?? '';
  }
  return { httpStatus: response.status, code, message, errorCode: response.headers.get('x-sortie-error-code') ?? undefined, requestId: response.headers.get('x-request-id') };
}

async function connectStreamCall(baseUrl: string, request: RpcRequest, headers: Record<string, string>, timeoutMs: number): Promise<RpcOutcome> {
  const json = request.protocol === 'connect-json';
  const response = await fetch(baseUrl + SERVICE_PATH + request.method, {
    method: 'POST',
    headers: { 'content-type': json ? 'application/connect+json' : 'application/connect+proto', 'connect-protocol-version': '1', ...headers },
    body: framed(request) as Uint8Array<ArrayBuffer>,
    signal: AbortSignal.timeout(timeoutMs),
  });
  const bytes = new Uint8Array(await response.arrayBuffer());
  let outcome: RpcOutcome = { httpStatus: response.status, code: -1, message: '', errorCode: undefined, requestId: response.headers.get('x-request-id') };
  if (response.status !== 200) {
    const error = parseJson(new TextDecoder().decode(bytes)) as { code?: string; message?: string } | undefined;
    return { ...outcome, code: CONNECT_CODES.indexOf(error?.code ?? ''), message: error?.message ?? '', errorCode: response.headers.get('x-sortie-error-code') ?? undefined };
  }
  for (const frame of frames(bytes)) {
    if ((frame.flags & 0x02) === 0) continue;
    const end = parseJson(new TextDecoder().decode(frame.data)) as
      | { error?: { code?: string; message?: string }; metadata?: Record<string, string[]> }
      | undefined;
    outcome = {
      ...outcome,
      code: end?.error ? CONNECT_CODES.indexOf(end.error.code ?? '') : 0,
      message: end?.error?.message ?? '',
      errorCode: end?.metadata?.['x-sortie-error-code']?.[0],
    };
  }
  return outcome;
}

function* frames(bytes: Uint8Array): Generator<{ flags: number; data: Uint8Array }> {
  let offset = 0;
  while (offset + 5 <= bytes.byteLength) {
    const length = new DataView(bytes.buffer, bytes.byteOffset + offset + 1, 4).getUint32(0);
    yield { flags: bytes[offset]!, data: bytes.subarray(offset + 5, offset + 5 + length) };
    offset += 5 + length;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
