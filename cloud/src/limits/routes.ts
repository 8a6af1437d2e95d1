import {
  CreateLimitRuleRequestSchema,
  DeleteLimitRuleRequestSchema,
  GetLimitRuleQuerySchema,
  ListLimitRulesQuerySchema,
  UpdateLimitRuleRequestSchema,
} from '@sortie/contracts';
import { Hono } from 'hono';
import { requireScope } from '../auth/require-scope.ts';
import type { AppContext } from '../platform/context.ts';
import type { AppEnv } from '../http/app-env.ts';
import { readJson, readQuery } from '../http/validation.ts';
import { createRule, deleteRule, listRules, requireRule, toLimitRule, updateRule } from './rules.ts';

/**
 * /api/limits/{create,list,get,update,delete}. Rules are part of a dataset's (or an experiment's)
 * configuration, like its channels, so they take the datasets scopes: reading them datasets:read,
 * changing them datasets:write. The LIMIT events they make are read as events (datasets:read).
 */
export function limitsRoutes(ctx: AppContext) {
  return new Hono<AppEnv>()
    .post('/limits/create', requireScope(ctx, 'datasets:write'), async (c) => {
      const body = await readJson(c, CreateLimitRuleRequestSchema);
      const row = await createRule(ctx, c.get('principal').organizationId, body);
      return c.json(toLimitRule(row), 201);
    })
    .get('/limits/list', requireScope(ctx, 'datasets:read'), async (c) => {
      const query = readQuery(c, ListLimitRulesQuerySchema);
      const rows = await listRules(ctx.db, c.get('principal').organizationId, query);
      return c.json(rows.map(toLimitRule));
    })
    .get('/limits/get', requireScope(ctx, 'datasets:read'), async (c) => {
      const query = readQuery(c, GetLimitRuleQuerySchema);
      return c.json(toLimitRule(await requireRule(ctx.db, c.get('principal').organizationId, query.id)));
    })
    .post('/limits/update', requireScope(ctx, 'datasets:write'), async (c) => {
      const body = await readJson(c, UpdateLimitRuleRequestSchema);
      return c.json(toLimitRule(await updateRule(ctx, c.get('principal').organizationId, body)));
    })
    .post('/limits/delete', requireScope(ctx, 'datasets:write'), async (c) => {
      const body = await readJson(c, DeleteLimitRuleRequestSchema);
      await deleteRule(ctx, c.get('principal').organizationId, body.id);
      return c.json({ id: body.id, deleted: true as const });
    });
}
