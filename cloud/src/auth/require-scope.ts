import { API_KEY_HEADER, type Scope } from '@sortie/contracts';
import { createMiddleware } from 'hono/factory';
import type { AppContext } from '../platform/context.ts';
import type { AppEnv } from '../http/app-env.ts';
import { httpKeyCheck } from './http-key-cache.ts';
import { admit, principalFrom, type Principal } from './principal.ts';

/**
 * The hono variables this middleware adds. Hono carries a middleware's env into the handlers after
 * it, so `c.get('principal')` type-checks exactly behind `requireScope`, and http/ (below auth)
 * need not know the principal type.
 */
export type AuthEnv = { Variables: { principal: Principal } };

/**
 * Authenticate the `x-api-key` header and require one scope. A revoked or changed key is refused on the
 * very next request: the cache behind httpKeyCheck is emptied of a key at the commit that changes it.
 */
export function requireScope(ctx: AppContext, scope: Scope) {
  return createMiddleware<AppEnv & AuthEnv>(async (c, next) => {
    const now = ctx.clock.now();
    const check = await httpKeyCheck(ctx, c.req.header(API_KEY_HEADER), now);
    admit(check, scope, now, 'header');
    c.set('principal', principalFrom(check));
    await next();
  });
}
