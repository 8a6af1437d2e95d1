import { EXPORT_MEDIA_TYPES, ExportQuerySchema, zodIssuesToDetails } from '@sortie/contracts';
import { Hono } from 'hono';
import { requireScope } from '../auth/require-scope.ts';
import { requireDataset } from '../datasets/queries.ts';
import { listEvents } from '../events/queries.ts';
import { invalidRequest } from '../platform/errors.ts';
import type { AppEnv } from '../http/app-env.ts';
import type { AppContext } from '../platform/context.ts';
import { datasetHeartbeats, eventsOnSeriesTime } from '../telemetry/read.ts';
import { openMavlinkMessages, openRawRows } from '../telemetry/raw-rows.ts';
import { csvBytes } from './csv.ts';
import { fileName } from './format.ts';
import { mavlinkMcap, mcapBytes, wideMcap, type ExportEvent } from './mcap.ts';
import { modeEvents } from './mode-events.ts';
import { pulled } from './stream.ts';

const micros = (iso: string | undefined) => (iso === undefined ? undefined : Date.parse(iso) * 1000 + subMillisecondMicros(iso));

/** The µs digits after the milliseconds of an RFC 3339 time (Date.parse keeps milliseconds only). */
function subMillisecondMicros(iso: string): number {
  const fraction = /\.(\d+)/.exec(iso)?.[1] ?? '';
  return Number((fraction.slice(3, 6) || '0').padEnd(3, '0'));
}

/**
 * GET /api/datasets/export: a dataset's raw rows as CSV or MCAP. Everything that can be refused is
 * checked before the first byte (the dataset, every channel, the range), so refusals are error
 * envelopes; then the file streams, a page of rows read only when the client has taken the last one
 * (the stream is pulled, and the HTTP server waits for the socket to drain).
 */
export function exportRoutes(ctx: AppContext) {
  return new Hono<AppEnv>().get('/datasets/export', requireScope(ctx, 'datasets:read'), async (c) => {
    // A repeated parameter arrives as a list, a single one as a string: the schema reads both.
    const raw = Object.fromEntries(Object.entries(c.req.queries()).map(([k, v]) => [k, v.length === 1 ? v[0] : v]));
    const parsed = ExportQuerySchema.safeParse(raw);
    if (!parsed.success) {
      const details = zodIssuesToDetails(parsed.error);
      throw invalidRequest(`invalid query parameters: ${details.map((d) => `${d.field} ${d.message}`).slice(0, 3).join('; ')}`, details);
    }
    const query = parsed.data;
    const organizationId = c.get('principal').organizationId;
    const dataset = await requireDataset(ctx.db, organizationId, query.datasetId, query.experimentId);
    const from = micros(query.start);
    const to = micros(query.end);
    const request = { channels: query.channel, from, to };

    let body: AsyncGenerator<Uint8Array>;
    if (query.format === 'csv') {
      body = csvBytes(await openRawRows(ctx.db, dataset, request));
    } else {
      // MAVLink: whole frames, one channel per message type, read straight from the message tables.
      const narrow = dataset.storage_shape === 'narrow' ? await openMavlinkMessages(ctx.db, dataset, request) : undefined;
      const source = narrow ? mavlinkMcap(narrow) : wideMcap(await openRawRows(ctx.db, dataset, request));
      const events: ExportEvent[] = (await eventsOnSeriesTime(ctx.db, dataset, await listEvents(ctx.db, dataset.id)))
        .map((e) => ({ t: e.time.getTime() * 1000, kind: e.kind, message: e.message }))
        .filter((e) => (from === undefined || e.t >= from) && (to === undefined || e.t < to))
        // The vehicle's mode changes, named as the console names them: a flight read in Foxglove says what it was flown in.
        .concat(modeEvents(await datasetHeartbeats(ctx.db, dataset), from, to))
        .sort((a, b) => a.t - b.t);
      body = mcapBytes(source, events, { shape: dataset.storage_shape, datasetId: dataset.id, datasetName: dataset.name, systemId: narrow?.systemId });
    }
    const requestId = c.get('requestId');
    // @hono/node-server hands the Node response in the env: cutting its socket is how a late failure shows.
    const outgoing = (c.env as { outgoing?: { destroy(error?: Error): void } } | undefined)?.outgoing;
    const fail = (error: unknown) => {
      ctx.logger.error({ err: error, requestId, datasetId: dataset.id }, 'export failed after the response started; connection cut');
      outgoing?.destroy();
      return outgoing !== undefined;
    };
    c.header('content-type', EXPORT_MEDIA_TYPES[query.format]);
    c.header('content-disposition', `attachment; filename="${fileName(dataset.name, dataset.id, query.format)}"`);
    c.header('cache-control', 'no-store');
    return c.body(pulled(body, fail), 200);
  });
}

