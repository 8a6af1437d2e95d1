import { CreateCommandTemplateRequestSchema, UpdateCommandTemplateRequestSchema } from '@sortie/contracts';
import { Hono } from 'hono';
import { requireScope } from '../auth/require-scope.ts';
import type { AppContext } from '../platform/context.ts';
import { isUniqueViolation } from '../db/errors.ts';
import { conflict, invalidRequest, notFound } from '../platform/errors.ts';
import type { AppEnv } from '../http/app-env.ts';
import { readJson } from '../http/validation.ts';
import { checkArgsSchema } from './args-schema.ts';
import { insertTemplate, listTemplates, toCommandTemplate, updateTemplate } from './queries.ts';

function requireValidArgsSchema(schema: Record<string, unknown> | null | undefined): void {
  if (schema === null || schema === undefined) return;
  const details = checkArgsSchema(schema);
  if (details.length > 0) {
    const first = details[0]!;
    const more = details.length > 1 ? ` (and ${details.length - 1} more)` : '';
    throw invalidRequest(`invalid argsSchema: ${first.field} ${first.message}${more}`, details);
  }
}

/** /api/commands/templates/* — an addition to the spec (see contracts/src/http/templates.ts). */
export function templatesRoutes(ctx: AppContext) {
  return new Hono<AppEnv>()
    .get('/commands/templates/list', requireScope(ctx, 'commands:read'), async (c) => {
      const rows = await listTemplates(ctx.db, c.get('principal').organizationId);
      return c.json(rows.map(toCommandTemplate));
    })
    .post('/commands/templates/create', requireScope(ctx, 'commands:write'), async (c) => {
      const body = await readJson(c, CreateCommandTemplateRequestSchema);
      requireValidArgsSchema(body.argsSchema);
      try {
        const row = await insertTemplate(ctx.db, { ...body, organizationId: c.get('principal').organizationId, now: ctx.clock.now() });
        return c.json(toCommandTemplate(row), 201);
      } catch (error) {
        if (isUniqueViolation(error)) throw conflict(`a command template with key "${body.key}" already exists`);
        throw error;
      }
    })
    .post('/commands/templates/update', requireScope(ctx, 'commands:write'), async (c) => {
      const body = await readJson(c, UpdateCommandTemplateRequestSchema);
      requireValidArgsSchema(body.argsSchema);
      const row = await updateTemplate(ctx.db, { ...body, organizationId: c.get('principal').organizationId, now: ctx.clock.now() });
      if (!row) throw notFound(`no command template with key "${body.key}"`);
      return c.json(toCommandTemplate(row));
    });
}
