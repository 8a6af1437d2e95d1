import type { Selectable } from 'kysely';
import type { DatasetRow, ExperimentsTable } from '../db/schema.ts';
import type { Executor } from '../db/executor.ts';

/** The organization's experiments, newest first; id breaks ties so equal times list in a stable order. */
export function listExperiments(db: Executor, organizationId: string): Promise<Selectable<ExperimentsTable>[]> {
  return db
    .selectFrom('experiments')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .orderBy('created_at', 'desc')
    .orderBy('id')
    .execute();
}

/** Every dataset of the organization, oldest first: one query for all experiments instead of one each. */
export function listOrganizationDatasets(db: Executor, organizationId: string): Promise<DatasetRow[]> {
  return db
    .selectFrom('datasets')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export function insertExperiment(
  db: Executor,
  input: { organizationId: string; name: string; description: string },
): Promise<Selectable<ExperimentsTable>> {
  return db
    .insertInto('experiments')
    .values({ id: crypto.randomUUID(), organization_id: input.organizationId, name: input.name, description: input.description })
    .returningAll()
    .executeTakeFirstOrThrow();
}
