import { zodIssuesToDetails } from '@sortie/contracts';
import type { Context } from 'hono';
import type { z } from 'zod';
import { invalidRequest } from '../platform/errors.ts';

/** Parse and validate a JSON body; failures are 400 invalid_request with details naming each field. */
export async function readJson<S extends z.ZodType>(c: Context, schema: S): Promise<z.output<S>> {
  return validateJson(schema, await readJsonValue(c));
}

/** The body parsed as JSON, not yet validated (for a route that checks its hot shape in place first); not JSON is a 400. */
export async function readJsonValue(c: Context): Promise<unknown> {
  try {
    return await c.req.json();
  } catch {
    throw invalidRequest('request body is not valid JSON', [{ field: '', message: 'expected a JSON object' }]);
  }
}

/** Validate a parsed JSON body; failures are 400 invalid_request with details naming each field. */
export function validateJson<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const details = zodIssuesToDetails(parsed.error);
    throw invalidRequest(`invalid request body: ${describe(details)}`, details);
  }
  return parsed.data;
}

/** Validate query parameters the same way. */
export function readQuery<S extends z.ZodType>(c: Context, schema: S): z.output<S> {
  const parsed = schema.safeParse(c.req.query());
  if (!parsed.success) {
    const details = zodIssuesToDetails(parsed.error);
    throw invalidRequest(`invalid query parameters: ${describe(details)}`, details);
  }
  return parsed.data;
}

function describe(details: { field: string; message: string }[]): string {
  const first = details.slice(0, 3).map((d) => (d.field ? `${d.field} ${d.message}` : d.message));
  return first.join('; ') + (details.length > 3 ? `; and ${details.length - 3} more` : '');
}
