import { AppendRequestSchema } from '@sortie/contracts';
import { Hono } from 'hono';
import { requireScope } from '../auth/require-scope.ts';
import type { AppContext } from '../platform/context.ts';
import type { AppEnv } from '../http/app-env.ts';
import { readJsonValue, validateJson } from '../http/validation.ts';
import { appendBodyInPlace } from './append-body.ts';
import { appendRows } from './append.ts';

export function appendRoutes(ctx: AppContext) {
  return new Hono<AppEnv>().post('/datasets/append', requireScope(ctx, 'telemetry:write'), async (c) => {
    const raw = await readJsonValue(c);
    // The common, valid body is read in place; anything else gets the schema's copy and its error details.
    const body = appendBodyInPlace(raw) ?? validateJson(AppendRequestSchema, raw);
    return c.json(await appendRows(ctx, c.get('principal').organizationId, body));
  });
}
