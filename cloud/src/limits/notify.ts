import type { LimitCrossingBody } from '@sortie/contracts';
import type { Executor } from '../db/executor.ts';
import type { DatasetRow, EventRow } from '../db/schema.ts';
import type { Outbox, OutboxJob } from '../platform/outbox.ts';
import { eventsOnSeriesTime } from '../telemetry/read.ts';
import type { ChangedLimitEvent } from './states.ts';

/**
 * Limit events as webhooks: in the transaction that stored or ended LIMIT events, one delivery job per
 * event, phase and endpoint that opted in (`limit_events`), carrying the event as it was at that phase
 * (the body's `event`), written by delivery through the outbox port (`outbox.enqueueLimitCrossings`).
 * The caller hands the jobs to the outbox port once the transaction committed;
 * the delivery engine signs, retries and counts them toward auto-disable as it does commands. An
 * organization with no opted-in endpoint pays one indexed read, and only when an event changed.
 */
export async function notifyLimitEvents(
  tx: Executor,
  outbox: Pick<Outbox, 'enqueueLimitCrossings'>,
  organizationId: string,
  changed: readonly ChangedLimitEvent[],
): Promise<OutboxJob[]> {
  if (changed.length === 0) return [];
  const endpoints = await tx
    .selectFrom('webhook_endpoints')
    .select('id')
    .where('organization_id', '=', organizationId)
    .where('limit_events', '=', true)
    .where('deleted_at', 'is', null)
    .where('disabled_at', 'is', null)
    .execute();
  if (endpoints.length === 0) return [];
  const stored = new Map((await tx.selectFrom('events').selectAll().where('id', 'in', [...new Set(changed.map((c) => c.eventId))]).execute()).map((e) => [e.id, e]));
  const datasets = new Map(
    (await tx.selectFrom('datasets').selectAll().where('id', 'in', [...new Set(changed.map((c) => c.datasetId))]).execute()).map((d) => [d.id, d]),
  );
  const events: Array<{ eventId: string; phase: string; payload: string }> = [];
  for (const c of changed) {
    const row = stored.get(c.eventId);
    const dataset = datasets.get(c.datasetId);
    if (!row || !dataset) continue;
    events.push({ eventId: c.eventId, phase: c.phase, payload: JSON.stringify(await payloadOf(tx, dataset, { ...row, data: { ...c.data } })) });
  }
  return outbox.enqueueLimitCrossings(tx, { organizationId, endpointIds: endpoints.map((e) => e.id), events });
}

/** The body's `event`: as GET /api/datasets/events lists it (a MAVLink dataset's on the charts' axis), with its experiment and organization. */
async function payloadOf(tx: Executor, dataset: DatasetRow, row: EventRow): Promise<Pick<LimitCrossingBody, 'event'>> {
  const [shown] = await eventsOnSeriesTime(tx, dataset, [row]);
  return {
    event: {
      id: shown!.id,
      datasetId: shown!.dataset_id,
      experimentId: dataset.experiment_id,
      organizationId: dataset.organization_id,
      timestamp: shown!.time.toISOString(),
      kind: 'LIMIT',
      message: shown!.message,
      data: shown!.data as LimitCrossingBody['event']['data'],
      createdAt: shown!.created_at.toISOString(),
    },
  };
}
