import { createContextKey, type HandlerContext } from '@connectrpc/connect';
import type { CachedPrincipal } from '../../auth/key-cache.ts';

/** Set by the request gate before any handler runs. */
export const principalKey = createContextKey<CachedPrincipal | undefined>(undefined, { description: 'sortie principal' });
export const requestIdKey = createContextKey<string>('', { description: 'sortie request id' });

export function principalOf(context: HandlerContext): CachedPrincipal {
  const principal = context.values.get(principalKey);
  if (!principal) throw new Error('no principal: the request gate did not run');
  return principal;
}
