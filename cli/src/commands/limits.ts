import { SIGNAL_NAME_PREFIX, type CreateLimitRuleRequest, type LimitRule } from '@sortie/contracts';
import type { CommandSpec, Values } from '../core/context.ts';
import { integerValue, locateDataset, stringValue } from '../core/context.ts';
import { CliError } from '../core/exit-codes.ts';
import { json, table } from '../core/output.ts';
import { record } from './commands.ts';

/** The bound as people read it: `above 0.5`, `below -3`, `outside [-0.5, 0.5]`. */
export function describeBound(rule: Pick<LimitRule, 'condition' | 'low' | 'high'>): string {
  if (rule.condition === 'above') return `above ${rule.high}`;
  if (rule.condition === 'below') return `below ${rule.low}`;
  return `outside [${rule.low}, ${rule.high}]`;
}

function aNumber(flag: string, raw: string): number {
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n)) throw new CliError(`--${flag} must be a number, not "${raw}"`);
  return n;
}

/** The one bound flag given: --above X, --below X or --outside LOW,HIGH (write a negative as --below=-3). */
export function boundFromFlags(values: Values): Pick<CreateLimitRuleRequest, 'condition' | 'low' | 'high'> {
  const given = (['above', 'below', 'outside'] as const).filter((flag) => stringValue(values, flag) !== undefined);
  if (given.length !== 1) throw new CliError('give exactly one of --above X, --below X, --outside LOW,HIGH');
  const flag = given[0]!;
  const raw = stringValue(values, flag)!;
  if (flag === 'above') return { condition: 'above', high: aNumber(flag, raw) };
  if (flag === 'below') return { condition: 'below', low: aNumber(flag, raw) };
  const parts = raw.split(',');
  if (parts.length !== 2) throw new CliError(`--outside takes LOW,HIGH (e.g. --outside=-0.5,0.5), not "${raw}"`);
  return { condition: 'outside', low: aNumber(flag, parts[0]!), high: aNumber(flag, parts[1]!) };
}

export const LIMITS_GROUP: CommandSpec[] = [
  {
    words: ['limits', 'list'],
    usage: '[datasetId]',
    summary: "list a dataset's limit rules (its own and its experiment's), or --experiment ID's",
    options: { experiment: { type: 'string' } },
    required: 0,
    maxPositionals: 1,
    async run(ctx) {
      const datasetId = ctx.args[0];
      const experimentId = stringValue(ctx.values, 'experiment');
      if (!datasetId && !experimentId) throw new CliError('name a dataset, or --experiment ID');
      const rules = await ctx.client.limits.list({ ...(datasetId && { datasetId }), ...(experimentId && { experimentId }) });
      ctx.out(
        ctx.json
          ? json(rules)
          : table(
              ['ID', 'NAME', 'WATCHES', 'SIGNAL', 'BOUND', 'HOLD MS', 'SEVERITY'],
              rules.map((r) => [r.id, r.name, r.datasetId ?? `every dataset of ${r.experimentId}`, r.signal, describeBound(r), r.holdMs, r.severity]),
            ),
      );
    },
  },
  {
    words: ['limits', 'create'],
    usage: '<signal>',
    summary:
      'watch a signal ("3" for a wide ch_3, mavlink.ATTITUDE.roll) on --dataset ID or on every dataset of --experiment ID: ' +
      '--above X | --below X | --outside LOW,HIGH (a negative as --below=-3), --hold MS, --severity warning|critical, --name TEXT',
    options: {
      dataset: { type: 'string' },
      experiment: { type: 'string' },
      above: { type: 'string' },
      below: { type: 'string' },
      outside: { type: 'string' },
      hold: { type: 'string' },
      severity: { type: 'string' },
      name: { type: 'string' },
    },
    required: 1,
    async run(ctx) {
      const signal = ctx.args[0]!;
      const datasetId = stringValue(ctx.values, 'dataset');
      const experimentId = stringValue(ctx.values, 'experiment') ?? (datasetId ? (await locateDataset(ctx, datasetId)).experiment.id : undefined);
      if (!experimentId) throw new CliError('give --dataset ID (one dataset) or --experiment ID (every dataset of the experiment)');
      const bound = boundFromFlags(ctx.values);
      const severity = stringValue(ctx.values, 'severity') ?? 'warning';
      if (severity !== 'warning' && severity !== 'critical') throw new CliError(`--severity is warning or critical, not "${severity}"`);
      const label = signal.startsWith(SIGNAL_NAME_PREFIX) ? signal.slice(SIGNAL_NAME_PREFIX.length) : `ch_${signal}`;
      const rule = await ctx.client.limits.create({
        experimentId,
        ...(datasetId && { datasetId }),
        signal,
        ...bound,
        holdMs: integerValue(ctx.values, 'hold', { min: 0, max: 3_600_000 }) ?? 0,
        severity,
        name: stringValue(ctx.values, 'name') ?? `${label} ${describeBound({ low: null, high: null, ...bound })}`,
      });
      ctx.out(
        ctx.json
          ? json(rule)
          : record({ id: rule.id, name: rule.name, watches: rule.datasetId ?? `every dataset of ${rule.experimentId}`, signal: rule.signal, bound: describeBound(rule), holdMs: rule.holdMs, severity: rule.severity }),
      );
    },
  },
  {
    words: ['limits', 'delete'],
    usage: '<ruleId>',
    summary: 'stop watching a rule (an open crossing ends; its LIMIT events stay)',
    required: 1,
    async run(ctx) {
      const answer = await ctx.client.limits.delete({ id: ctx.args[0]! });
      ctx.out(ctx.json ? json(answer) : `deleted ${ctx.args[0]}\n`);
    },
  },
];
