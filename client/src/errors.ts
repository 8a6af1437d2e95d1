import type { ErrorCode, ErrorDetail } from '@sortie/contracts';

/**
 * Codes a client can meet besides the service's own (`ErrorCode`): `bad_response` when a 2xx answer
 * does not match the contract (a server of another version, or not Sortie: a proxy's page), and
 * `http_error` when a failure answer carries no error envelope.
 */
export type ClientErrorCode = ErrorCode | 'bad_response' | 'http_error';

/**
 * A call that failed with an answer, or was refused before it was sent. Callers branch on `code`
 * (stable) and read `details[].field` for what to fix; `message` is prose.
 *
 * `status` is the HTTP status, 0 when the request was never sent (the input failed the contract's
 * schema here, with the same `invalid_request` code and field paths the service would answer), and
 * the status the service's code travels with for telemetry RPCs (`ERROR_STATUS`). `requestId` is the
 * `X-Request-Id` the service answered with: quote it when reporting a failure.
 */
export class SortieApiError extends Error {
  override readonly name = 'SortieApiError';
  readonly status: number;
  readonly code: ClientErrorCode;
  readonly details: ErrorDetail[];
  readonly requestId: string | undefined;

  constructor(init: { status: number; code: ClientErrorCode; message: string; details?: ErrorDetail[]; requestId?: string; cause?: unknown }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.details = init.details ?? [];
    this.requestId = init.requestId;
  }
}
