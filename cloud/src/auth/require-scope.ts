import type { Scope } from '@sortie/contracts';
import { createMiddleware } from 'hono/factory';
import type { AppContext } from '../platform/context.ts';
import { ApiError } from '../http/api-error.ts';
import type { AppEnv } from '../http/app-env.ts';
import { checkApiKey } from './api-keys.ts';

const REASONS = {
  malformed: 'missing or malformed API key (send it as x-api-key)',
  unknown: 'unknown API key',
  revoked: 'API key has been revoked',
  expired: 'API key has expired',
} as const;

/** Authenticate the `x-api-key` header and require one scope. */
export function requireScope(ctx: AppContext, scope: Scope) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const check = await checkApiKey(ctx.db, c.req.header('x-api-key'), ctx.clock.now());
    if (!check.ok) throw new ApiError('unauthorized', REASONS[check.reason]);
    if (!check.scopes.includes(scope)) {
      throw new ApiError('insufficient_scope', `this API key lacks the scope ${scope}`);
    }
    c.set('principal', {
      organizationId: check.organizationId,
      keyId: check.keyId,
      userId: check.userId,
      scopes: new Set(check.scopes),
    });
    await next();
  });
}
