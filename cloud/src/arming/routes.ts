import { ArmingQuerySchema, ArmRequestSchema, DisarmRequestSchema } from '@sortie/contracts';
import { Hono } from 'hono';
import { requireScope } from '../auth/require-scope.ts';
import type { AppContext } from '../platform/context.ts';
import { requireDataset } from '../datasets/queries.ts';
import type { AppEnv } from '../http/app-env.ts';
import { readJson, readQuery } from '../http/validation.ts';
import { armDataset, disarmDataset, readArming, toArmingRecord } from './arming.ts';

/** Arming is per dataset, always expires, and is what dispatch checks second (after the deployment switch). */
export function armingRoutes(ctx: AppContext) {
  return new Hono<AppEnv>()
    .post('/datasets/arm', requireScope(ctx, 'commands:write'), async (c) => {
      const body = await readJson(c, ArmRequestSchema);
      const principal = c.get('principal');
      const dataset = await requireDataset(ctx.db, principal.organizationId, body.datasetId, body.experimentId);
      const now = ctx.clock.now();
      const row = await armDataset(ctx.db, {
        organizationId: principal.organizationId,
        datasetId: dataset.id,
        keyId: principal.keyId,
        userId: principal.userId,
        reason: body.reason,
        ttlSeconds: body.ttlSeconds,
        now,
      });
      return c.json(toArmingRecord(dataset.id, row, now));
    })
    .post('/datasets/disarm', requireScope(ctx, 'commands:write'), async (c) => {
      const body = await readJson(c, DisarmRequestSchema);
      const principal = c.get('principal');
      const dataset = await requireDataset(ctx.db, principal.organizationId, body.datasetId, body.experimentId);
      const now = ctx.clock.now();
      await disarmDataset(ctx.db, { datasetId: dataset.id, keyId: principal.keyId, now });
      return c.json(toArmingRecord(dataset.id, await readArming(ctx.db, dataset.id), now));
    })
    .get('/datasets/arming', requireScope(ctx, 'commands:read'), async (c) => {
      const query = readQuery(c, ArmingQuerySchema);
      const dataset = await requireDataset(ctx.db, c.get('principal').organizationId, query.datasetId, query.experimentId);
      return c.json(toArmingRecord(dataset.id, await readArming(ctx.db, dataset.id), ctx.clock.now()));
    });
}
