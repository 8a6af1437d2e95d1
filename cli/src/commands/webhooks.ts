import type { WebhookEndpoint } from '@sortie/contracts';
import type { CommandSpec } from '../core/context.ts';
import { integerValue, stringValue } from '../core/context.ts';
import { CliError } from '../core/exit-codes.ts';
import { json, table } from '../core/output.ts';
import { record } from './commands.ts';

const SECRET_NOTE = 'The secret is shown only now: give it to the receiver (verifyWebhook checks signatures with it).\n';

/** An endpoint's state as one cell: disabled and why, or enabled, with its failure streak when it fails. */
function stateOf(e: WebhookEndpoint): string {
  if (e.disabledAt) return `disabled: ${e.disabledReason ?? e.disabledAt}`;
  const failing = e.consecutiveFailures > 0 ? `, ${e.consecutiveFailures} failed in a row` : '';
  return e.rotatingUntil ? `enabled${failing}, rotating until ${e.rotatingUntil}` : `enabled${failing}`;
}

/** `503 at 2026-…Z`, `no answer at …` (a refused or timed-out attempt), or empty before the first. */
function lastAttemptOf(e: WebhookEndpoint): string {
  if (!e.lastAttempt) return '';
  return `${e.lastAttempt.statusCode === 0 ? 'no answer' : e.lastAttempt.statusCode} at ${e.lastAttempt.at}`;
}

export const WEBHOOKS_GROUP: CommandSpec[] = [
  {
    words: ['webhooks', 'list'],
    usage: '',
    summary: 'list webhook endpoints (disabled ones included; never secrets)',
    required: 0,
    async run(ctx) {
      const endpoints = await ctx.client.webhooks.list();
      ctx.out(
        ctx.json
          ? json(endpoints)
          : table(
              ['ID', 'LABEL', 'URL', 'STATE', 'LAST ATTEMPT', 'CREATED'],
              endpoints.map((e) => [e.id, e.label, e.url, stateOf(e), lastAttemptOf(e), e.createdAt]),
            ),
      );
    },
  },
  {
    words: ['webhooks', 'create'],
    usage: '<url>',
    summary: 'register an https endpoint (--label TEXT; --limit-events: limit crossings too, not only commands); prints its whsec_ secret once',
    options: { label: { type: 'string' }, 'limit-events': { type: 'boolean' } },
    required: 1,
    async run(ctx) {
      const url = ctx.args[0]!;
      const endpoint = await ctx.client.webhooks.create({ url, label: stringValue(ctx.values, 'label') ?? new URL(url).host, limitEvents: ctx.values['limit-events'] === true });
      ctx.out(ctx.json ? json(endpoint) : record({ id: endpoint.id, label: endpoint.label, url: endpoint.url, limitEvents: endpoint.limitEvents, secret: endpoint.secret }));
      if (!ctx.json) ctx.note(SECRET_NOTE);
    },
  },
  {
    words: ['webhooks', 'update'],
    usage: '<endpointId>',
    summary: "change an endpoint's --label TEXT, or whether it receives limit crossings (--limit-events on|off)",
    options: { label: { type: 'string' }, 'limit-events': { type: 'string' } },
    required: 1,
    async run(ctx) {
      const flag = stringValue(ctx.values, 'limit-events');
      if (flag !== undefined && flag !== 'on' && flag !== 'off') throw new CliError(`--limit-events is on or off, not "${flag}"`);
      const label = stringValue(ctx.values, 'label');
      const endpoint = await ctx.client.webhooks.update({ id: ctx.args[0]!, ...(label !== undefined && { label }), ...(flag !== undefined && { limitEvents: flag === 'on' }) });
      ctx.out(ctx.json ? json(endpoint) : record({ id: endpoint.id, label: endpoint.label, url: endpoint.url, limitEvents: endpoint.limitEvents }));
    },
  },
  {
    words: ['webhooks', 'rotate'],
    usage: '<endpointId>',
    summary: "rotate an endpoint's secret (--overlap SECONDS the old one stays valid, default 0); prints the new secret once",
    options: { overlap: { type: 'string' } },
    required: 1,
    async run(ctx) {
      const overlapSeconds = integerValue(ctx.values, 'overlap', { min: 0, max: 10_000_000 }) ?? 0;
      const endpoint = await ctx.client.webhooks.rotate({ id: ctx.args[0]!, overlapSeconds });
      ctx.out(ctx.json ? json(endpoint) : record({ id: endpoint.id, url: endpoint.url, secret: endpoint.secret, oldSecretValidUntil: endpoint.rotatingUntil }));
      if (!ctx.json) ctx.note(SECRET_NOTE);
    },
  },
  {
    words: ['webhooks', 'test'],
    usage: '<endpointId>',
    summary: 'send a signed ping to an endpoint now and show what it answered',
    required: 1,
    async run(ctx) {
      const attempt = await ctx.client.webhooks.test({ endpointId: ctx.args[0]! });
      ctx.out(
        ctx.json
          ? json(attempt)
          : record({ endpoint: attempt.endpointUrl, status: attempt.statusCode || 'no answer', ms: attempt.durationMs, error: attempt.error, response: attempt.response.slice(0, 200) }),
      );
      // A ping the receiver did not accept is the answer the user asked for, but not a success.
      return attempt.statusCode >= 200 && attempt.statusCode < 300 ? 0 : 1;
    },
  },
  {
    words: ['webhooks', 'delete'],
    usage: '<endpointId>',
    summary: 'delete an endpoint (its delivery history is kept)',
    required: 1,
    async run(ctx) {
      const answer = await ctx.client.webhooks.delete({ id: ctx.args[0]! });
      ctx.out(ctx.json ? json(answer) : `deleted ${ctx.args[0]}\n`);
    },
  },
];
