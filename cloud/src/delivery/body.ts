import { LIMIT_CROSSING_EVENT, type CommandDispatchedBody, type LimitCrossingBody } from '@sortie/contracts';
import type { CommandRow } from '../db/schema.ts';

export const COMMAND_DISPATCHED = 'command.dispatched';

/** The spec's delivery body. A fresh ack token per attempt: only its hash is kept, so it cannot be re-sent. */
export function commandDispatchedBody(input: {
  command: CommandRow;
  ackUrl: string;
  ackToken: string;
  armingExpiresAt: Date;
  sentAt: Date;
}): CommandDispatchedBody {
  const { command } = input;
  return {
    eventType: COMMAND_DISPATCHED,
    sentAt: input.sentAt.toISOString(),
    command: {
      id: command.id,
      datasetId: command.dataset_id,
      experimentId: command.experiment_id,
      organizationId: command.organization_id,
      commandText: command.command_text,
      description: command.description,
      templateKey: command.template_key,
      category: command.category,
      args: command.args,
      destructive: command.destructive,
      relTime: command.rel_time,
      issuedAt: command.issued_at.toISOString(),
      issuedBy: { name: command.issued_by_name, email: command.issued_by_email, apiKeyId: command.issued_by_key_id },
      clientToken: command.client_token ?? '',
    },
    ack: { url: input.ackUrl, token: input.ackToken, deadline: command.ack_deadline_at!.toISOString() },
    arming: { expiresAt: input.armingExpiresAt.toISOString() },
  };
}

/**
 * A `limit.crossing` body: the LIMIT event as it was when the notification was made (the job's payload,
 * written by limits/ with the event's start or end), and when this attempt was sent.
 */
export function limitCrossingBody(payload: Record<string, unknown>, sentAt: Date): LimitCrossingBody {
  return { eventType: LIMIT_CROSSING_EVENT, sentAt: sentAt.toISOString(), event: payload.event as LimitCrossingBody['event'] };
}

/** X-Sortie-Delivery: the job id is stable across the attempt series; `.N` names the attempt. */
export function deliveryId(jobId: string, attempt: number): string {
  return `${jobId}.${attempt}`;
}
