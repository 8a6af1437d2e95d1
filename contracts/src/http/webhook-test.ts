import { z } from 'zod';
import { TimestampOut, Uuid } from './common.ts';

/** POST /api/webhooks/test (webhooks:write): send a signed `ping` event to one endpoint now. */
export const WebhookTestRequestSchema = z.object({ endpointId: Uuid });
export type WebhookTestRequest = z.infer<typeof WebhookTestRequestSchema>;

/**
 * The body of a `ping` delivery: it proves the URL, the TLS and the secret work end to end. It is signed
 * and sent like every delivery (same headers, same signature) but names no command and carries no ack
 * token, so a receiver verifies it as any delivery, answers 2xx, and acts on nothing.
 */
export const PingBodySchema = z.object({
  eventType: z.literal('ping'),
  sentAt: TimestampOut,
  endpoint: z.object({ id: Uuid, organizationId: Uuid }),
});
export type PingBody = z.infer<typeof PingBodySchema>;

/**
 * The `commandId` of a ping's delivery attempt: a ping belongs to no command, and the attempt record's
 * `commandId` is a UUID, so it reads as the nil UUID.
 */
export const PING_COMMAND_ID = '00000000-0000-0000-0000-000000000000';
