import type { CreateEventsRequest } from '@sortie/contracts';
import { sql, type Insertable } from 'kysely';
import type { EventRow, EventsTable } from '../db/schema.ts';
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

/** Events found in an imported log (imports/import.ts), in the caller's transaction. */
export async function insertEventRows(db: Executor, rows: readonly Insertable<EventsTable>[]): Promise<void> {
  await db.insertInto('events').values([...rows]).execute();
}

/**
 * LIMIT events (limits/states.ts): one insert of every crossing a batch started, each at its start
 * (`us`, µs since the epoch); a crossing stored before (same rule, dataset and start) is not stored
 * again. The ids stored.
 */
export async function insertLimitEvents(
  db: Executor,
  input: { organizationId: string; datasetId: string; starts: ReadonlyArray<{ id: string; us: number; message: string; data: string; ruleId: string }> },
): Promise<string[]> {
  const { starts } = input;
  const rows = await sql<{ id: string }>`
    insert into events (id, organization_id, dataset_id, time, kind, message, data, limit_rule_id)
    select u.id, ${input.organizationId}::uuid, ${input.datasetId}::uuid, timestamptz 'epoch' + u.us * interval '1 microsecond', 'LIMIT', u.message, u.data, u.rule_id
    from unnest(${starts.map((s) => s.id)}::uuid[], ${starts.map((s) => s.us)}::int8[], ${starts.map((s) => s.message)}::text[],
                ${starts.map((s) => s.data)}::jsonb[], ${starts.map((s) => s.ruleId)}::uuid[]) as u(id, us, message, data, rule_id)
    on conflict (limit_rule_id, dataset_id, time) where limit_rule_id is not null do nothing
    returning id`.execute(db);
  return rows.rows.map((r) => r.id);
}

/** One update replacing the data of each LIMIT event still open (`data.active`); the ids changed. */
export async function replaceOpenLimitEventData(db: Executor, data: ReadonlyMap<string, string>): Promise<string[]> {
  const rows = await sql<{ id: string }>`
    update events e set data = u.data, updated_at = now()
    from unnest(${[...data.keys()]}::uuid[], ${[...data.values()]}::jsonb[]) as u(id, data)
    where e.id = u.id and e.data->>'active' = 'true'
    returning e.id`.execute(db);
  return rows.rows.map((r) => r.id);
}

/** One update of the worst value and its time of each LIMIT event still open, those already up to date left alone; the ids changed. */
export async function updateOpenLimitEventWorst(db: Executor, worst: ReadonlyArray<{ id: string; value: number | null; at: string }>): Promise<string[]> {
  const rows = await sql<{ id: string }>`
    update events e set data = e.data || jsonb_build_object('worstValue', u.worst, 'worstTime', u.at), updated_at = now()
    from unnest(${worst.map((w) => w.id)}::uuid[], ${worst.map((w) => w.value)}::float8[],
                ${worst.map((w) => w.at)}::text[]) as u(id, worst, at)
    where e.id = u.id and e.data->>'active' = 'true' and (e.data->>'worstValue')::float8 is distinct from u.worst
    returning e.id`.execute(db);
  return rows.rows.map((r) => r.id);
}

/** Replace the data of one LIMIT event if it is still open; whether it was. */
export async function replaceOpenLimitEvent(db: Executor, eventId: string, data: string): Promise<boolean> {
  const ended = await db
    .updateTable('events')
    .set({ data, updated_at: sql<Date>`now()` })
    .where('id', '=', eventId)
    .where(sql<boolean>`data->>'active' = 'true'`)
    .returning('id')
    .executeTakeFirst();
  return ended !== undefined;
}
