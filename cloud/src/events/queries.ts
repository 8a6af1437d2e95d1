import type { CreateEventsRequest } from '@sortie/contracts';
import type { EventRow } from '../db/schema.ts';
import type { Executor } from '../db/executor.ts';

/** One statement for the whole batch, so a request's events are written all or none. */
export function insertEvents(
  db: Executor,
  input: { organizationId: string; datasetId: string; events: CreateEventsRequest['events'] },
): Promise<EventRow[]> {
  return db
    .insertInto('events')
    .values(
      input.events.map((e) => ({
        id: crypto.randomUUID(),
        organization_id: input.organizationId,
        dataset_id: input.datasetId,
        time: e.timestamp,
        kind: e.kind,
        message: e.message,
        data: JSON.stringify(e.data),
      })),
    )
    .returningAll()
    .execute();
}

/** The dataset's events in time order (id breaks ties), optionally only those of one kind. */
export function listEvents(db: Executor, datasetId: string, kind?: string): Promise<EventRow[]> {
  let query = db.selectFrom('events').selectAll().where('dataset_id', '=', datasetId);
  if (kind) query = query.where('kind', '=', kind);
  return query.orderBy('time').orderBy('id').execute();
}

/** The dataset's latest `limit` events by last change, newest last: what a live follower opens with. */
export async function latestChangedEvents(db: Executor, datasetId: string, limit: number): Promise<EventRow[]> {
  const rows = await db.selectFrom('events').selectAll().where('dataset_id', '=', datasetId).orderBy('updated_at', 'desc').orderBy('id').limit(limit).execute();
  return rows.reverse();
}

/** The dataset's events stored or updated after `since`, oldest change first, at most `limit`. */
export function eventsChangedSince(db: Executor, datasetId: string, since: Date, limit: number): Promise<EventRow[]> {
  return db
    .selectFrom('events')
    .selectAll()
    .where('dataset_id', '=', datasetId)
    .where('updated_at', '>', since)
    .orderBy('updated_at')
    .orderBy('id')
    .limit(limit)
    .execute();
}
