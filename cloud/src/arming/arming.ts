import type { ArmingRecord } from '@sortie/contracts';
import type { ArmingRow } from '../db/schema.ts';
import type { Executor } from '../db/executor.ts';


export function readArming(db: Executor, datasetId: string): Promise<ArmingRow | undefined> {
  return db.selectFrom('armings').selectAll().where('dataset_id', '=', datasetId).executeTakeFirst();
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
