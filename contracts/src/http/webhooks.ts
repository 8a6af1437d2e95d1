import { z } from 'zod';
import { TimestampOut, Uuid, text, jsonObject } from './common.ts';

/**
 * Bounds of `overlapSeconds` on rotate. The spec leaves them open; 0 is its "immediate cutover", and
 * the ceiling is 7 days: long enough for a receiver fleet to roll out a new secret, short enough that
 * a rotation made because a secret leaked does not leave the old one valid indefinitely.
 */
export const WEBHOOK_OVERLAP_SECONDS = { min: 0, max: 604_800 } as const;

export const WEBHOOK_LABEL_MAX = 200;
export const WEBHOOK_URL_MAX = 2048;

/** The webhook endpoint record of the spec. `secret` is added only by create and rotate (see below). */
export const WebhookEndpointSchema = z.object({
  id: Uuid,
  label: text(),
  /** Normalised by the WHATWG URL parser (`URL.href`), the form the URL rules were checked on. */
  url: text(),
  disabledAt: TimestampOut.nullable(),
  /** Set when the endpoint was auto-disabled after consecutive failed deliveries. */
  disabledReason: text().nullable(),
  /** Non-null exactly while a previous secret is still accepted (deliveries then carry two signatures). */
  rotatingUntil: TimestampOut.nullable(),
  createdAt: TimestampOut,
  updatedAt: TimestampOut,
  /**
   * Whether the endpoint also receives limit events (`limit.crossing`, a LIMIT event's start and end; an
   * addition to the spec). Off unless set: a receiver written for commands receives only commands.
   */
  limitEvents: z.boolean(),
  /**
   * Failed delivery attempts in a row, up to now (an addition): a 2xx resets it; at 20 the endpoint is
   * disabled and its owners told, `disabledReason` saying so.
   */
  consecutiveFailures: z.number().int().nonnegative(),
  /**
   * The endpoint's latest delivery attempt (an addition), null before its first: when, the HTTP status
   * (0 when no answer came, `error` then says why) and what was delivered. A `webhooks/test` ping is not
   * stored, so it is not this.
   */
  lastAttempt: z
    .object({
      at: TimestampOut,
      statusCode: z.number().int(),
      error: text().nullable(),
      eventType: text(),
    })
    .nullable(),
});
export type WebhookEndpoint = z.infer<typeof WebhookEndpointSchema>;

/** A record together with a secret being shown for the first and only time. */
export const WebhookEndpointWithSecretSchema = WebhookEndpointSchema.extend({
  secret: text().startsWith('whsec_'),
});
export type WebhookEndpointWithSecret = z.infer<typeof WebhookEndpointWithSecretSchema>;

/** POST /api/webhooks/create (webhooks:write). The URL is also checked against the URL rules, with DNS. */
export const CreateWebhookRequestSchema = z.object({
  label: text().trim().min(1).max(WEBHOOK_LABEL_MAX),
  url: text().min(1).max(WEBHOOK_URL_MAX),
  /** Also deliver limit events (`limit.crossing`) to this endpoint; commands are delivered either way. */
  limitEvents: z.boolean().default(false),
});
export type CreateWebhookRequest = z.infer<typeof CreateWebhookRequestSchema>;

/**
 * POST /api/webhooks/update (webhooks:write; an addition): the fields given replace the endpoint's.
 * The URL and the secret are not edited here (register again; rotate), so the URL rules and the secret's
 * one showing stay where they are.
 */
export const UpdateWebhookRequestSchema = z.strictObject(
  {
    id: Uuid,
    label: text().trim().min(1).max(WEBHOOK_LABEL_MAX).optional(),
    limitEvents: z.boolean().optional(),
  },
  { error: (issue) => (issue.code === 'unrecognized_keys' ? `cannot be edited: ${issue.keys.join(', ')}` : undefined) },
);
export type UpdateWebhookRequest = z.infer<typeof UpdateWebhookRequestSchema>;

/** Response of create: the record and its signing secret (returned only here for this secret). */
export const CreateWebhookResponseSchema = WebhookEndpointWithSecretSchema;

/** GET /api/webhooks/list (webhooks:read): every endpoint not deleted, disabled ones included; never secrets. */
export const ListWebhooksResponseSchema = z.array(WebhookEndpointSchema);

