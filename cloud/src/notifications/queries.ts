import type { NotificationRow } from '../db/schema.ts';
import type { Executor } from '../db/executor.ts';

/**
 * The organization's newest notifications, at most `limit`; only the user's when `userId` is given
 * (a key made for the whole organization has no user, and sees them all).
 */
export function listNotifications(
  db: Executor,
  input: { organizationId: string; userId: string | null; limit: number },
): Promise<NotificationRow[]> {
  let query = db.selectFrom('notifications').selectAll().where('organization_id', '=', input.organizationId);
  if (input.userId) query = query.where('user_id', '=', input.userId);
  return query.orderBy('created_at', 'desc').orderBy('id').limit(input.limit).execute();
}
