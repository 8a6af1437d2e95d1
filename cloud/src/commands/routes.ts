import {
  AckRequestSchema,
  CreateCommandRequestSchema,
  DispatchRequestSchema,
  GetCommandQuerySchema,
  ListCommandsQuerySchema,
  RetractCommandRequestSchema,
} from '@sortie/contracts';
import { Hono } from 'hono';
import { requireScope } from '../auth/require-scope.ts';
import type { AppContext } from '../platform/context.ts';
import { requireDataset } from '../datasets/queries.ts';
import { ServiceError, conflict, invalidRequest, notFound } from '../platform/errors.ts';
import type { AppEnv } from '../http/app-env.ts';
import type { AckOutcome } from '../platform/metrics.ts';
import { readJson, readQuery } from '../http/validation.ts';
import { validateArgs } from '../templates/args-schema.ts';
import { findTemplate } from '../templates/queries.ts';
import { acknowledge } from './ack.ts';
import { createCommand } from './create-command.ts';
import { dispatchCommand } from './dispatch.ts';
import { commandExists, getCommand, listCommands, retractCommand } from './queries.ts';
import { toCommandRecord } from './records.ts';

export function commandsRoutes(ctx: AppContext) {
  return new Hono<AppEnv>()
    .post('/commands/create', requireScope(ctx, 'commands:write'), async (c) => {
      const body = await readJson(c, CreateCommandRequestSchema);
      const principal = c.get('principal');
      let template;
      if (body.templateKey) {
        template = await findTemplate(ctx.db, principal.organizationId, body.templateKey);
        if (!template) {
          throw invalidRequest(`no command template "${body.templateKey}"`, [{ field: 'templateKey', message: 'no such template in this organization' }]);
        }
        const details = validateArgs(template, body.args);
        if (details.length > 0) throw invalidRequest(`args do not match template "${template.key}": ${details[0]!.field} ${details[0]!.message}`, details);
      }
      const { row, duplicate } = await createCommand(ctx, principal, body, template);
      if (!duplicate) ctx.live.committed(row.dataset_id, 'commands');
      return c.json({ ...toCommandRecord(row), duplicate }, duplicate ? 200 : 201);
    })
    .get('/commands/list', requireScope(ctx, 'commands:read'), async (c) => {
      const query = readQuery(c, ListCommandsQuerySchema);
      const dataset = await requireDataset(ctx.db, c.get('principal').organizationId, query.datasetId, query.experimentId);
      const rows = await listCommands(ctx.db, dataset.id);
      return c.json(rows.map(toCommandRecord));
    })
    .get('/commands/get', requireScope(ctx, 'commands:read'), async (c) => {
      const query = readQuery(c, GetCommandQuerySchema);
      const row = await getCommand(ctx.db, c.get('principal').organizationId, query.commandId);
      // Another organization's command answers like a missing one: the id tells nothing across organizations.
      if (!row) throw notFound(`no command ${query.commandId}`);
      return c.json(toCommandRecord(row));
    })
    .post('/commands/retract', requireScope(ctx, 'commands:write'), async (c) => {
      const body = await readJson(c, RetractCommandRequestSchema);
      const organizationId = c.get('principal').organizationId;
      const row = await retractCommand(ctx.db, organizationId, body.commandId, body.reason, ctx.clock.now());
      if (!row) {
        const exists = await commandExists(ctx.db, organizationId, body.commandId);
        throw exists ? conflict('command is already retracted') : notFound(`no command ${body.commandId}`);
      }
      ctx.live.committed(row.dataset_id, 'commands');
      return c.json(toCommandRecord(row));
    })
    .post('/commands/dispatch', requireScope(ctx, 'commands:write'), async (c) => {
      const body = await readJson(c, DispatchRequestSchema);
      return c.json(await dispatchCommand(ctx, c.get('principal').organizationId, body));
    })
    // No API key: the per-command bearer token from the delivery is the credential.
    .post('/commands/ack', async (c) => {
      try {
        const body = await readJson(c, AckRequestSchema);
        const result = await acknowledge(ctx, c.req.header('authorization'), body);
        ctx.metrics.ack(result.duplicate ? 'duplicate' : result.status);
        return c.json(result);
      } catch (error) {
        ctx.metrics.ack(ackFailureOutcome(error));
        throw error;
      }
    });
}

/** The metrics outcome of a failed ack: token failures are 404 (`rejected`), never told apart. */
function ackFailureOutcome(error: unknown): AckOutcome {
  if (!(error instanceof ServiceError)) return 'error';
  switch (error.code) {
    case 'not_found':
      return 'rejected';
    case 'conflict':
      return 'conflict';
    case 'rate_limited':
      return 'rate_limited';
    case 'invalid_request':
    case 'payload_too_large':
      return 'invalid';
    default:
      return 'error';
  }
}
