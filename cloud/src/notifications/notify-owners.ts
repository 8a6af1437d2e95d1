import type { Executor } from '../db/executor.ts';

export interface NewNotification {
  kind: string;
  subject: string;
  message: string;
  data: Record<string, unknown>;
}

export interface Recipient {
  notificationId: string;
  userId: string;
  email: string;
}

/**
 * One notification row per owner of the organization, written in the caller's transaction so it exists
 * exactly when the change it reports does. Returns who got one, for email after commit.
 */
export async function notifyOwners(db: Executor, organizationId: string, note: NewNotification, now: Date): Promise<Recipient[]> {
  const owners = await db
    .selectFrom('users')
    .select(['id', 'email'])
    .where('organization_id', '=', organizationId)
    .where('role', '=', 'owner')
    .execute();
  if (owners.length === 0) return [];
  const rows = owners.map((owner) => ({
    id: crypto.randomUUID(),
    organization_id: organizationId,
    user_id: owner.id,
    kind: note.kind,
    subject: note.subject,
    message: note.message,
    data: JSON.stringify(note.data),
    created_at: now,
  }));
  await db.insertInto('notifications').values(rows).execute();
  return rows.map((row, i) => ({ notificationId: row.id, userId: row.user_id, email: owners[i]!.email }));
}

/** Record that a notification's email went out. */
export async function markEmailed(db: Executor, notificationId: string, at: Date): Promise<void> {
  await db.updateTable('notifications').set({ emailed_at: at }).where('id', '=', notificationId).execute();
}
