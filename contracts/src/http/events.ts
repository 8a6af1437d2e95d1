import { z } from 'zod';
import { Timestamp, TimestampOut, Uuid, text, jsonObject } from './common.ts';

/** POST /api/datasets/events: annotations on a dataset's timeline at absolute times. */
export const CreateEventsRequestSchema = z.object({
  experimentId: Uuid,
  datasetId: Uuid,
  events: z
    .array(
      z.object({
        timestamp: Timestamp,
        /** e.g. `LINK_LOSS` (written by the edge agent), `NOTE`, `TAKEOFF`. */
        kind: text().regex(/^[A-Za-z][A-Za-z0-9_.-]{0,63}$/, 'must be 1 to 64 letters, digits, _ . -'),
        message: text().max(4000).default(''),
        data: jsonObject().default({}),
      }),
    )
    .min(1)
    .max(1000),
});
export type CreateEventsRequest = z.infer<typeof CreateEventsRequestSchema>;

export const EventSchema = z.object({
  id: Uuid,
  datasetId: Uuid,
  timestamp: TimestampOut,
  kind: text(),
  message: text(),
  data: jsonObject(),
  createdAt: TimestampOut,
});
export type TimelineEvent = z.infer<typeof EventSchema>;

export const CreateEventsResponseSchema = z.object({ events: z.array(EventSchema) });

export const ListEventsQuerySchema = z.object({
  datasetId: Uuid,
  experimentId: Uuid.optional(),
  kind: text().optional(),
});
