import { expect } from 'vitest';
import type { TestResponse } from './test-service.ts';

/** Assert a failure in the spec's envelope, with `error.request_id` equal to the X-Request-Id header. */
export function expectEnvelope(response: TestResponse, status: number, code: string): void {
  expect(response.status).toBe(status);
  expect(response.body.error.code).toBe(code);
  expect(typeof response.body.error.message).toBe('string');
  expect(Array.isArray(response.body.error.details)).toBe(true);
  expect(response.body.error.request_id).toBe(response.headers.get('x-request-id'));
}

/** The `details[].field` paths of an error response. */
export function detailFields(response: TestResponse): string[] {
  return response.body.error.details.map((d: { field: string }) => d.field);
}
