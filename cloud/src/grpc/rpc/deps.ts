import type { KeyCache } from '../../auth/key-cache.ts';
import type { AppContext } from '../../platform/context.ts';

/**
 * What the gRPC server hands its routes. Apart from server.ts so that the server imports the routes
 * and the routes import only this, not the server.
 */
export interface GrpcDeps {
  ctx: AppContext;
  keys: KeyCache;
  /** Aborted when the server starts closing: open streams write what they hold and end UNAVAILABLE. */
  draining: AbortSignal;
}
