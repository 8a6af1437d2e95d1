import { z } from 'zod';

import { ERROR_CODES, type ErrorCode } from './error-codes.ts';

export const ErrorDetailSchema = z.object({
  /** Path into the sent body or query, zero-based array indexes: `rows[12].timestamp`. */
  field: z.string(),
  message: z.string(),
});
export type ErrorDetail = z.infer<typeof ErrorDetailSchema>;

export const ErrorEnvelopeSchema = z.object({
  error: z.object({
    code: z.enum(ERROR_CODES as [ErrorCode, ...ErrorCode[]]),
    message: z.string(),
    details: z.array(ErrorDetailSchema),
    request_id: z.string(),
  }),
});
export type ErrorEnvelope = z.infer<typeof ErrorEnvelopeSchema>;

/** Render a zod issue path as the spec's field path: `rows[12].timestamp`. */
export function formatIssuePath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out;
}

/** Turn a zod error into the envelope's `details`, one entry per issue. */
export function zodIssuesToDetails(error: z.ZodError, prefix: ReadonlyArray<PropertyKey> = []): ErrorDetail[] {
  return error.issues.map((issue) => ({
    field: formatIssuePath([...prefix, ...issue.path]),
    message: issue.message,
  }));
}
