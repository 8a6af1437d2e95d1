import type { Executor } from '../db/executor.ts';

/** The organization's name for the console's header; scoped by the caller's organization like every statement. */
export async function organizationName(db: Executor, organizationId: string): Promise<string> {
  const row = await db.selectFrom('organizations').select('name').where('id', '=', organizationId).executeTakeFirst();
  return row?.name ?? '';
}
