import { z } from 'zod';
import { ChannelName, Uuid, text } from './common.ts';

/**
 * Declared type labels. A label only: it picks the physical column type when the column is created at
 * registration, and changing it later never converts written data.
 */
export const DATA_TYPES = [
  'double',
  'float',
  'int32',
  'uint32',
  'int64',
  'uint64',
  'bool',
  'enum',
  'bit_field',
  'string',
  'bytes',
  'empty',
] as const;
export const DataType = z.enum(DATA_TYPES);
export type DataType = z.infer<typeof DataType>;

export const ChannelSchema = z.object({
  id: Uuid,
  name: text(),
  unit: text(),
  dataType: text(),
  /** `ch_N` on wide datasets, the signal name on narrow ones: the address of the data. */
  hypertableColName: text(),
});
export type Channel = z.infer<typeof ChannelSchema>;

export const ChannelDeclarationSchema = z.object({
  name: ChannelName,
  unit: text().max(64).default(''),
  dataType: DataType.default('double'),
});
export type ChannelDeclaration = z.infer<typeof ChannelDeclarationSchema>;

export const ListChannelsQuerySchema = z.object({
  datasetId: Uuid,
  experimentId: Uuid.optional(),
});

export const CreateChannelRequestSchema = z.object({
  experimentId: Uuid,
  datasetId: Uuid,
  name: ChannelName,
  unit: text().max(64).default(''),
  dataType: DataType.default('double'),
});
export type CreateChannelRequest = z.infer<typeof CreateChannelRequestSchema>;

/** Strict so that an attempt to edit `hypertableColName` is refused rather than silently ignored. */
export const UpdateChannelRequestSchema = z.strictObject(
  {
    experimentId: Uuid,
    datasetId: Uuid,
    id: Uuid,
    name: ChannelName.optional(),
    unit: text().max(64).optional(),
    dataType: DataType.optional(),
  },
  { error: (issue) => (issue.code === 'unrecognized_keys' ? `cannot be edited: ${issue.keys.join(', ')}` : undefined) },
);
export type UpdateChannelRequest = z.infer<typeof UpdateChannelRequestSchema>;
