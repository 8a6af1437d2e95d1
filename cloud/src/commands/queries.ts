import type { Executor } from '../db/executor.ts';
import type { CommandRow } from '../db/schema.ts';

/** A dataset's command log, in the order the spec lists it: relative time, then issue time, then id. */
export function listCommands(db: Executor, datasetId: string): Promise<CommandRow[]> {
  return db
    .selectFrom('commands')
    .selectAll()
    .where('dataset_id', '=', datasetId)
    .orderBy('rel_time')
    .orderBy('issued_at')
    .orderBy('id')
    .execute();
}

/** One of the organization's commands (retracted or not); undefined for another organization's or none. */
export function getCommand(db: Executor, organizationId: string, commandId: string): Promise<CommandRow | undefined> {
  return db
    .selectFrom('commands')
    .selectAll()
    .where('id', '=', commandId)
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
}

/** Whether the organization has this command (retracted or not). */
export async function commandExists(db: Executor, organizationId: string, commandId: string): Promise<boolean> {
  const row = await db
    .selectFrom('commands')
    .select('id')
    .where('id', '=', commandId)
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
  return row !== undefined;
}

/** Retract a command not retracted yet; undefined when there is no such command or it already is. */
export function retractCommand(
  db: Executor,
  organizationId: string,
  commandId: string,
  reason: string,
  at: Date,
): Promise<CommandRow | undefined> {
  return db
    .updateTable('commands')
    .set({ retracted_at: at, retracted_reason: reason })
    .where('id', '=', commandId)
    .where('organization_id', '=', organizationId)
    .where('retracted_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}
