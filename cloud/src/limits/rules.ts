import {
  isWideLimitSignal,
  limitBoundsProblems,
  type CreateLimitRuleRequest,
  type ErrorDetail,
  type LimitRule,
  type ListLimitRulesQuery,
  type UpdateLimitRuleRequest,
} from '@sortie/contracts';
import { sql } from 'kysely';
import type { AppContext } from '../platform/context.ts';
import { requireDataset, requireExperiment } from '../datasets/queries.ts';
import type { Executor } from '../db/executor.ts';
import type { DatasetRow, LimitRuleRow } from '../db/schema.ts';
import { invalidRequest, notFound } from '../platform/errors.ts';
import { isNumericMavlinkSignal } from '../telemetry/sinks.ts';
import type { OutboxJob } from '../platform/outbox.ts';
import { notifyLimitEvents } from './notify.ts';
import { endLimitEvent, type ChangedLimitEvent } from './states.ts';

/** The use-cases behind /api/limits/*: rules of the caller's organization, and what changing one does to its open crossings. */

export function toLimitRule(row: LimitRuleRow): LimitRule {
  return {
    id: row.id,
    experimentId: row.experiment_id,
    datasetId: row.dataset_id,
    name: row.name,
    signal: row.signal,
    condition: row.condition,
    low: row.low,
    high: row.high,
    holdMs: row.hold_ms,
    severity: row.severity,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/**
 * Whether `signal` can be watched on what the rule applies to: a wide dataset's channel by index, a
 * MAVLink dataset's numeric signal by name; an experiment's rule may name either (it watches the
 * datasets of its shape). A MAVLink name must be a numeric field of the dialect, so a typo is a 400,
 * not a rule that never fires.
 */
function signalProblem(signal: string, shape: DatasetRow['storage_shape'] | undefined): ErrorDetail | undefined {
  const wide = isWideLimitSignal(signal);
  if (shape === 'narrow' && wide) return { field: 'signal', message: 'this dataset is MAVLink (narrow): name a signal such as mavlink.ATTITUDE.roll' };
  if (shape === 'wide' && !wide) return { field: 'signal', message: 'this dataset is wide: name a channel by its index as Query does ("3" for ch_3)' };
  if (!wide && !isNumericMavlinkSignal(signal)) return { field: 'signal', message: `no numeric MAVLink field is named ${signal} in this server's dialect` };
  return undefined;
}

function refuse(details: ErrorDetail[]): never {
  const first = details[0]!;
  throw invalidRequest(`invalid limit rule: ${first.field} ${first.message}`, details);
}

export async function createRule(ctx: AppContext, organizationId: string, body: CreateLimitRuleRequest): Promise<LimitRuleRow> {
  const dataset = body.datasetId ? await requireDataset(ctx.db, organizationId, body.datasetId, body.experimentId) : undefined;
  const experimentId = dataset?.experiment_id ?? (await requireExperiment(ctx.db, organizationId, body.experimentId)).id;
  const problem = signalProblem(body.signal, dataset?.storage_shape);
  if (problem) refuse([problem]);
  const row = await ctx.db
    .insertInto('limit_rules')
    .values({
      id: crypto.randomUUID(),
      organization_id: organizationId,
      experiment_id: experimentId,
      dataset_id: dataset?.id ?? null,
      name: body.name,
      signal: body.signal,
      condition: body.condition,
      low: body.low ?? null,
      high: body.high ?? null,
      hold_ms: body.holdMs,
      severity: body.severity,
      // created_at and updated_at by the database's clock (as experiments): the list's order is creation order.
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  ctx.limits.rulesChanged(organizationId);
  return row;
}

/** A dataset's rules (its own and its experiment's), or every rule of an experiment; oldest first. */
export async function listRules(db: Executor, organizationId: string, query: ListLimitRulesQuery): Promise<LimitRuleRow[]> {
  let select = db.selectFrom('limit_rules').selectAll().where('organization_id', '=', organizationId);
  if (query.datasetId) {
    const dataset = await requireDataset(db, organizationId, query.datasetId, query.experimentId);
    select = select.where((eb) => eb.or([eb('dataset_id', '=', dataset.id), eb.and([eb('dataset_id', 'is', null), eb('experiment_id', '=', dataset.experiment_id)])]));
  } else {
    const experiment = await requireExperiment(db, organizationId, query.experimentId!);
    select = select.where('experiment_id', '=', experiment.id);
  }
  return select.orderBy('created_at').orderBy('id').execute();
}

export async function requireRule(db: Executor, organizationId: string, id: string, lock = false): Promise<LimitRuleRow> {
  let select = db.selectFrom('limit_rules').selectAll().where('id', '=', id).where('organization_id', '=', organizationId);
  if (lock) select = select.forUpdate();
  const row = await select.executeTakeFirst();
  if (!row) throw notFound(`no limit rule ${id}`);
  return row;
}

/**
 * Change a rule. Its open crossings were judged against the old rule, so they end first (at the newest
 * sample the rule had seen on each dataset) and every state of the rule starts again from clear. The
 * rule's row lock keeps ingest, which writes states only under a share lock of the rule as it read it,
 * from storing anything judged by the old rule after this commits.
 */
export async function updateRule(ctx: AppContext, organizationId: string, body: UpdateLimitRuleRequest): Promise<LimitRuleRow> {
  const outcome = await ctx.db.transaction().execute(async (tx) => {
    const old = await requireRule(tx, organizationId, body.id, true);
    const next = {
      name: body.name ?? old.name,
      signal: body.signal ?? old.signal,
      condition: body.condition ?? old.condition,
      low: body.low === undefined ? old.low : body.low,
      high: body.high === undefined ? old.high : body.high,
      hold_ms: body.holdMs ?? old.hold_ms,
      severity: body.severity ?? old.severity,
    };
    // A condition changed alone drops the bound the new one does not use (above 5 → below 1 needs only `low`).
    if (body.condition !== undefined && body.condition !== old.condition) {
      if (next.condition === 'above' && body.low === undefined) next.low = null;
      if (next.condition === 'below' && body.high === undefined) next.high = null;
    }
    const details: ErrorDetail[] = [...limitBoundsProblems(next)];
    if (body.signal !== undefined) {
      const shape = old.dataset_id ? (await requireDataset(tx, organizationId, old.dataset_id)).storage_shape : undefined;
      const problem = signalProblem(next.signal, shape);
      if (problem) details.push(problem);
    }
    if (details.length > 0) refuse(details);
    const ended = await endOpenCrossings(tx, old);
    const jobs = await notifyLimitEvents(tx, ctx.outbox, organizationId, ended);
    const row = await tx.updateTable('limit_rules').set({ ...next, updated_at: sql<Date>`now()` }).where('id', '=', old.id).returningAll().executeTakeFirstOrThrow();
    return { row, ended, jobs };
  });
  afterChange(ctx, organizationId, outcome.ended, outcome.jobs);
  return outcome.row;
}

/** Delete a rule: its open crossings end first; its LIMIT events stay on the timeline. */
export async function deleteRule(ctx: AppContext, organizationId: string, id: string): Promise<void> {
  const outcome = await ctx.db.transaction().execute(async (tx) => {
    const old = await requireRule(tx, organizationId, id, true);
    const ended = await endOpenCrossings(tx, old);
    const jobs = await notifyLimitEvents(tx, ctx.outbox, organizationId, ended);
    await tx.deleteFrom('limit_rules').where('id', '=', old.id).execute();
    return { ended, jobs };
  });
  afterChange(ctx, organizationId, outcome.ended, outcome.jobs);
}

/** End the rule's open crossings at the newest sample it had seen, and clear all its states. */
async function endOpenCrossings(tx: Executor, rule: LimitRuleRow): Promise<ChangedLimitEvent[]> {
  const open = await tx
    .selectFrom('limit_states')
    .select([
      'dataset_id',
      'event_id',
      sql<number>`since_us::float8`.as('since_us'),
      sql<number>`coalesce(last_us, since_us)::float8`.as('end_us'),
      'worst_value',
      sql<number>`worst_us::float8`.as('worst_us'),
    ])
    .where('rule_id', '=', rule.id)
    .where('phase', '=', 'active')
    .where('event_id', 'is not', null)
    .execute();
  const ended: ChangedLimitEvent[] = [];
  for (const s of open) {
    const crossing = { startUs: s.since_us, endUs: s.end_us, worstValue: s.worst_value!, worstUs: s.worst_us };
    const data = await endLimitEvent(tx, rule, s.event_id!, crossing);
    if (data) ended.push({ eventId: s.event_id!, datasetId: s.dataset_id, phase: 'ended', data });
  }
  await tx.deleteFrom('limit_states').where('rule_id', '=', rule.id).execute();
  return ended;
}

/**
 * After the commit: this replica's ingest reads the rules again, followers of datasets whose crossing
 * ended read it, and endpoints that opted in are told.
 */
function afterChange(ctx: AppContext, organizationId: string, ended: readonly ChangedLimitEvent[], jobs: readonly OutboxJob[]): void {
  ctx.limits.rulesChanged(organizationId);
  for (const datasetId of new Set(ended.map((e) => e.datasetId))) ctx.live.committed(datasetId, 'events');
  if (jobs.length > 0) ctx.outbox.committed(jobs);
}
