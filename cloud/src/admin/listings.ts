import type { Executor } from '../db/executor.ts';

/**
 * What an operator lists from the admin CLI: organizations, their users, their keys. Without these, an
 * organization id printed once by create-org and then lost could not be found again. Keys are listed
 * by id and prefix only (the key itself is never stored), with the state an operator acts on.
 */
export interface OrganizationListing {
  organizationId: string;
  name: string;
  createdAt: string;
  users: number;
  activeKeys: number;
}

export interface UserListing {
  userId: string;
  organizationId: string;
  role: 'owner' | 'member';
  name: string;
  email: string;
  createdAt: string;
}

export interface KeyListing {
  keyId: string;
  organizationId: string;
  userId: string | null;
  prefix: string;
  scopes: string[];
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  /** `active`, `expired` or `revoked`, as of the listing. */
  state: 'active' | 'expired' | 'revoked';
}

const iso = (value: Date | string) => new Date(value).toISOString();

export async function listOrganizations(db: Executor, now: Date): Promise<OrganizationListing[]> {
  const rows = await db
    .selectFrom('organizations as o')
    .select((eb) => [
      'o.id',
      'o.name',
      'o.created_at',
      eb.selectFrom('users as u').whereRef('u.organization_id', '=', 'o.id').select(eb.fn.countAll<string>().as('n')).as('users'),
      eb
        .selectFrom('api_keys as k')
        .whereRef('k.organization_id', '=', 'o.id')
        .where('k.revoked_at', 'is', null)
        .where((w) => w.or([w('k.expires_at', 'is', null), w('k.expires_at', '>', now)]))
        .select(eb.fn.countAll<string>().as('n'))
        .as('active_keys'),
    ])
    .orderBy('o.created_at')
    .orderBy('o.id')
    .execute();
  return rows.map((r) => ({ organizationId: r.id, name: r.name, createdAt: iso(r.created_at), users: Number(r.users ?? 0), activeKeys: Number(r.active_keys ?? 0) }));
}

export async function listUsers(db: Executor, organizationId?: string): Promise<UserListing[]> {
  let query = db.selectFrom('users').select(['id', 'organization_id', 'role', 'name', 'email', 'created_at']);
  if (organizationId !== undefined) query = query.where('organization_id', '=', organizationId);
  const rows = await query.orderBy('organization_id').orderBy('created_at').orderBy('id').execute();
  return rows.map((r) => ({ userId: r.id, organizationId: r.organization_id, role: r.role, name: r.name, email: r.email, createdAt: iso(r.created_at) }));
}

export async function listKeys(db: Executor, now: Date, organizationId?: string): Promise<KeyListing[]> {
  let query = db.selectFrom('api_keys').select(['id', 'organization_id', 'user_id', 'key_prefix', 'scopes', 'created_at', 'expires_at', 'revoked_at']);
  if (organizationId !== undefined) query = query.where('organization_id', '=', organizationId);
  const rows = await query.orderBy('organization_id').orderBy('created_at').orderBy('id').execute();
  return rows.map((r) => ({
    keyId: r.id,
    organizationId: r.organization_id,
    userId: r.user_id,
    prefix: r.key_prefix,
    scopes: r.scopes,
    createdAt: iso(r.created_at),
    expiresAt: r.expires_at === null ? null : iso(r.expires_at),
    revokedAt: r.revoked_at === null ? null : iso(r.revoked_at),
    state: r.revoked_at !== null ? 'revoked' : r.expires_at !== null && new Date(r.expires_at) <= now ? 'expired' : 'active',
  }));
}
