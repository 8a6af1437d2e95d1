import { CreateExperimentRequestSchema, type Experiment } from '@sortie/contracts';
import { Hono } from 'hono';
import { requireScope } from '../auth/require-scope.ts';
import type { AppContext } from '../platform/context.ts';
import { toDataset } from '../datasets/queries.ts';
import type { AppEnv } from '../http/app-env.ts';
import { readJson } from '../http/validation.ts';
import { insertExperiment, listExperiments, listOrganizationDatasets } from './queries.ts';

export function experimentsRoutes(ctx: AppContext) {
  return new Hono<AppEnv>()
    .get('/experiments/list', requireScope(ctx, 'datasets:read'), async (c) => {
      const organizationId = c.get('principal').organizationId;
      const experiments = await listExperiments(ctx.db, organizationId);
      const datasets = await listOrganizationDatasets(ctx.db, organizationId);
      const result: Experiment[] = experiments.map((e) => ({
        id: e.id,
        name: e.name,
        description: e.description,
        createdAt: e.created_at.toISOString(),
        datasets: datasets.filter((d) => d.experiment_id === e.id).map((d) => toDataset(d, ctx.live.lastCommitted(d.id))),
      }));
      return c.json(result);
    })
    .post('/experiments/create', requireScope(ctx, 'datasets:write'), async (c) => {
      const body = await readJson(c, CreateExperimentRequestSchema);
      const row = await insertExperiment(ctx.db, {
        organizationId: c.get('principal').organizationId,
        name: body.name,
        description: body.description,
      });
      const experiment: Experiment = { id: row.id, name: row.name, description: row.description, createdAt: row.created_at.toISOString(), datasets: [] };
      return c.json(experiment, 201);
    });
}
