import { z } from 'zod';
import { TimestampOut, Uuid, text } from './common.ts';
import { ARMING_TTL_SECONDS } from './bounds.ts';

export const ArmRequestSchema = z.object({
  datasetId: Uuid,
  experimentId: Uuid.optional(),
  ttlSeconds: z
    .number()
    .int()
    .min(ARMING_TTL_SECONDS.min, `must be between ${ARMING_TTL_SECONDS.min} and ${ARMING_TTL_SECONDS.max}`)
    .max(ARMING_TTL_SECONDS.max, `must be between ${ARMING_TTL_SECONDS.min} and ${ARMING_TTL_SECONDS.max}`)
    .default(ARMING_TTL_SECONDS.default),
  reason: text().max(1000).default(''),
});
export type ArmRequest = z.infer<typeof ArmRequestSchema>;

export const DisarmRequestSchema = z.object({ datasetId: Uuid, experimentId: Uuid.optional() });
export const ArmingQuerySchema = z.object({ datasetId: Uuid, experimentId: Uuid.optional() });

/** The dataset's arming as of now. An expired arming reads `armed: false`. */
export const ArmingRecordSchema = z.object({
  datasetId: Uuid,
  armed: z.boolean(),
  armedAt: TimestampOut.nullable(),
  expiresAt: TimestampOut.nullable(),
  armedBy: z.object({ keyId: Uuid.nullable(), userId: Uuid.nullable() }).nullable(),
  reason: text(),
  disarmedAt: TimestampOut.nullable(),
});
export type ArmingRecord = z.infer<typeof ArmingRecordSchema>;
