import { z } from 'zod';
import { TimestampOut, Uuid } from './common.ts';

/** GET /api/datasets/span */
export const DatasetSpanQuerySchema = z.object({
  datasetId: Uuid,
  experimentId: Uuid.optional(),
});

/**
 * A dataset's first and last sample as stored, over all its channels (every signal of a MAVLink dataset,
 * whatever its clock), on the time axis Query answers on (aligned for MAVLink datasets), RFC 3339 UTC with
 * microseconds. Both null for a dataset that holds no sample.
 */
export const DatasetSpanSchema = z.object({
  datasetId: Uuid,
  first: TimestampOut.nullable(),
  last: TimestampOut.nullable(),
});
export type DatasetSpan = z.infer<typeof DatasetSpanSchema>;
