import { CreateExperimentRequestSchema, type Experiment } from '@sortie/contracts';
import { Hono } from 'hono';
import { requireScope } from '../auth/require-scope.ts';
import type { AppContext } from '../platform/context.ts';
import { toDataset } from '../datasets/queries.ts';
import type { AppEnv } from '../http/app-env.ts';
import { readJson } from '../http/validation.ts';

export function experimentsRoutes(ctx: AppContext) {
  return new Hono<AppEnv>()
    .get('/experiments/list', requireScope(ctx, 'datasets:read'), async (c) => {
      const organizationId = c.get('principal').organizationId;
      const experiments = await ctx.db
        .selectFrom('experiments')
        .selectAll()
        .where('organization_id', '=', organizationId)
        .orderBy('created_at', 'desc')
        .orderBy('id')
        .execute();
      const datasets = await ctx.db
        .selectFrom('datasets')
        .selectAll()
        .where('organization_id', '=', organizationId)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      const result: Experiment[] = experiments.map((e) => ({
        id: e.id,
        name: e.name,
        description: e.description,
        createdAt: e.created_at.toISOString(),
        datasets: datasets.filter((d) => d.experiment_id === e.id).map(toDataset),
      }));
      return c.json(result);
    })
    .post('/experiments/create', requireScope(ctx, 'datasets:write'), async (c) => {
      const body = await readJson(c, CreateExperimentRequestSchema);
      const row = await ctx.db
        .insertInto('experiments')
        .values({ id: crypto.randomUUID(), organization_id: c.get('principal').organizationId, name: body.name, description: body.description })
        .returningAll()
        .executeTakeFirstOrThrow();
      const experiment: Experiment = { id: row.id, name: row.name, description: row.description, createdAt: row.created_at.toISOString(), datasets: [] };
      return c.json(experiment, 201);
    });
}
