// The codes alone, without zod: a browser that only needs a code's status loads no schema library.

/**
 * Stable error codes. Clients branch on `code`; `message` is prose and may change.
 * The HTTP status each code travels with is fixed here so the server and clients agree.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  unauthorized: 401,
  insufficient_scope: 403,
  forbidden: 403,
  not_found: 404,
  // Additions to the spec's table, for what Node's HTTP parser refuses before any route runs: neither is
  // a malformed field (invalid_request) nor a large body (payload_too_large), and a client retries a
  // timeout but must shrink its headers.
  request_timeout: 408,
  conflict: 409,
  payload_too_large: 413,
  headers_too_large: 431,
  rate_limited: 429,
  internal_error: 500,
  // A dependency the request needs (the database) is unreachable for the moment, e.g. restarting. Send
  // the same request again after Retry-After; one cut off mid-way may have taken effect, as with any
  // lost answer, and the retry says so (a dispatch answers 409 already queued, a create with the same
  // clientToken returns the first command).
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
export const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];
