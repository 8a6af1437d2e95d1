import type { CreateCommandRequest } from '@sortie/contracts';
import type { AppContext } from '../platform/context.ts';
import { requireDataset } from '../datasets/queries.ts';
import type { CommandRow } from '../db/schema.ts';
import type { Principal } from '../auth/principal.ts';

/**
 * Log a command: an audit row with status `logged`; nothing is sent. A repeated clientToken returns the
 * row already written. The unique index decides, so two racing creates cannot both insert.
 */
export async function createCommand(
  ctx: AppContext,
  principal: Principal,
  body: CreateCommandRequest,
  template: { category: string; destructive: boolean } | undefined,
): Promise<{ row: CommandRow; duplicate: boolean }> {
  const dataset = await requireDataset(ctx.db, principal.organizationId, body.datasetId, body.experimentId);
  const inserted = await ctx.db
    .insertInto('commands')
    .values({
      id: crypto.randomUUID(),
      organization_id: principal.organizationId,
      experiment_id: dataset.experiment_id,
      dataset_id: dataset.id,
      command_text: body.commandText,
      description: body.description,
      args: JSON.stringify(body.args),
      template_key: body.templateKey,
      category: body.category || template?.category || '',
      rel_time: body.relTime,
      issued_at: ctx.clock.now(),
      // Logged through the API: no issuing user, the key is recorded instead (spec rule 3).
      issued_by_name: '',
      issued_by_email: '',
      issued_by_key_id: principal.keyId,
      status: 'logged',
      status_detail: '',
      client_token: body.clientToken ?? null,
      destructive: template?.destructive ?? false,
    })
    .onConflict((oc) => oc.columns(['organization_id', 'client_token']).where('client_token', 'is not', null).doNothing())
    .returningAll()
    .executeTakeFirst();
  if (inserted) return { row: inserted, duplicate: false };

  const existing = await ctx.db
    .selectFrom('commands')
    .selectAll()
    .where('organization_id', '=', principal.organizationId)
    .where('client_token', '=', body.clientToken!)
    .executeTakeFirstOrThrow();
  return { row: existing, duplicate: true };
}
