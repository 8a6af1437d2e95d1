import type { ArmingRecord } from '@sortie/contracts';
import type { ArmingRow } from '../db/schema.ts';
import type { Executor } from '../db/executor.ts';

export function readArming(db: Executor, datasetId: string): Promise<ArmingRow | undefined> {
  return db.selectFrom('armings').selectAll().where('dataset_id', '=', datasetId).executeTakeFirst();
}

/**
 * Arm the dataset for `ttlSeconds` from `now`. One row per dataset: re-arming replaces the previous
 * arming, including a disarm, rather than stacking.
 */
export function armDataset(
  db: Executor,
  input: { organizationId: string; datasetId: string; keyId: string; userId: string | null; reason: string; ttlSeconds: number; now: Date },
): Promise<ArmingRow> {
  const values = {
    armed_at: input.now,
    expires_at: new Date(input.now.getTime() + input.ttlSeconds * 1000),
    armed_by_key_id: input.keyId,
    armed_by_user_id: input.userId,
    reason: input.reason,
    disarmed_at: null,
    disarmed_by_key_id: null,
  };
  return db
    .insertInto('armings')
    .values({ dataset_id: input.datasetId, organization_id: input.organizationId, ...values })
    .onConflict((oc) => oc.column('dataset_id').doUpdateSet(values))
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Disarm the dataset if it is armed; an already disarmed arming keeps who disarmed it first, and when. */
export async function disarmDataset(db: Executor, input: { datasetId: string; keyId: string; now: Date }): Promise<void> {
  await db
    .updateTable('armings')
    .set({ disarmed_at: input.now, disarmed_by_key_id: input.keyId })
    .where('dataset_id', '=', input.datasetId)
    .where('disarmed_at', 'is', null)
    .execute();
}

/** Armed means: armed, not disarmed since, and not past its expiry at `now`. */
export function isArmed(row: ArmingRow | undefined, now: Date): boolean {
  return row !== undefined && row.disarmed_at === null && row.expires_at > now;
}

export function toArmingRecord(datasetId: string, row: ArmingRow | undefined, now: Date): ArmingRecord {
  if (!row) return { datasetId, armed: false, armedAt: null, expiresAt: null, armedBy: null, reason: '', disarmedAt: null };
  return {
    datasetId,
    armed: isArmed(row, now),
    armedAt: row.armed_at.toISOString(),
    expiresAt: row.expires_at.toISOString(),
    armedBy: { keyId: row.armed_by_key_id, userId: row.armed_by_user_id },
    reason: row.reason,
    disarmedAt: row.disarmed_at?.toISOString() ?? null,
  };
}
