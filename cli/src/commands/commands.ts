import type { CommandRecord } from '@sortie/contracts';
import type { CommandSpec, Context } from '../core/context.ts';
import { integerValue, locateDataset, stringValue } from '../core/context.ts';
import { CliError, EXIT } from '../core/exit-codes.ts';
import { json, table } from '../core/output.ts';

/** A record as `key  value` lines: the shape for one thing, where a table is for many. */
export function record(fields: Record<string, unknown>): string {
  const width = Math.max(...Object.keys(fields).map((k) => k.length));
  return (
    Object.entries(fields)
      .map(([k, v]) => `${k.padEnd(width)}  ${v === null || v === undefined || v === '' ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
      .join('\n') + '\n'
  );
}

function commandFields(c: CommandRecord): Record<string, unknown> {
  return {
    id: c.id,
    command: c.commandText,
    args: c.args,
    status: c.status,
    detail: c.statusDetail,
    relTime: c.relTime,
    dataset: c.datasetId,
    issuedAt: c.issuedAt,
    queuedAt: c.queuedAt,
    ackDeadline: c.ackDeadlineAt,
    ackedAt: c.ackedAt,
    vehicleTime: c.vehicleTime,
    deliveryAttempts: c.deliveryAttempts,
    ...(c.retractedAt && { retractedAt: c.retractedAt }),
  };
}

const FINAL = new Set(['acked', 'nacked', 'timed_out']);

export const COMMANDS_GROUP: CommandSpec[] = [
  {
    words: ['commands', 'list'],
    usage: '<datasetId>',
    summary: "list a dataset's commands by relTime",
    required: 1,
    async run(ctx) {
      const { experiment } = await locateDataset(ctx, ctx.args[0]!);
      const commands = await ctx.client.commands.list({ experimentId: experiment.id, datasetId: ctx.args[0]! });
      ctx.out(
        ctx.json
          ? json(commands)
          : table(
              ['ID', 'REL TIME', 'COMMAND', 'STATUS', 'ISSUED'],
              commands.map((c) => [c.id, c.relTime, c.commandText, c.retractedAt ? `${c.status} (retracted)` : c.status, c.issuedAt]),
            ),
      );
    },
  },
  {
    words: ['commands', 'create'],
    usage: '<datasetId> <commandText>',
    summary: 'log a command on a dataset (--args JSON, --rel-time SECONDS (0), --template KEY, --description, --category, --client-token)',
    options: {
      args: { type: 'string' },
      'rel-time': { type: 'string' },
      template: { type: 'string' },
      description: { type: 'string' },
      category: { type: 'string' },
      'client-token': { type: 'string' },
    },
    required: 2,
    async run(ctx) {
      const [datasetId, commandText] = ctx.args as [string, string];
      let args: Record<string, unknown> | undefined;
      const rawArgs = stringValue(ctx.values, 'args');
      if (rawArgs !== undefined) {
        try {
          args = JSON.parse(rawArgs) as Record<string, unknown>;
        } catch {
          throw new CliError(`--args must be a JSON object, e.g. '{"altitude":30}', not ${rawArgs}`);
        }
      }
      const relTimeText = stringValue(ctx.values, 'rel-time') ?? '0';
      const relTime = Number(relTimeText);
      if (relTimeText.trim() === '' || !Number.isFinite(relTime)) throw new CliError(`--rel-time must be a number of seconds, not "${relTimeText}"`);
      const { experiment } = await locateDataset(ctx, datasetId);
      const optional = (flag: string, field: string) => {
        const value = stringValue(ctx.values, flag);
        return value === undefined ? {} : { [field]: value };
      };
      const command = await ctx.client.commands.create({
        experimentId: experiment.id,
        datasetId,
        commandText,
        relTime,
        ...(args !== undefined && { args }),
        ...optional('template', 'templateKey'),
        ...optional('description', 'description'),
        ...optional('category', 'category'),
        ...optional('client-token', 'clientToken'),
      });
      ctx.out(ctx.json ? json(command) : record({ ...commandFields(command), duplicate: command.duplicate }));
    },
  },
  {
    words: ['commands', 'arm'],
    usage: '<datasetId>',
    summary: 'arm a dataset so its commands can be dispatched (--ttl SECONDS, default 900; --reason TEXT)',
    options: { ttl: { type: 'string' }, reason: { type: 'string' } },
    required: 1,
    async run(ctx) {
      const ttlSeconds = integerValue(ctx.values, 'ttl', { min: 1, max: 10_000_000 });
      const reason = stringValue(ctx.values, 'reason');
      const arming = await ctx.client.datasets.arm({
        datasetId: ctx.args[0]!,
        ...(ttlSeconds !== undefined && { ttlSeconds }),
        ...(reason !== undefined && { reason }),
      });
      ctx.out(ctx.json ? json(arming) : record({ dataset: arming.datasetId, armed: arming.armed, armedAt: arming.armedAt, expiresAt: arming.expiresAt, reason: arming.reason }));
    },
  },
  {
    words: ['commands', 'disarm'],
    usage: '<datasetId>',
    summary: 'disarm a dataset',
    required: 1,
    async run(ctx) {
      const arming = await ctx.client.datasets.disarm({ datasetId: ctx.args[0]! });
      ctx.out(ctx.json ? json(arming) : record({ dataset: arming.datasetId, armed: arming.armed, disarmedAt: arming.disarmedAt }));
    },
  },
  {
    words: ['commands', 'dispatch'],
    usage: '<commandId>',
    summary: "queue a command for delivery to the organization's webhook endpoints (--ack-timeout SECONDS, default 60)",
    options: { 'ack-timeout': { type: 'string' } },
    required: 1,
    async run(ctx) {
      const ackTimeoutSeconds = integerValue(ctx.values, 'ack-timeout', { min: 1, max: 1_000_000 });
      const answer = await ctx.client.commands.dispatch({ commandId: ctx.args[0]!, ...(ackTimeoutSeconds !== undefined && { ackTimeoutSeconds }) });
      ctx.out(
        ctx.json
          ? json(answer)
          : record({ id: answer.commandId, status: answer.status, ackDeadline: answer.ackDeadline, endpoints: answer.endpoints.map((e) => e.url).join(', ') }),
      );
    },
  },
  {
    words: ['commands', 'watch'],
    usage: '<commandId>',
    summary: "follow a command's status until acked, nacked or timed out (--interval SECONDS, 1; --timeout SECONDS)",
    options: { interval: { type: 'string' }, timeout: { type: 'string' } },
    required: 1,
    async run(ctx) {
      const commandId = ctx.args[0]!;
      const intervalMs = (integerValue(ctx.values, 'interval', { min: 1, max: 3600 }) ?? 1) * 1000;
      const timeout = integerValue(ctx.values, 'timeout', { min: 1, max: 1_000_000 });
      const giveUpAt = timeout === undefined ? Infinity : Date.now() + timeout * 1000;
      let command = await ctx.client.commands.get({ commandId });
      let shown = '';
      for (;;) {
        const line = `${command.status}${command.statusDetail ? `: ${command.statusDetail}` : ''}`;
        if (line !== shown && !ctx.json) {
          ctx.out(`${new Date().toISOString()}  ${line}${command.status === 'queued' ? ` (ack deadline ${command.ackDeadlineAt ?? '-'}, attempts ${command.deliveryAttempts})` : ''}\n`);
          shown = line;
        }
        if (FINAL.has(command.status)) break;
        if (Date.now() >= giveUpAt) {
          if (ctx.json) ctx.out(json(command));
          throw new CliError(`still ${command.status} after ${timeout} s`, EXIT.failed);
        }
        await new Promise((resolve) => setTimeout(resolve, intervalMs));
        command = await ctx.client.commands.get({ commandId });
      }
      if (ctx.json) ctx.out(json(command));
      else if (command.status === 'acked') ctx.out(record({ vehicleTime: command.vehicleTime, ackedAt: command.ackedAt, payload: command.ackPayload }));
      return command.status === 'acked' ? EXIT.ok : EXIT.commandFailed;
    },
  },
  {
    words: ['commands', 'retract'],
    usage: '<commandId>',
    summary: 'retract a command so it can no longer be dispatched (--reason TEXT)',
    options: { reason: { type: 'string' } },
    required: 1,
    async run(ctx) {
      const reason = stringValue(ctx.values, 'reason');
      const command = await ctx.client.commands.retract({ commandId: ctx.args[0]!, ...(reason !== undefined && { reason }) });
      ctx.out(ctx.json ? json(command) : record(commandFields(command)));
    },
  },
  {
    words: ['deliveries'],
    usage: '<commandId>',
    summary: "a command's webhook delivery attempts, newest first",
    required: 1,
    async run(ctx) {
      const attempts = await ctx.client.webhooks.deliveries({ commandId: ctx.args[0]! });
      ctx.out(
        ctx.json
          ? json(attempts)
          : table(
              ['ATTEMPTED', 'ATTEMPT', 'ENDPOINT', 'STATUS', 'MS', 'ERROR'],
              attempts.map((a) => [a.attemptedAt, a.attempt, a.endpointUrl, a.statusCode || 'no answer', a.durationMs, a.error]),
            ),
      );
    },
  },
];
