import { WebhookTestRequestSchema } from '@sortie/contracts';
import { Hono } from 'hono';
import { requireScope } from '../auth/require-scope.ts';
import type { AppContext } from '../platform/context.ts';
import type { AppEnv } from '../http/app-env.ts';
import { readJson } from '../http/validation.ts';
import type { DeliveryDeps } from './deliver.ts';
import { sendTestEvent } from './test-event.ts';

/**
 * POST /api/webhooks/test (webhooks:write): a signed ping through the delivery engine's sender, answered
 * with its attempt. `send` is the engine's (service.ts hands it over), so the ping uses the same pinned
 * connection pools, extra CA and test doubles as command deliveries.
 */
export function webhookTestRoutes(ctx: AppContext, send: DeliveryDeps['send'] | undefined) {
  return new Hono<AppEnv>().post('/webhooks/test', requireScope(ctx, 'webhooks:write'), async (c) => {
    const body = await readJson(c, WebhookTestRequestSchema);
    if (!send) throw new Error('the HTTP app was built without the delivery engine; webhook tests cannot be sent');
    return c.json(await sendTestEvent(ctx, send, { organizationId: c.get('principal').organizationId, endpointId: body.endpointId }));
  });
}
