import { RegisterStreamRequestSchema } from '@sortie/contracts';
import { Hono } from 'hono';
import { requireScope } from '../auth/require-scope.ts';
import type { AppContext } from '../platform/context.ts';
import type { AppEnv } from '../http/app-env.ts';
import { readJson } from '../http/validation.ts';
import { registerStream } from './register-stream.ts';

export function datasetsRoutes(ctx: AppContext) {
  return new Hono<AppEnv>().post('/streams/register', requireScope(ctx, 'datasets:write'), async (c) => {
    const body = await readJson(c, RegisterStreamRequestSchema);
    const result = await registerStream(ctx, c.get('principal').organizationId, body);
    return c.json(result, result.created ? 201 : 200);
  });
}
