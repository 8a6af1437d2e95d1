import { CreateEventsRequestSchema, ListEventsQuerySchema, type TimelineEvent } from '@sortie/contracts';
import { Hono } from 'hono';
import { requireScope } from '../auth/require-scope.ts';
import type { AppContext } from '../platform/context.ts';
import { requireDataset } from '../datasets/queries.ts';
import type { EventRow } from '../db/schema.ts';
import type { AppEnv } from '../http/app-env.ts';
import { readJson, readQuery } from '../http/validation.ts';
import { eventsOnSeriesTime } from '../telemetry/read.ts';
import { insertEvents, listEvents } from './queries.ts';

function toEvent(row: EventRow): TimelineEvent {
  return {
    id: row.id,
    datasetId: row.dataset_id,
    timestamp: row.time.toISOString(),
    kind: row.kind,
    message: row.message,
    data: row.data,
    createdAt: row.created_at.toISOString(),
  };
}

export function eventsRoutes(ctx: AppContext) {
  return new Hono<AppEnv>()
    .post('/datasets/events', requireScope(ctx, 'telemetry:write'), async (c) => {
      const body = await readJson(c, CreateEventsRequestSchema);
      const organizationId = c.get('principal').organizationId;
      const dataset = await requireDataset(ctx.db, organizationId, body.datasetId, body.experimentId);
      const rows = await insertEvents(ctx.db, { organizationId, datasetId: dataset.id, events: body.events });
      // Live followers read the dataset's new events too (a LINK_LOSS as the link drops).
      ctx.live.committed(dataset.id, 'events');
      return c.json({ events: rows.map(toEvent) }, 201);
    })
    .get('/datasets/events', requireScope(ctx, 'datasets:read'), async (c) => {
      const query = readQuery(c, ListEventsQuerySchema);
      const dataset = await requireDataset(ctx.db, c.get('principal').organizationId, query.datasetId, query.experimentId);
      const rows = await listEvents(ctx.db, dataset.id, query.kind);
      return c.json((await eventsOnSeriesTime(ctx.db, dataset, rows)).map(toEvent));
    });
}
