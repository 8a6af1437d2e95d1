import { z } from 'zod';
import { TimestampOut, Uuid } from './common.ts';
import { DatasetSchema } from './datasets.ts';

/** Addition to the spec: the spec lists experiments but shows no way to create one. */
export const CreateExperimentRequestSchema = z.object({
  name: z.string().trim().min(1).max(200),
  description: z.string().max(4000).default(''),
});
export type CreateExperimentRequest = z.infer<typeof CreateExperimentRequestSchema>;

export const ExperimentSchema = z.object({
  id: Uuid,
  name: z.string(),
  description: z.string(),
  createdAt: TimestampOut,
  datasets: z.array(DatasetSchema),
});
export type Experiment = z.infer<typeof ExperimentSchema>;

export const ListExperimentsResponseSchema = z.array(ExperimentSchema);