/** POST /api/webhooks/rotate (webhooks:write). */
export const RotateWebhookRequestSchema = z.object({
  id: Uuid,
  /**
   * Seconds the current secret stays valid beside the new one: an integer from 0 to 604800 (7 days).
   * 0 is an immediate cutover. Rotating again while a window is open drops the oldest secret, so at
   * most two are ever valid.
   */
  overlapSeconds: z
    .number({ error: 'must be an integer number of seconds' })
    .int('must be an integer number of seconds')
    .min(WEBHOOK_OVERLAP_SECONDS.min, `must be from ${WEBHOOK_OVERLAP_SECONDS.min} to ${WEBHOOK_OVERLAP_SECONDS.max}`)
    .max(WEBHOOK_OVERLAP_SECONDS.max, `must be from ${WEBHOOK_OVERLAP_SECONDS.min} to ${WEBHOOK_OVERLAP_SECONDS.max} (7 days)`),
});
export type RotateWebhookRequest = z.infer<typeof RotateWebhookRequestSchema>;

/**
 * Response of rotate (not shown by the spec): the updated record plus the NEW secret. Rotation
 * generates the secret server-side, so this response is the only way the caller can learn it; like
 * the create response it is shown once and never again. The previous secret is not echoed back.
 */
export const RotateWebhookResponseSchema = WebhookEndpointWithSecretSchema;

/** POST /api/webhooks/delete (webhooks:write). */
export const DeleteWebhookRequestSchema = z.object({ id: Uuid });
export type DeleteWebhookRequest = z.infer<typeof DeleteWebhookRequestSchema>;

/** Response of delete (not shown by the spec). A second delete of the same id is 404. */
export const DeleteWebhookResponseSchema = z.object({ id: Uuid, deleted: z.literal(true) });
export type DeleteWebhookResponse = z.infer<typeof DeleteWebhookResponseSchema>;

/** GET /api/webhooks/deliveries (webhooks:read). */
export const ListDeliveriesQuerySchema = z.object({ commandId: Uuid });
export type ListDeliveriesQuery = z.infer<typeof ListDeliveriesQuerySchema>;

/**
 * One row per attempt (spec: Delivery attempt row). `statusCode` is 0 when no HTTP answer came (refused
 * by the URL rules, connection failure, time-out); `error` then says why. `response` holds the first
 * 2048 bytes of the receiver's body. `deliveryId` (an addition) is the X-Sortie-Delivery header sent.
 */
export const DeliveryAttemptSchema = z.object({
  id: text(),
  commandId: Uuid,
  endpointId: Uuid,
  endpointUrl: text(),
  eventType: text(),
  attempt: z.number().int(),
  statusCode: z.number().int(),
  response: text(),
  error: text().nullable(),
  durationMs: z.number().int(),
  attemptedAt: TimestampOut,
  deliveryId: text(),
});
export type DeliveryAttempt = z.infer<typeof DeliveryAttemptSchema>;
export const ListDeliveriesResponseSchema = z.array(DeliveryAttemptSchema);

/** The body of a `command.dispatched` delivery (spec: Webhook delivery body). */
export const CommandDispatchedBodySchema = z.object({
  eventType: z.literal('command.dispatched'),
  sentAt: TimestampOut,
  command: z.object({
    id: Uuid,
    datasetId: Uuid,
    experimentId: Uuid,
    organizationId: Uuid,
    commandText: text(),
    description: text(),
    templateKey: text(),
    category: text(),
    args: jsonObject(),
    /** From the command template when the command was logged; false without a template. */
    destructive: z.boolean(),
    relTime: z.number(),
    issuedAt: TimestampOut,
    /** Empty name and email for a command logged through an API key; `apiKeyId` (an addition) names the key. */
    issuedBy: z.object({ name: text(), email: text(), apiKeyId: text().nullable() }),
    /** The create request's clientToken; empty when none was given. */
    clientToken: text(),
  }),
  ack: z.object({
    url: text(),
    token: text().startsWith('cak_'),
    deadline: TimestampOut,
  }),
  arming: z.object({ expiresAt: TimestampOut }),
});
export type CommandDispatchedBody = z.infer<typeof CommandDispatchedBodySchema>;

/** GET /api/notifications: messages for the key's user (owners get auto-disable notices). */
export const NotificationSchema = z.object({
  id: Uuid,
  kind: text(),
  subject: text(),
  message: text(),
  data: jsonObject(),
  createdAt: TimestampOut,
});
export type Notification = z.infer<typeof NotificationSchema>;
export const ListNotificationsResponseSchema = z.array(NotificationSchema);
