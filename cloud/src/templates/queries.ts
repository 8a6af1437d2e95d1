import type { CommandTemplate } from '@sortie/contracts';
import type { CommandTemplateRow } from '../db/schema.ts';
import type { Executor } from '../db/executor.ts';

export function toCommandTemplate(row: CommandTemplateRow): CommandTemplate {
  return {
    key: row.key,
    description: row.description,
    category: row.category,
    destructive: row.destructive,
    argsSchema: row.args_schema ?? null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/** The organization's template with this key, or undefined. Keys are case-sensitive. */
export function findTemplate(db: Executor, organizationId: string, key: string): Promise<CommandTemplateRow | undefined> {
  return db
    .selectFrom('command_templates')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('key', '=', key)
    .executeTakeFirst();
}

export function listTemplates(db: Executor, organizationId: string): Promise<CommandTemplateRow[]> {
  return db.selectFrom('command_templates').selectAll().where('organization_id', '=', organizationId).orderBy('key').execute();
}

/** Insert; a duplicate key surfaces as the unique violation of `command_templates_org_key`. */
export function insertTemplate(
  db: Executor,
  input: {
    organizationId: string;
    key: string;
    description: string;
    category: string;
    destructive: boolean;
    argsSchema: Record<string, unknown> | null;
    now: Date;
  },
): Promise<CommandTemplateRow> {
  return db
    .insertInto('command_templates')
    .values({
      id: crypto.randomUUID(),
      organization_id: input.organizationId,
      key: input.key,
      description: input.description,
      category: input.category,
      destructive: input.destructive,
      args_schema: input.argsSchema === null ? null : JSON.stringify(input.argsSchema),
      created_at: input.now,
      updated_at: input.now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Change the given fields of the template with this key; undefined when there is none. */
export function updateTemplate(
  db: Executor,
  input: {
    organizationId: string;
    key: string;
    description?: string | undefined;
    category?: string | undefined;
    destructive?: boolean | undefined;
    argsSchema?: Record<string, unknown> | null | undefined;
    now: Date;
  },
): Promise<CommandTemplateRow | undefined> {
  return db
    .updateTable('command_templates')
    .set({
      ...(input.description !== undefined && { description: input.description }),
      ...(input.category !== undefined && { category: input.category }),
      ...(input.destructive !== undefined && { destructive: input.destructive }),
      ...(input.argsSchema !== undefined && { args_schema: input.argsSchema === null ? null : JSON.stringify(input.argsSchema) }),
      updated_at: input.now,
    })
    .where('organization_id', '=', input.organizationId)
    .where('key', '=', input.key)
    .returningAll()
    .executeTakeFirst();
}
