import { z } from 'zod';
import { isSignalName } from '../mavlink/signal-names.ts';
import { TimestampOut, Uuid, text } from './common.ts';
import { EventSchema } from './events.ts';

/**
 * Limit rules: bounds the server watches on every committed sample of a dataset (or of every dataset of an
 * experiment). A crossing held for `holdMs` becomes a LIMIT event on the dataset's timeline
 * (`LimitEventDataSchema`), updated when it ends.
 */

export const LIMIT_CONDITIONS = ['above', 'below', 'outside'] as const;
export const LimitCondition = z.enum(LIMIT_CONDITIONS);
export type LimitCondition = z.infer<typeof LimitCondition>;

export const LIMIT_SEVERITIES = ['warning', 'critical'] as const;
export const LimitSeverity = z.enum(LIMIT_SEVERITIES);
export type LimitSeverity = z.infer<typeof LimitSeverity>;

/** The longest hold time: an hour. A value must stay beyond its bound this long before the crossing counts. */
export const LIMIT_HOLD_MS_MAX = 3_600_000;
export const LIMIT_NAME_MAX = 200;

/** A wide dataset's channel as Query addresses it: the N of `ch_N`, a canonical decimal. */
const WIDE_SIGNAL = /^(0|[1-9][0-9]{0,8})$/;

/** Whether `signal` is an address a limit can watch: a wide channel index ("3") or a MAVLink signal name. */
export function isLimitSignal(signal: string): boolean {
  return WIDE_SIGNAL.test(signal) || isSignalName(signal);
}

/** Whether `signal` addresses a wide dataset's channel (else it names a MAVLink signal). */
export function isWideLimitSignal(signal: string): boolean {
  return WIDE_SIGNAL.test(signal);
}

export const LimitSignal = text().refine(isLimitSignal, {
  error: 'must be a channel as Query addresses it: a wide channel\'s index ("3" for ch_3) or a MAVLink signal name (mavlink.ATTITUDE.roll)',
});

const Bound = z.number({ error: 'must be a finite number' });
const HoldMs = z
  .number({ error: 'must be an integer number of milliseconds' })
  .int('must be an integer number of milliseconds')
  .min(0, `must be from 0 to ${LIMIT_HOLD_MS_MAX}`)
  .max(LIMIT_HOLD_MS_MAX, `must be from 0 to ${LIMIT_HOLD_MS_MAX} (one hour)`);
const RuleName = text().trim().min(1, `must be 1 to ${LIMIT_NAME_MAX} characters`).max(LIMIT_NAME_MAX, `must be 1 to ${LIMIT_NAME_MAX} characters`);

/**
 * What a condition needs: `above` a `high`, `below` a `low`, `outside` both with low < high; the bound a
 * condition does not use must be absent (or null). One message per field at fault, so `details[].field`
 * names what to fix. Shared by create (on the body) and update (on the rule as it would become).
 */
export function limitBoundsProblems(rule: { condition: LimitCondition; low?: number | null; high?: number | null }): { field: 'low' | 'high'; message: string }[] {
  const low = rule.low ?? null;
  const high = rule.high ?? null;
  const out: { field: 'low' | 'high'; message: string }[] = [];
  const needs = { above: { low: false, high: true }, below: { low: true, high: false }, outside: { low: true, high: true } }[rule.condition];
  if (!needs) return out;
  for (const field of ['low', 'high'] as const) {
    const value = field === 'low' ? low : high;
    if (needs[field] && value === null) out.push({ field, message: `is required when condition is "${rule.condition}"` });
    if (!needs[field] && value !== null) out.push({ field, message: `must be absent when condition is "${rule.condition}" (it bounds only ${rule.condition === 'above' ? 'high' : 'low'})` });
  }
  if (out.length === 0 && rule.condition === 'outside' && !(low! < high!)) out.push({ field: 'high', message: 'must be greater than low' });
  return out;
}

/** A limit rule as the API shows it. `datasetId` null: the rule applies to every dataset of the experiment, those created later included. */
export const LimitRuleSchema = z.object({
  id: Uuid,
  experimentId: Uuid,
  datasetId: Uuid.nullable(),
  name: text(),
  /** As Query addresses it: "3" for a wide dataset's ch_3, `mavlink.ATTITUDE.roll` for a MAVLink one. */
  signal: text(),
  condition: LimitCondition,
  low: z.number().nullable(),
  high: z.number().nullable(),
  holdMs: z.number().int(),
  severity: LimitSeverity,
  createdAt: TimestampOut,
  updatedAt: TimestampOut,
});
export type LimitRule = z.infer<typeof LimitRuleSchema>;
export const ListLimitRulesResponseSchema = z.array(LimitRuleSchema);

/**
 * POST /api/limits/create (datasets:write). With `datasetId` the rule watches that dataset of the
 * experiment; without it, every dataset of the experiment, those created later included. Which bounds
 * a condition takes is a rule across fields, so the schema carries an example the document shows (and
 * its tests send) instead of a smallest instance.
 */
