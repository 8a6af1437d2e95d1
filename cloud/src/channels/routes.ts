import { CreateChannelRequestSchema, DatasetSpanQuerySchema, DatasetSummaryQuerySchema, ListChannelsQuerySchema, UpdateChannelRequestSchema, type DatasetSpan } from '@sortie/contracts';
import { Hono } from 'hono';
import { requireScope } from '../auth/require-scope.ts';
import type { AppContext } from '../platform/context.ts';
import { insertWideChannel, listChannelRows, nextColumnIndex, requireDataset, toChannel } from '../datasets/queries.ts';
import { isUniqueViolation } from '../db/errors.ts';
import { conflict, notFound } from '../platform/errors.ts';
import { datasetSpan, materialiseChannels } from '../telemetry/read.ts';
import { datasetSummary } from '../telemetry/summary.ts';
import type { AppEnv } from '../http/app-env.ts';
import { readJson, readQuery } from '../http/validation.ts';
import { lockDatasetForChannels, updateChannel } from './queries.ts';

export function channelsRoutes(ctx: AppContext) {
  return new Hono<AppEnv>()
    .get('/datasets/channels', requireScope(ctx, 'datasets:read'), async (c) => {
      const query = readQuery(c, ListChannelsQuerySchema);
      const dataset = await requireDataset(ctx.db, c.get('principal').organizationId, query.datasetId, query.experimentId);
      // The spec requires a narrow dataset's signal list to be materialised from its data when
      // experimentId is given; it is done without it too, since a list missing signals the flight holds
      // is never what a caller wants (a loose index scan: milliseconds for a whole flight).
      await materialiseChannels(ctx.db, dataset, ctx.clock.now());
      return c.json((await listChannelRows(ctx.db, dataset.id)).map(toChannel));
    })
    // What the dataset's channels hold, end to end: its first and last sample over all of them.
    .get('/datasets/span', requireScope(ctx, 'datasets:read'), async (c) => {
      const query = readQuery(c, DatasetSpanQuerySchema);
      const dataset = await requireDataset(ctx.db, c.get('principal').organizationId, query.datasetId, query.experimentId);
      const span = await datasetSpan(ctx.db, dataset);
      return c.json({ datasetId: dataset.id, first: span?.first ?? null, last: span?.last ?? null } satisfies DatasetSpan);
    })
    // What a list of flights shows beside a dataset's name: span, frames or samples, vehicle.
    .get('/datasets/summary', requireScope(ctx, 'datasets:read'), async (c) => {
      const query = readQuery(c, DatasetSummaryQuerySchema);
      const dataset = await requireDataset(ctx.db, c.get('principal').organizationId, query.datasetId, query.experimentId);
      return c.json(await datasetSummary(ctx.db, dataset));
    })
    .post('/datasets/channels/create', requireScope(ctx, 'datasets:write'), async (c) => {
      const body = await readJson(c, CreateChannelRequestSchema);
      const organizationId = c.get('principal').organizationId;
      const row = await ctx.db.transaction().execute(async (tx) => {
        const dataset = await requireDataset(tx, organizationId, body.datasetId, body.experimentId);
        if (dataset.storage_shape === 'narrow') {
          throw conflict('dataset is narrow: its signals come from the data, channels cannot be declared');
        }
        // Serialise index assignment per dataset.
        await lockDatasetForChannels(tx, dataset.id);
        const existing = await listChannelRows(tx, dataset.id);
        if (existing.some((ch) => ch.name === body.name)) throw conflict(`a channel named "${body.name}" already exists`);
        // Metadata only: the physical column appears when a registration lists the channel.
        return insertWideChannel(tx, {
          organizationId,
          datasetId: dataset.id,
          index: nextColumnIndex(existing),
          channel: body,
          physicalType: null,
          now: ctx.clock.now(),
        });
      });
      return c.json(toChannel(row), 201);
    })
    .post('/datasets/channels/update', requireScope(ctx, 'datasets:write'), async (c) => {
      const body = await readJson(c, UpdateChannelRequestSchema);
      const organizationId = c.get('principal').organizationId;
      const dataset = await requireDataset(ctx.db, organizationId, body.datasetId, body.experimentId);
      let row;
      try {
        row = await updateChannel(ctx.db, {
          datasetId: dataset.id,
          channelId: body.id,
          name: body.name,
          unit: body.unit,
          dataType: body.dataType,
          now: ctx.clock.now(),
        });
      } catch (error) {
        if (isUniqueViolation(error)) throw conflict(`a channel named "${body.name}" already exists`);
        throw error;
      }
      if (!row) throw notFound(`no channel ${body.id} in dataset ${dataset.id}`);
      return c.json(toChannel(row));
    });
}
