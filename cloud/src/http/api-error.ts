import { ERROR_STATUS, type ErrorCode, type ErrorDetail } from '@sortie/contracts';

/** A failure the client should see in the spec's envelope. Anything else thrown becomes 500 internal_error. */
export class ApiError extends Error {
  override name = 'ApiError';
  readonly code: ErrorCode;
  readonly details: ErrorDetail[];
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, options: { details?: ErrorDetail[]; headers?: Record<string, string> } = {}) {
    super(message);
    this.code = code;
    this.details = options.details ?? [];
    this.headers = options.headers ?? {};
  }

  get status(): (typeof ERROR_STATUS)[ErrorCode] {
    return ERROR_STATUS[this.code];
  }
}

export const invalidRequest = (message: string, details: ErrorDetail[] = []) =>
  new ApiError('invalid_request', message, { details });
export const notFound = (message: string) => new ApiError('not_found', message);
export const conflict = (message: string) => new ApiError('conflict', message);
export const forbidden = (message: string) => new ApiError('forbidden', message);
