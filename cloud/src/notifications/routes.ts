import type { Notification } from '@sortie/contracts';
import { Hono } from 'hono';
import { requireScope } from '../auth/require-scope.ts';
import type { AppContext } from '../platform/context.ts';
import type { AppEnv } from '../http/app-env.ts';
import { listNotifications } from './queries.ts';

const LIMIT = 200;

/**
 * GET /api/notifications (webhooks:read, which only owners can hold): the newest 200 notifications for
 * the key's user. A key made by an operator for the whole organization (no user) sees the organization's.
 */
export function notificationsRoutes(ctx: AppContext) {
  return new Hono<AppEnv>().get('/notifications', requireScope(ctx, 'webhooks:read'), async (c) => {
    const { organizationId, userId } = c.get('principal');
    const rows = await listNotifications(ctx.db, { organizationId, userId, limit: LIMIT });
    const notifications: Notification[] = rows.map((row) => ({
      id: row.id,
      kind: row.kind,
      subject: row.subject,
      message: row.message,
      data: row.data,
      createdAt: row.created_at.toISOString(),
    }));
    return c.json(notifications);
  });
}
