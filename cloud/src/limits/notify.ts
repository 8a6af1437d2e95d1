import { LIMIT_CROSSING_EVENT, type LimitCrossingBody } from '@sortie/contracts';
import { sql } from 'kysely';
import type { Executor } from '../db/executor.ts';
import type { DatasetRow, EventRow } from '../db/schema.ts';
import type { OutboxJob } from '../platform/outbox.ts';
import { eventsOnSeriesTime } from '../telemetry/read.ts';
import type { ChangedLimitEvent } from './states.ts';

/**
 * Limit events as webhooks: in the transaction that stored or ended LIMIT events, one delivery job per
 * event, phase and endpoint that opted in (`limit_events`), carrying the event as it was at that phase
 * (the body's `event`). The caller hands the jobs to the outbox port once the transaction committed;
 * the delivery engine signs, retries and counts them toward auto-disable as it does commands. An
 * organization with no opted-in endpoint pays one indexed read, and only when an event changed.
 */
export async function notifyLimitEvents(tx: Executor, organizationId: string, changed: readonly ChangedLimitEvent[]): Promise<OutboxJob[]> {
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
  const events: string[] = [];
  const phases: string[] = [];
  const payloads: string[] = [];
  for (const c of changed) {
    const row = stored.get(c.eventId);
    const dataset = datasets.get(c.datasetId);
    if (!row || !dataset) continue;
    events.push(c.eventId);
    phases.push(c.phase);
    payloads.push(JSON.stringify(await payloadOf(tx, dataset, { ...row, data: { ...c.data } })));
  }
  const jobs = await sql<{ id: string }>`
    insert into delivery_jobs (id, organization_id, endpoint_id, event_type, event_id, event_phase, payload)
    select gen_random_uuid(), ${organizationId}::uuid, e.id, ${LIMIT_CROSSING_EVENT}, n.event_id, n.phase, n.payload
    from unnest(${events}::uuid[], ${phases}::text[], ${payloads}::jsonb[]) as n(event_id, phase, payload)
    cross join unnest(${endpoints.map((e) => e.id)}::uuid[]) as e(id)
    on conflict (event_id, event_phase, endpoint_id) where event_id is not null do nothing
    returning id`.execute(tx);
  return jobs.rows.map((j) => ({ jobId: j.id, organizationId }));
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
