import type { CommandRecord } from '@sortie/contracts';
import type { CommandRow } from '../db/schema.ts';

const iso = (d: Date | null) => d?.toISOString() ?? null;

export function toCommandRecord(row: CommandRow): CommandRecord {
  return {
    id: row.id,
    experimentId: row.experiment_id,
    datasetId: row.dataset_id,
    commandText: row.command_text,
    description: row.description,
    args: row.args,
    templateKey: row.template_key,
    category: row.category,
    relTime: row.rel_time,
    issuedAt: row.issued_at.toISOString(),
    issuedByName: row.issued_by_name,
    issuedByEmail: row.issued_by_email,
    status: row.status,
    statusDetail: row.status_detail,
    queuedAt: iso(row.queued_at),
    deliveredAt: iso(row.delivered_at),
    ackedAt: iso(row.acked_at),
    ackDeadlineAt: iso(row.ack_deadline_at),
    vehicleTime: iso(row.vehicle_time),
    ackPayload: row.ack_payload,
    deliveryAttempts: row.delivery_attempts,
    clientToken: row.client_token,
    retractedAt: iso(row.retracted_at),
    retractedReason: row.retracted_reason,
  };
}
