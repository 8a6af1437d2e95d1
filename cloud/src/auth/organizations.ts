import type { UserRole } from '../db/schema.ts';
import type { Executor } from '../db/executor.ts';

/** A new organization comes with its first owner, so somebody can always hold webhook scopes. */
export async function createOrganization(db: Executor, name: string): Promise<{ organizationId: string; ownerUserId: string }> {
  const organizationId = crypto.randomUUID();
  const ownerUserId = crypto.randomUUID();
  await db.insertInto('organizations').values({ id: organizationId, name }).execute();
  await db.insertInto('users').values({ id: ownerUserId, organization_id: organizationId, role: 'owner', name: '', email: '' }).execute();
  return { organizationId, ownerUserId };
}

export async function createUser(
  db: Executor,
  input: { organizationId: string; role: UserRole; name?: string; email?: string },
): Promise<{ userId: string }> {
  const userId = crypto.randomUUID();
  await db
    .insertInto('users')
    .values({ id: userId, organization_id: input.organizationId, role: input.role, name: input.name ?? '', email: input.email ?? '' })
    .execute();
  return { userId };
}

export async function findUser(db: Executor, organizationId: string, userId: string) {
  return db.selectFrom('users').selectAll().where('organization_id', '=', organizationId).where('id', '=', userId).executeTakeFirst();
}

export async function organizationExists(db: Executor, organizationId: string): Promise<boolean> {
  const row = await db.selectFrom('organizations').select('id').where('id', '=', organizationId).executeTakeFirst();
  return row !== undefined;
}
