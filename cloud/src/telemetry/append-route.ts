import { AppendRequestSchema } from '@sortie/contracts';
import { Hono } from 'hono';
import { requireScope } from '../auth/require-scope.ts';
import type { AppContext } from '../platform/context.ts';
import type { AppEnv } from '../http/app-env.ts';
import { readJson } from '../http/validation.ts';
import { appendRows } from './append.ts';

export function appendRoutes(ctx: AppContext) {
  return new Hono<AppEnv>().post('/datasets/append', requireScope(ctx, 'telemetry:write'), async (c) => {
    const body = await readJson(c, AppendRequestSchema);
    return c.json(await appendRows(ctx, c.get('principal').organizationId, body));
  });
}
