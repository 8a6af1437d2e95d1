import { AppendRequestSchema, type AppendRequest } from '@sortie/contracts';
import { Hono } from 'hono';
import { requireScope } from '../auth/require-scope.ts';
import type { AppContext } from '../context.ts';
import type { AppEnv } from '../http/app-env.ts';
import { readJson } from '../http/validation.ts';
import { appendRows } from './append.ts';

export function appendRoutes(ctx: AppContext) {
  return new Hono<AppEnv>().post('/datasets/append', requireScope(ctx, 'telemetry:write'), async (c) => {
    const body = await readJson(c, AppendRequestSchema);
    const result = await appendRows(ctx, c.get('principal').organizationId, body);
    ctx.metrics.ingested('http', 'wide', { written: result.valuesWritten, duplicates: 0, ignored: ignoredValues(body, result.ignoredKeys) }, 1);
    return c.json(result);
  });
}

/** Values addressed by an ignored key (a channel UUID), counted only when there are any. */
function ignoredValues(body: AppendRequest, ignoredKeys: readonly string[]): number {
  if (ignoredKeys.length === 0) return 0;
  let n = 0;
  for (const row of body.rows) for (const key of ignoredKeys) if (key in row.values) n++;
  return n;
}
