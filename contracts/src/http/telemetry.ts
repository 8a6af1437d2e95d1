import { z } from 'zod';
import { Timestamp, Uuid, text } from './common.ts';

export const AppendValue = z.union([z.number(), text(), z.boolean(), z.null()]);

/**
 * POST /api/datasets/append (wide datasets). Each row has a timestamp and values keyed by `ch_N` or
 * by channel name. Rows sharing a timestamp merge into one stored row.
 */
export const AppendRequestSchema = z.object({
  experimentId: Uuid,
  datasetId: Uuid,
  rows: z
    .array(
      z.object({
        timestamp: Timestamp,
        values: z.record(text(), AppendValue),
      }),
    )
    .min(1)
    .max(10_000),
});
export type AppendRequest = z.infer<typeof AppendRequestSchema>;

export const AppendResponseSchema = z.object({
  rowsWritten: z.number().int(),
  valuesWritten: z.number().int(),
  /**
   * Keys that addressed nothing and were skipped: channel UUIDs. The spec keeps such requests
   * successful; this list makes the trap visible.
   */
  ignoredKeys: z.array(text()),
});
export type AppendResponse = z.infer<typeof AppendResponseSchema>;
