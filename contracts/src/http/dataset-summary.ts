import { z } from 'zod';
import { TimestampOut, Uuid } from './common.ts';

/** GET /api/datasets/summary */
export const DatasetSummaryQuerySchema = z.object({
  datasetId: Uuid,
  experimentId: Uuid.optional(),
});

/**
 * What a list of flights shows of a dataset beside its name: when it ran (`first` to `last`, as
 * GET /api/datasets/span answers them; both null while it holds nothing), how much it holds (a MAVLink
 * dataset's frames, a wide dataset's numeric samples; the other null) and, for a MAVLink dataset, the
 * vehicle its autopilot's HEARTBEAT names (null before one arrived, and for wide datasets).
 */
export const DatasetSummarySchema = z.object({
  datasetId: Uuid,
  first: TimestampOut.nullable(),
  last: TimestampOut.nullable(),
  frames: z.number().int().nonnegative().nullable(),
  samples: z.number().int().nonnegative().nullable(),
  vehicle: z
    .object({
      /** MAV_TYPE and its name: `quadrotor`, `submarine`, `VTOL tiltrotor`, … */
      mavType: z.number().int(),
      type: z.string(),
      /** MAV_AUTOPILOT and the firmware it names: ArduCopter, ArduSub, PX4, … */
      mavAutopilot: z.number().int(),
      autopilot: z.string(),
    })
    .nullable(),
});
export type DatasetSummary = z.infer<typeof DatasetSummarySchema>;
