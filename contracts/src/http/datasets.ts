import { z } from 'zod';
import { ChannelDeclarationSchema, ChannelSchema } from './channels.ts';
import { TimestampOut, Uuid, text } from './common.ts';

export const STORAGE_SHAPES = ['wide', 'narrow'] as const;
export const StorageShape = z.enum(STORAGE_SHAPES);
export type StorageShape = z.infer<typeof StorageShape>;

export const DatasetSchema = z.object({
  id: Uuid,
  experimentId: Uuid,
  name: text(),
  storageShape: StorageShape,
  codec: text().nullable(),
  dialect: text().nullable(),
  format: text().nullable(),
  createdAt: TimestampOut,
  /**
   * When the service last committed telemetry of this dataset, if within the last ten minutes; null
   * otherwise. A flight whose data arrived seconds ago is being flown: the console marks it live.
   */
  lastDataAt: TimestampOut.nullable().optional(),
});
export type Dataset = z.infer<typeof DatasetSchema>;

/**
 * POST /api/streams/register. Registering is idempotent on (experimentId, datasetName): the same name
 * answers the dataset already there. For wide datasets each listed channel gets a physical `ch_N`
 * column; a longer list widens the table. Narrow datasets declare no channels.
 */
export const RegisterStreamRequestSchema = z
  .object({
    experimentId: Uuid,
    datasetName: text().trim().min(1).max(200),
    storageShape: StorageShape.default('wide'),
    channels: z.array(ChannelDeclarationSchema).max(1000).optional(),
    codec: z.literal('mavlink').optional(),
    dialect: z.literal('ardupilotmega').optional(),
    format: z.literal('mavlink-raw-v1').optional(),
  })
  .superRefine((body, ctx) => {
    if (body.storageShape === 'narrow') {
      if (body.channels && body.channels.length > 0) {
        ctx.addIssue({ code: 'custom', path: ['channels'], message: 'a narrow dataset declares no channels' });
      }
      for (const field of ['codec', 'dialect', 'format'] as const) {
        if (body[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], message: 'required for narrow datasets' });
      }
    } else {
      for (const field of ['codec', 'dialect', 'format'] as const) {
        if (body[field] !== undefined) ctx.addIssue({ code: 'custom', path: [field], message: 'only for narrow datasets' });
      }
    }
    const seen = new Set<string>();
    body.channels?.forEach((channel, i) => {
      if (seen.has(channel.name)) ctx.addIssue({ code: 'custom', path: ['channels', i, 'name'], message: 'duplicate channel name' });
      seen.add(channel.name);
    });
  });
export type RegisterStreamRequest = z.infer<typeof RegisterStreamRequestSchema>;

export const RegisterStreamResponseSchema = z.object({
  experimentId: Uuid,
  datasetId: Uuid,
  datasetName: text(),
  storageShape: StorageShape,
  /** false when the dataset already existed. */
  created: z.boolean(),
  /** Physical columns this call added. */
  addedColumns: z.array(text()),
  channels: z.array(ChannelSchema),
});
export type RegisterStreamResponse = z.infer<typeof RegisterStreamResponseSchema>;
