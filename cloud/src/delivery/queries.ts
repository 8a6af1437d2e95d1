import type { Executor } from '../db/executor.ts';
import type { DeliveryAttemptRow } from '../db/schema.ts';

/** Every attempt for a command, newest first; attempts of deleted endpoints stay (their URL is copied in). */
export function listDeliveryAttempts(db: Executor, organizationId: string, commandId: string): Promise<DeliveryAttemptRow[]> {
  return db
    .selectFrom('delivery_attempts')
    .selectAll()
    .where('command_id', '=', commandId)
    .where('organization_id', '=', organizationId)
    .orderBy('attempted_at', 'desc')
    .orderBy('attempt', 'desc')
    .orderBy('id', 'desc')
    .execute();
}
