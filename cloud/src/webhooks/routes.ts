import {
  CreateWebhookRequestSchema,
  DeleteWebhookRequestSchema,
  RotateWebhookRequestSchema,
  UpdateWebhookRequestSchema,
  type DeleteWebhookResponse,
  type WebhookEndpointWithSecret,
} from '@sortie/contracts';
import { Hono } from 'hono';
import { requireScope } from '../auth/require-scope.ts';
import type { AppContext } from '../platform/context.ts';
import { invalidRequest, notFound } from '../platform/errors.ts';
import type { AppEnv } from '../http/app-env.ts';
import { readJson } from '../http/validation.ts';
import { createEndpoint, deleteEndpoint, lastAttempts, listEndpointViews, rotateEndpointSecret, toWebhookEndpoint, updateEndpoint } from './endpoints.ts';
import { checkWebhookUrl } from '../net/url-guard.ts';

/** /api/webhooks/{create,list,update,rotate,delete}. The deliveries listing lives with the delivery engine. */
export function webhooksRoutes(ctx: AppContext) {
  return new Hono<AppEnv>()
    .post('/webhooks/create', requireScope(ctx, 'webhooks:write'), async (c) => {
      const body = await readJson(c, CreateWebhookRequestSchema);
      const check = await checkWebhookUrl(body.url, ctx.webhookGuard);
      // The guard's message names the host and every offending address; it is the message and the detail.
      if (!check.ok) throw invalidRequest(check.message, [{ field: 'url', message: check.message }]);
      const now = ctx.clock.now();
      const { row, secret } = await createEndpoint(ctx.db, {
        organizationId: c.get('principal').organizationId,
        label: body.label,
        url: check.url.href,
        limitEvents: body.limitEvents,
        secretKey: ctx.secretKey,
        now,
      });
      const response: WebhookEndpointWithSecret = { ...toWebhookEndpoint(row, now), secret };
      return c.json(response, 201);
    })
    .get('/webhooks/list', requireScope(ctx, 'webhooks:read'), async (c) => {
      const views = await listEndpointViews(ctx.db, c.get('principal').organizationId);
      const now = ctx.clock.now();
      return c.json(views.map(({ row, last }) => toWebhookEndpoint(row, now, last)));
    })
    .post('/webhooks/update', requireScope(ctx, 'webhooks:write'), async (c) => {
      const body = await readJson(c, UpdateWebhookRequestSchema);
      const now = ctx.clock.now();
      const row = await updateEndpoint(ctx.db, { organizationId: c.get('principal').organizationId, ...body, now });
      if (!row) throw notFound(`no webhook endpoint ${body.id}`);
      return c.json(toWebhookEndpoint(row, now, (await lastAttempts(ctx.db, [row.id])).get(row.id)));
    })
    .post('/webhooks/rotate', requireScope(ctx, 'webhooks:write'), async (c) => {
      const body = await readJson(c, RotateWebhookRequestSchema);
      const now = ctx.clock.now();
      const rotated = await rotateEndpointSecret(ctx.db, {
        organizationId: c.get('principal').organizationId,
        id: body.id,
        overlapSeconds: body.overlapSeconds,
        secretKey: ctx.secretKey,
        now,
      });
      if (!rotated) throw notFound(`no webhook endpoint ${body.id}`);
      const last = (await lastAttempts(ctx.db, [rotated.row.id])).get(rotated.row.id);
      const response: WebhookEndpointWithSecret = { ...toWebhookEndpoint(rotated.row, now, last), secret: rotated.secret };
      return c.json(response);
    })
    .post('/webhooks/delete', requireScope(ctx, 'webhooks:write'), async (c) => {
      const body = await readJson(c, DeleteWebhookRequestSchema);
      const deleted = await deleteEndpoint(ctx.db, {
        organizationId: c.get('principal').organizationId,
        id: body.id,
        now: ctx.clock.now(),
      });
      if (!deleted) throw notFound(`no webhook endpoint ${body.id}`);
      const response: DeleteWebhookResponse = { id: body.id, deleted: true };
      return c.json(response);
    });
}