export const CreateLimitRuleRequestSchema = z
  .object({
    experimentId: Uuid,
    datasetId: Uuid.optional(),
    name: RuleName,
    signal: LimitSignal,
    condition: LimitCondition,
    low: Bound.nullable().optional(),
    high: Bound.nullable().optional(),
    /** How long the value must stay beyond the bound before the crossing counts; 0 = at the first sample. */
    holdMs: HoldMs.default(0),
    severity: LimitSeverity.default('warning'),
  })
  .superRefine((body, ctx) => {
    for (const p of limitBoundsProblems(body)) ctx.addIssue({ code: 'custom', path: [p.field], message: p.message });
  })
  .meta({
    examples: [{ experimentId: '00000000-0000-4000-8000-000000000000', name: 'roll limit', signal: 'mavlink.ATTITUDE.roll', condition: 'above', high: 0.5, holdMs: 200, severity: 'critical' }],
  });
export type CreateLimitRuleRequest = z.infer<typeof CreateLimitRuleRequestSchema>;

/**
 * POST /api/limits/update (datasets:write): the fields given replace the rule's; `low`/`high` null
 * removes a bound. What the rule watches (its dataset or experiment) cannot be edited: create another.
 * An open crossing of the rule is ended first (at the newest sample the rule had seen), since it was
 * judged against the old bound.
 */
export const UpdateLimitRuleRequestSchema = z.strictObject(
  {
    id: Uuid,
    name: RuleName.optional(),
    signal: LimitSignal.optional(),
    condition: LimitCondition.optional(),
    low: Bound.nullable().optional(),
    high: Bound.nullable().optional(),
    holdMs: HoldMs.optional(),
    severity: LimitSeverity.optional(),
  },
  { error: (issue) => (issue.code === 'unrecognized_keys' ? `cannot be edited: ${issue.keys.join(', ')}` : undefined) },
);
export type UpdateLimitRuleRequest = z.infer<typeof UpdateLimitRuleRequestSchema>;

/** GET /api/limits/list (datasets:read): a dataset's rules (its own and its experiment's), or an experiment's (all of them). */
export const ListLimitRulesQuerySchema = z
  .object({ datasetId: Uuid.optional(), experimentId: Uuid.optional() })
  .superRefine((q, ctx) => {
    if (q.datasetId === undefined && q.experimentId === undefined) ctx.addIssue({ code: 'custom', path: ['datasetId'], message: 'is required unless experimentId is given' });
  });
export type ListLimitRulesQuery = z.infer<typeof ListLimitRulesQuerySchema>;

/** GET /api/limits/get (datasets:read). */
export const GetLimitRuleQuerySchema = z.object({ id: Uuid });

/** POST /api/limits/delete (datasets:write). An open crossing is ended first; the rule's LIMIT events stay. */
export const DeleteLimitRuleRequestSchema = z.object({ id: Uuid });
export const DeleteLimitRuleResponseSchema = z.object({ id: Uuid, deleted: z.literal(true) });

/**
 * `data` of a LIMIT event (kind `LIMIT`): one per crossing, stored when the crossing has held for
 * `holdMs` (with `start` when the value first went beyond the bound, the event's time) and updated
 * when it ends (`end`, `active` false, the worst value over the whole crossing). The console, Follow
 * and limit webhooks read this shape.
 */
export const LimitEventDataSchema = z.object({
  ruleId: Uuid,
  ruleName: text(),
  signal: text(),
  severity: LimitSeverity,
  condition: LimitCondition,
  low: z.number().nullable(),
  high: z.number().nullable(),
  holdMs: z.number().int(),
  start: TimestampOut,
  end: TimestampOut.nullable(),
  /** The value farthest beyond the bound so far (the whole crossing once it ended). */
  worstValue: z.number(),
  worstTime: TimestampOut,
  active: z.boolean(),
});
export type LimitEventData = z.infer<typeof LimitEventDataSchema>;

/** The event type of a limit notification (`X-Sortie-Event` and the body's `eventType`). */
export const LIMIT_CROSSING_EVENT = 'limit.crossing';

/**
 * The body of a `limit.crossing` delivery, sent to endpoints that opted in (`limitEvents`) when a LIMIT
 * event is stored (its crossing has held: `data.active` true, `data.end` null) and again when it ends
 * (`data.active` false, `data.end` and the worst value set). Signed, retried and counted toward
 * auto-disable like a command's delivery. At least once: deduplicate on (`event.id`, `event.data.active`).
 * `event` is the event as `GET /api/datasets/events` lists it (a MAVLink dataset's on the charts' axis)
 * at that phase, with its experiment and organization.
 */
export const LimitCrossingBodySchema = z.object({
  eventType: z.literal(LIMIT_CROSSING_EVENT),
  sentAt: TimestampOut,
  event: EventSchema.extend({
    experimentId: Uuid,
    organizationId: Uuid,
    kind: z.literal('LIMIT'),
    data: LimitEventDataSchema.loose(),
  }),
});
export type LimitCrossingBody = z.infer<typeof LimitCrossingBodySchema>;
