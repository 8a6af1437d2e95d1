import { z } from 'zod';
import { TimestampOut, Uuid, text } from './common.ts';
import { DatasetSchema } from './datasets.ts';

/** Addition to the spec: the spec lists experiments but shows no way to create one. */
export const CreateExperimentRequestSchema = z.object({
  name: text().trim().min(1).max(200),
  description: text().max(4000).default(''),
});
export type CreateExperimentRequest = z.infer<typeof CreateExperimentRequestSchema>;

export const ExperimentSchema = z.object({
  id: Uuid,
  name: text(),
  description: text(),
  createdAt: TimestampOut,
  datasets: z.array(DatasetSchema),
});
export type Experiment = z.infer<typeof ExperimentSchema>;

export const ListExperimentsResponseSchema = z.array(ExperimentSchema);
