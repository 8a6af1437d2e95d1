import { STATUS_CODES, type Server, type ServerOptions } from 'node:http';
import type { Duplex } from 'node:stream';
import { ERROR_STATUS, type ErrorCode, type ErrorEnvelope } from '@sortie/contracts';
import type { HttpTimeouts } from '../platform/config.ts';
import type { Logger } from '../platform/logger.ts';
import { REQUEST_ID_HEADER, requestIdFrom } from './request-id.ts';

/**
 * What Node's HTTP parser refuses before any route runs, by the parser's error code: the spec's code
 * and a message in plain words (llhttp's own reasons name its internals).
 */
const PARSER_ERRORS: Record<string, { code: ErrorCode; message: string }> = {
  HPE_HEADER_OVERFLOW: { code: 'headers_too_large', message: 'the request line and headers are too large' },
  ERR_HTTP_REQUEST_TIMEOUT: { code: 'request_timeout', message: 'the request did not arrive in time' },
  HPE_HEADERS_TIMEOUT: { code: 'request_timeout', message: 'the request headers did not arrive in time' },
  HPE_INVALID_METHOD: { code: 'invalid_request', message: 'malformed HTTP request: unknown method' },
  HPE_INVALID_URL: { code: 'invalid_request', message: 'malformed HTTP request: invalid request target' },
  HPE_INVALID_VERSION: { code: 'invalid_request', message: 'malformed HTTP request: invalid HTTP version' },
  HPE_INVALID_CONSTANT: { code: 'invalid_request', message: 'malformed HTTP request line' },
  HPE_INVALID_HEADER_TOKEN: { code: 'invalid_request', message: 'malformed HTTP request: invalid character in a header' },
  HPE_INVALID_CONTENT_LENGTH: { code: 'invalid_request', message: 'malformed HTTP request: invalid Content-Length' },
  HPE_UNEXPECTED_CONTENT_LENGTH: { code: 'invalid_request', message: 'malformed HTTP request: both Content-Length and Transfer-Encoding' },
  HPE_INVALID_TRANSFER_ENCODING: { code: 'invalid_request', message: 'malformed HTTP request: invalid Transfer-Encoding' },
  HPE_INVALID_CHUNK_SIZE: { code: 'invalid_request', message: 'malformed HTTP request: invalid chunk size' },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { code: 'invalid_request', message: 'malformed HTTP request: chunk extensions too long' },
};
const MALFORMED = { code: 'invalid_request', message: 'malformed HTTP request' } as const;

/**
 * The HTTP API server's clocks, as options of http.createServer. Node checks the headers and request
 * deadlines on a timer (every 30 s by default, so a 20 s limit could take 50 s to bite): it runs here
 * at a quarter of the headers limit, at most every 5 s.
 */
export function httpServerOptions(timeouts: HttpTimeouts): ServerOptions {
  return {
    headersTimeout: timeouts.headersMs,
    requestTimeout: timeouts.requestMs,
    keepAliveTimeout: timeouts.keepAliveMs,
    connectionsCheckingInterval: Math.min(5000, Math.max(250, Math.floor(timeouts.headersMs / 4))),
  };
}

/**
 * Answer what the server's HTTP parser refuses (and its timeouts) in the spec's envelope, with a
 * request id (generated: the headers were not read) in the body and in `X-Request-Id`, as every other
 * response. Node's own answer is a bare status line.
 */
export function answerParserErrors(server: Server, logger: Logger): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    const busy = (socket as Duplex & { _httpMessage?: { headersSent: boolean } | null })._httpMessage;
    // A reset or half-written answer cannot take another; the client has gone or is mid-response.
    if (error.code === 'ECONNRESET' || !socket.writable || busy?.headersSent) {
      socket.destroy();
      return;
    }
    const { code, message } = PARSER_ERRORS[error.code ?? ''] ?? MALFORMED;
    const requestId = requestIdFrom(undefined);
    logger.info({ requestId, parserError: error.code, status: ERROR_STATUS[code] }, 'request refused by the HTTP parser');
    socket.end(clientErrorResponse(code, message, requestId));
  });
}

/** The raw HTTP/1.1 response: the connection closes after it, its request stream being unusable. */
export function clientErrorResponse(code: ErrorCode, message: string, requestId: string): string {
  const envelope: ErrorEnvelope = { error: { code, message, details: [], request_id: requestId } };
  const body = JSON.stringify(envelope);
  const status = ERROR_STATUS[code];
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    `${REQUEST_ID_HEADER}: ${requestId}\r\n` +
    'Connection: close\r\n\r\n' +
    body
  );
}
