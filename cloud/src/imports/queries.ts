import type { Selectable } from 'kysely';
import type { Executor } from '../db/executor.ts';
import type { LogImportsTable } from '../db/schema.ts';
import { notFound } from '../platform/errors.ts';

export type LogImportRow = Selectable<LogImportsTable>;

/** The import of these bytes in the organization, if any: a file is one flight, imported once. */
export function findImportOfFile(db: Executor, organizationId: string, sha256: Buffer): Promise<LogImportRow | undefined> {
  return db.selectFrom('log_imports').selectAll().where('organization_id', '=', organizationId).where('sha256', '=', sha256).executeTakeFirst();
}

export function listImports(db: Executor, organizationId: string, filter: { experimentId?: string; datasetId?: string }): Promise<LogImportRow[]> {
  let q = db.selectFrom('log_imports').selectAll().where('organization_id', '=', organizationId);
  if (filter.experimentId) q = q.where('experiment_id', '=', filter.experimentId);
  if (filter.datasetId) q = q.where('dataset_id', '=', filter.datasetId);
  return q.orderBy('created_at').orderBy('id').execute();
}

export async function requireImport(db: Executor, organizationId: string, id: string): Promise<LogImportRow> {
  const row = await db.selectFrom('log_imports').selectAll().where('id', '=', id).where('organization_id', '=', organizationId).executeTakeFirst();
  if (!row) throw notFound(`no import ${id}`);
  return row;
}
