import { z } from 'zod';
import { Timestamp, TimestampOut, Uuid, text, jsonObject } from './common.ts';
import { ACK_TIMEOUT_SECONDS } from './bounds.ts';

export const COMMAND_STATUSES = ['logged', 'queued', 'acked', 'nacked', 'timed_out'] as const;
export const CommandStatus = z.enum(COMMAND_STATUSES);

const RELTIME_DESCRIPTION = "Seconds after the dataset's first sample as stored (negative: before it): where the command stands on the flight's time axis, whatever wall-clock time it is logged or sent at.";

export const CreateCommandRequestSchema = z.object({
  experimentId: Uuid,
  datasetId: Uuid,
  commandText: text().trim().min(1).max(1000),
  description: text().max(4000).default(''),
  args: jsonObject().default({}),
  /** Key of one of the organization's command templates (addition); its argsSchema validates `args`. */
  templateKey: text().max(64).default(''),
  category: text().max(120).default(''),
  /**
   * Position on the flight's timeline: seconds after the dataset's first sample (negative before it, for
   * pre-flight items). The list is ordered by it; the console marks the command there on the time axis.
   */
  relTime: z.number().finite().meta({ description: RELTIME_DESCRIPTION }),
  /** Caller's idempotency token, unique per organization. */
  clientToken: text().min(1).max(200).optional(),
});
export type CreateCommandRequest = z.infer<typeof CreateCommandRequestSchema>;

export const CommandRecordSchema = z.object({
  id: Uuid,
  experimentId: Uuid,
  datasetId: Uuid,
  commandText: text(),
  description: text(),
  args: jsonObject(),
  templateKey: text(),
  category: text(),
  relTime: z.number().meta({ description: RELTIME_DESCRIPTION }),
  issuedAt: TimestampOut,
  /** Empty for commands logged through the API; never filled with a substitute. */
  issuedByName: text(),
  issuedByEmail: text(),
  status: CommandStatus,
  statusDetail: text(),
  queuedAt: TimestampOut.nullable(),
  deliveredAt: TimestampOut.nullable(),
  ackedAt: TimestampOut.nullable(),
  ackDeadlineAt: TimestampOut.nullable(),
  vehicleTime: TimestampOut.nullable(),
  ackPayload: jsonObject().nullable(),
  deliveryAttempts: z.number().int(),
  clientToken: text().nullable(),
  /** Set when the command was retracted (addition); retracted commands stay in the list. */
  retractedAt: TimestampOut.nullable(),
  retractedReason: text().nullable(),
});
export type CommandRecord = z.infer<typeof CommandRecordSchema>;

export const CreateCommandResponseSchema = CommandRecordSchema.extend({ duplicate: z.boolean() });

export const ListCommandsQuerySchema = z.object({ experimentId: Uuid, datasetId: Uuid });

/** One command by id alone (addition): its dataset need not be known, as it must be for the list. */
export const GetCommandQuerySchema = z.object({ commandId: Uuid });

export const RetractCommandRequestSchema = z.object({
  commandId: Uuid,
  reason: text().max(1000).default(''),
});

export const DispatchRequestSchema = z.object({
  commandId: Uuid,
  ackTimeoutSeconds: z
    .number({ error: 'must be an integer number of seconds' })
    .int('must be an integer number of seconds')
    .min(ACK_TIMEOUT_SECONDS.min, `must be between ${ACK_TIMEOUT_SECONDS.min} and ${ACK_TIMEOUT_SECONDS.max}`)
    .max(ACK_TIMEOUT_SECONDS.max, `must be between ${ACK_TIMEOUT_SECONDS.min} and ${ACK_TIMEOUT_SECONDS.max}`)
    .default(ACK_TIMEOUT_SECONDS.default),
});
export type DispatchRequest = z.infer<typeof DispatchRequestSchema>;

export const DispatchResponseSchema = z.object({
  commandId: Uuid,
  status: z.literal('queued'),
  ackDeadline: TimestampOut,
  endpoints: z.array(z.object({ id: Uuid, url: text() })),
});
export type DispatchResponse = z.infer<typeof DispatchResponseSchema>;

export const AckRequestSchema = z.object({
  commandId: Uuid,
  state: z.enum(['acked', 'nacked']),
  vehicleTime: Timestamp.optional(),
  detail: text().max(4000).default(''),
  /** Free-form result data, stored as the command's ackPayload. */
  payload: jsonObject().optional(),
});
export type AckRequest = z.infer<typeof AckRequestSchema>;

export const AckResponseSchema = z.object({
  commandId: Uuid,
  status: z.enum(['acked', 'nacked']),
  acknowledgedAt: TimestampOut,
  duplicate: z.boolean(),
});
export type AckResponse = z.infer<typeof AckResponseSchema>;
