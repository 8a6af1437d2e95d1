import type { z } from 'zod';
import type { ApiRouteTable, REQUEST_SCHEMAS, RequestSchemaName, RESPONSE_SCHEMAS, ResponseSchemaName } from '@sortie/contracts';

/** Types of each operation, derived from its entry in the contracts' route table (nothing re-declared). */
export type ApiRouteEntry = ApiRouteTable[number];
export type OperationId = ApiRouteEntry['operationId'];
export type RouteOf<Op extends OperationId> = Extract<ApiRouteEntry, { operationId: Op }>;

/** What a call takes: the body's zod input, else the query's, else nothing. */
export type InputOf<Op extends OperationId> =
  RouteOf<Op> extends { body: infer B extends RequestSchemaName }
    ? z.input<(typeof REQUEST_SCHEMAS)[B]>
    : RouteOf<Op> extends { query: infer Q extends z.ZodType }
      ? z.input<Q>
      : void;

type SuccessSchemaName<Op extends OperationId> = RouteOf<Op>['success'][number]['schema'] & ResponseSchemaName;

/** What a call answers: the parsed (zod output) body of any of its success statuses. */
export type OutputOf<Op extends OperationId> = z.output<(typeof RESPONSE_SCHEMAS)[SuccessSchemaName<Op>]>;

/**
 * The client's JSON methods, grouped by what they act on; each names the operationId it calls. A test
 * checks that every route of the table has exactly one method here or is a streamed file
 * (`STREAMED_OPERATIONS`), so a new route is not forgotten.
 */
export const OPERATIONS = {
  experiments: { list: 'listExperiments', create: 'createExperiment' },
  datasets: {
    register: 'registerStream',
    append: 'appendRows',
    arm: 'armDataset',
    disarm: 'disarmDataset',
    arming: 'getArming',
    span: 'getDatasetSpan',
    summary: 'getDatasetSummary',
    parameters: 'getFlightParameters',
    parameterDiff: 'diffFlightParameters',
  },
  channels: { list: 'listChannels', create: 'createChannel', update: 'updateChannel' },
  events: { list: 'listEvents', create: 'createEvents' },
  commands: {
    create: 'createCommand',
    list: 'listCommands',
    get: 'getCommand',
    retract: 'retractCommand',
    dispatch: 'dispatchCommand',
    ack: 'ackCommand',
  },
  templates: { list: 'listCommandTemplates', create: 'createCommandTemplate', update: 'updateCommandTemplate' },
  webhooks: {
    create: 'createWebhook',
    list: 'listWebhooks',
    update: 'updateWebhook',
    rotate: 'rotateWebhook',
    delete: 'deleteWebhook',
    deliveries: 'listDeliveries',
    test: 'testWebhook',
  },
  notifications: { list: 'listNotifications' },
  limits: { create: 'createLimitRule', list: 'listLimitRules', get: 'getLimitRule', update: 'updateLimitRule', delete: 'deleteLimitRule' },
  imports: { list: 'listImports', get: 'getImport' },
} as const satisfies Record<string, Record<string, OperationId>>;

/**
 * Routes that stream a file, not JSON, one way or the other: methods of their own. `exportDataset`
 * answers one (the Response is handed back); `createImport` takes one as its body (`importFile`).
 */
export const STREAMED_OPERATIONS = ['exportDataset', 'createImport'] as const satisfies readonly OperationId[];
