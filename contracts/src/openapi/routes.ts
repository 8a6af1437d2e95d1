import { z } from 'zod';
import type { ErrorCode } from '../core/error-codes.ts';
import { ErrorDetailSchema, ErrorEnvelopeSchema } from '../core/errors.ts';
import { ArmingQuerySchema, ArmingRecordSchema, ArmRequestSchema, DisarmRequestSchema } from '../http/arming.ts';
import {
  ChannelDeclarationSchema,
  ChannelSchema,
  CreateChannelRequestSchema,
  ListChannelsQuerySchema,
  UpdateChannelRequestSchema,
} from '../http/channels.ts';
import {
  AckRequestSchema,
  AckResponseSchema,
  CommandRecordSchema,
  CreateCommandRequestSchema,
  CreateCommandResponseSchema,
  DispatchRequestSchema,
  DispatchResponseSchema,
  GetCommandQuerySchema,
  ListCommandsQuerySchema,
  RetractCommandRequestSchema,
} from '../http/commands.ts';
import { DatasetSpanQuerySchema, DatasetSpanSchema } from '../http/dataset-span.ts';
import { DatasetSummaryQuerySchema, DatasetSummarySchema } from '../http/dataset-summary.ts';
import { DatasetSchema, RegisterStreamRequestSchema, RegisterStreamResponseSchema } from '../http/datasets.ts';
import { CreateEventsRequestSchema, CreateEventsResponseSchema, EventSchema, ListEventsQuerySchema } from '../http/events.ts';
import { CreateExperimentRequestSchema, ExperimentSchema, ListExperimentsResponseSchema } from '../http/experiments.ts';
import { EXPORT_MEDIA_TYPES, ExportQuerySchema } from '../http/export.ts';
import { AppendRequestSchema, AppendResponseSchema } from '../http/telemetry.ts';
import {
  CommandTemplateSchema,
  CreateCommandTemplateRequestSchema,
  ListCommandTemplatesResponseSchema,
  UpdateCommandTemplateRequestSchema,
} from '../http/templates.ts';
import {
  CreateWebhookRequestSchema,
  DeleteWebhookRequestSchema,
  DeleteWebhookResponseSchema,
  DeliveryAttemptSchema,
  ListDeliveriesQuerySchema,
  ListDeliveriesResponseSchema,
  ListNotificationsResponseSchema,
  ListWebhooksResponseSchema,
  NotificationSchema,
  RotateWebhookRequestSchema,
  UpdateWebhookRequestSchema,
  WebhookEndpointSchema,
  WebhookEndpointWithSecretSchema,
} from '../http/webhooks.ts';
import { WebhookTestRequestSchema } from '../http/webhook-test.ts';
import {
  CreateLimitRuleRequestSchema,
  DeleteLimitRuleRequestSchema,
  DeleteLimitRuleResponseSchema,
  GetLimitRuleQuerySchema,
  LimitRuleSchema,
  ListLimitRulesQuerySchema,
  ListLimitRulesResponseSchema,
  UpdateLimitRuleRequestSchema,
} from '../http/limits.ts';
import {
  CreateImportQuerySchema,
  CreateImportResponseSchema,
  FlightParametersSchema,
  GetImportQuerySchema,
  ImportProgressSchema,
  ListImportsQuerySchema,
  LogImportSchema,
  ParameterDiffQuerySchema,
  ParameterDiffSchema,
  ParametersQuerySchema,
} from '../http/imports.ts';
import type { Scope } from '../core/scopes.ts';

/**
 * Request bodies, named as they appear in `components.schemas`. Converted with zod's `io: 'input'`, so a
 * field with a default is optional here, as it is for the caller.
 */
export const REQUEST_SCHEMAS = {
  CreateExperimentRequest: CreateExperimentRequestSchema,
  RegisterStreamRequest: RegisterStreamRequestSchema,
  ChannelDeclaration: ChannelDeclarationSchema,
  CreateChannelRequest: CreateChannelRequestSchema,
  UpdateChannelRequest: UpdateChannelRequestSchema,
  AppendRequest: AppendRequestSchema,
  CreateEventsRequest: CreateEventsRequestSchema,
  CreateCommandRequest: CreateCommandRequestSchema,
  RetractCommandRequest: RetractCommandRequestSchema,
  DispatchRequest: DispatchRequestSchema,
  AckRequest: AckRequestSchema,
  ArmRequest: ArmRequestSchema,
  DisarmRequest: DisarmRequestSchema,
  CreateCommandTemplateRequest: CreateCommandTemplateRequestSchema,
  UpdateCommandTemplateRequest: UpdateCommandTemplateRequestSchema,
  CreateWebhookRequest: CreateWebhookRequestSchema,
  RotateWebhookRequest: RotateWebhookRequestSchema,
  UpdateWebhookRequest: UpdateWebhookRequestSchema,
  DeleteWebhookRequest: DeleteWebhookRequestSchema,
  WebhookTestRequest: WebhookTestRequestSchema,
  CreateLimitRuleRequest: CreateLimitRuleRequestSchema,
  UpdateLimitRuleRequest: UpdateLimitRuleRequestSchema,
  DeleteLimitRuleRequest: DeleteLimitRuleRequestSchema,
} as const satisfies Record<string, z.ZodType>;
export type RequestSchemaName = keyof typeof REQUEST_SCHEMAS;

/** Response bodies (`io: 'output'`: what the service writes). Names must not repeat a request's. */
export const RESPONSE_SCHEMAS = {
  Experiment: ExperimentSchema,
  ExperimentList: ListExperimentsResponseSchema,
  Dataset: DatasetSchema,
  RegisterStreamResponse: RegisterStreamResponseSchema,
  Channel: ChannelSchema,
  ChannelList: z.array(ChannelSchema),
  DatasetSpan: DatasetSpanSchema,
  DatasetSummary: DatasetSummarySchema,
  AppendResponse: AppendResponseSchema,
  Event: EventSchema,
  EventList: z.array(EventSchema),
  CreateEventsResponse: CreateEventsResponseSchema,
  CommandRecord: CommandRecordSchema,
  CommandList: z.array(CommandRecordSchema),
  CreateCommandResponse: CreateCommandResponseSchema,
  DispatchResponse: DispatchResponseSchema,
  AckResponse: AckResponseSchema,
  ArmingRecord: ArmingRecordSchema,
  CommandTemplate: CommandTemplateSchema,
  CommandTemplateList: ListCommandTemplatesResponseSchema,
  WebhookEndpoint: WebhookEndpointSchema,
  WebhookEndpointList: ListWebhooksResponseSchema,
  WebhookEndpointWithSecret: WebhookEndpointWithSecretSchema,
  DeleteWebhookResponse: DeleteWebhookResponseSchema,
  DeliveryAttempt: DeliveryAttemptSchema,
  DeliveryAttemptList: ListDeliveriesResponseSchema,
  Notification: NotificationSchema,
  NotificationList: ListNotificationsResponseSchema,
  LimitRule: LimitRuleSchema,
  LimitRuleList: ListLimitRulesResponseSchema,
  DeleteLimitRuleResponse: DeleteLimitRuleResponseSchema,
  LogImport: LogImportSchema,
  LogImportList: z.array(LogImportSchema),
  CreateImportResponse: CreateImportResponseSchema,
  ImportProgress: ImportProgressSchema,
  // What each line of an import's progress answer is: progress while the file is read, then the result or the failure.
  ImportProgressLine: z.union([ImportProgressSchema, z.object({ import: CreateImportResponseSchema }), ErrorEnvelopeSchema]).meta({
    description:
      'One line of `POST /api/imports/create` answered as `application/x-ndjson`: ImportProgress lines while the file is read, ' +
      'then exactly one last line, `{"import": CreateImportResponse}` when it was imported or the error envelope when it was not.',
  }),
  FlightParameters: FlightParametersSchema,
  ParameterDiff: ParameterDiffSchema,
  ExportFile: z.string().meta({ description: 'A streamed file (CSV or MCAP), not JSON: save or pipe the bytes as they come.' }),
  ErrorDetail: ErrorDetailSchema,
  ErrorEnvelope: ErrorEnvelopeSchema,
} as const satisfies Record<string, z.ZodType>;
export type ResponseSchemaName = keyof typeof RESPONSE_SCHEMAS;

export interface ApiSuccess {
  status: 200 | 201;
  schema: ResponseSchemaName;
  description: string;
  /**
   * The media types of a body that is a streamed file rather than JSON (the request picks one); `schema`
   * then names a string. Absent: the body is JSON of `schema`.
   */
  media?: readonly string[];
  /**
   * Another body the same status may carry instead, chosen by the request's Accept header (an import's
   * progress as NDJSON): its media type, the schema of each of its lines or of the whole, and what it is.
   */
  alternative?: { media: string; schema: ResponseSchemaName; description: string };
}

/**
 * A request body that is not JSON but a file sent as it is (an imported log): documented as
 * `application/octet-stream`, `format: binary`. The client sends it streamed, with a method of its own.
 */
export interface ApiRawBody {
  description: string;
  /** What bounds its size (a setting's name): said by its 413 answer. */
  limit: string;
}

export interface ApiRoute {
  method: 'get' | 'post';
  path: `/api/${string}`;
  operationId: string;
  tag: string;
  summary: string;
  /** Prose for what the schema cannot say (cross-field rules, ordering, side effects). */
  description?: string;
  /** The `x-api-key` scope required, or `ack-token` for the per-command bearer token. */
  auth: Scope | 'ack-token';
  body?: RequestSchemaName;
  /** The body is a file, not JSON (never together with `body`). */
  rawBody?: ApiRawBody;
  query?: z.ZodObject;
  success: readonly ApiSuccess[];
  /**
   * Codes particular to this route. The builder adds the ones every route of its kind can answer:
   * unauthorized and insufficient_scope behind an API key, invalid_request with a body or query,
   * payload_too_large with a body (JSON or raw), internal_error and unavailable (the database unreachable) always.
   */
  errors: readonly ErrorCode[];
}

/**
 * The route table as literal types, so `@sortie/client` derives each method's input and answer types
 * from its entry (the type `ApiRouteTable`); everything else reads it as `API_ROUTES`.
 */
const ROUTE_TABLE = [
  // Experiments and datasets
  {
    method: 'get',
    path: '/api/experiments/list',
    operationId: 'listExperiments',
    tag: 'Experiments and datasets',
    summary: "The key's organization's experiments, newest first, each with its datasets",
    auth: 'datasets:read',
    success: [{ status: 200, schema: 'ExperimentList', description: 'the experiments' }],
    errors: [],
  },
  {
    method: 'post',
    path: '/api/experiments/create',
    operationId: 'createExperiment',
    tag: 'Experiments and datasets',
    summary: 'Create an experiment (addition to the spec)',
    auth: 'datasets:write',
    body: 'CreateExperimentRequest',
    success: [{ status: 201, schema: 'Experiment', description: 'the new experiment' }],
    errors: [],
  },
  {
    method: 'post',
    path: '/api/streams/register',
    operationId: 'registerStream',
    tag: 'Experiments and datasets',
    summary: 'Register a dataset (idempotent on experimentId and datasetName)',
    description:
      'Wide datasets: every listed channel gets a physical column `ch_N`; re-registering with a longer list widens the table. ' +
      'Narrow (MAVLink) datasets: `storageShape: "narrow"` with `codec`, `dialect` and `format` all set and no channels; ' +
      'those three fields are refused on wide datasets. Channel names must be unique within the request.',
    auth: 'datasets:write',
    body: 'RegisterStreamRequest',
    success: [
      { status: 201, schema: 'RegisterStreamResponse', description: 'the dataset was created' },
      { status: 200, schema: 'RegisterStreamResponse', description: 'the dataset already existed (widened if new channels were listed)' },
    ],
    errors: ['not_found', 'conflict'],
  },
  {
    method: 'get',
    path: '/api/datasets/channels',
    operationId: 'listChannels',
    tag: 'Experiments and datasets',
    summary: "A dataset's channels",
    description: "With `experimentId`, a narrow dataset's signal list is first materialised from its data.",
    auth: 'datasets:read',
    query: ListChannelsQuerySchema,
    success: [{ status: 200, schema: 'ChannelList', description: 'the channels' }],
    errors: ['not_found'],
  },
  {
    method: 'get',
    path: '/api/datasets/span',
    operationId: 'getDatasetSpan',
    tag: 'Experiments and datasets',
    summary: "A dataset's first and last sample as stored (addition to the spec)",
    description:
      'Over every channel of the dataset, on the time axis Query answers on: a MAVLink dataset\'s every signal on aligned time, whatever ' +
      'clock each message carries (a HEARTBEAT stamped on receipt, an ATTITUDE on the boot clock). RFC 3339 UTC with microseconds, ' +
      'both null when the dataset holds no sample. What the console shows as a flight\'s span.',
    auth: 'datasets:read',
    query: DatasetSpanQuerySchema,
    success: [{ status: 200, schema: 'DatasetSpan', description: 'the first and last sample' }],
    errors: ['not_found'],
  },
  {
    method: 'get',
    path: '/api/datasets/summary',
    operationId: 'getDatasetSummary',
    tag: 'Experiments and datasets',
    summary: 'What a list of flights shows of a dataset: span, frames or samples, vehicle (addition to the spec)',
    description:
      'Its first and last sample (as `/api/datasets/span` reads them), how much it holds (a MAVLink dataset\'s `frames`, a wide ' +
      'dataset\'s numeric `samples`) and, for MAVLink, the vehicle its autopilot\'s HEARTBEAT names (MAV_TYPE and MAV_AUTOPILOT ' +
      'with their names; a companion computer\'s or a gimbal\'s HEARTBEAT is never taken for it). A finished flight\'s summary is ' +
      'computed once and kept until the dataset is written again.',
    auth: 'datasets:read',
    query: DatasetSummaryQuerySchema,
    success: [{ status: 200, schema: 'DatasetSummary', description: 'the summary' }],
    errors: ['not_found'],
  },
  {
    method: 'post',
    path: '/api/datasets/channels/create',
    operationId: 'createChannel',
    tag: 'Experiments and datasets',
    summary: 'Declare a channel (metadata only; next free `ch_N`)',
    description: 'The physical column appears when a registration lists the channel. Narrow datasets answer 409.',
    auth: 'datasets:write',
    body: 'CreateChannelRequest',
    success: [{ status: 201, schema: 'Channel', description: 'the new channel' }],
    errors: ['not_found', 'conflict'],
  },
  {
    method: 'post',
    path: '/api/datasets/channels/update',
    operationId: 'updateChannel',
    tag: 'Experiments and datasets',
    summary: "Edit a channel's name, unit or dataType",
    description: '`hypertableColName` cannot be edited (400). A new dataType relabels only; written data is not converted.',
    auth: 'datasets:write',
    body: 'UpdateChannelRequest',
    success: [{ status: 200, schema: 'Channel', description: 'the updated channel' }],
    errors: ['not_found', 'conflict'],
  },
  // Telemetry
  {
    method: 'post',
    path: '/api/datasets/append',
    operationId: 'appendRows',
    tag: 'Telemetry',
    summary: 'Append rows to a wide dataset',
    description:
      'Values are keyed by `ch_N` or channel name and must fit the column; rows sharing a timestamp merge. ' +
      'A channel UUID as key succeeds and writes nothing (listed in `ignoredKeys`). Narrow datasets answer 409.',
    auth: 'telemetry:write',
    body: 'AppendRequest',
    success: [{ status: 200, schema: 'AppendResponse', description: 'counts of what was written' }],
    errors: ['not_found', 'conflict'],
  },
  {
    method: 'post',
    path: '/api/datasets/events',
    operationId: 'createEvents',
    tag: 'Telemetry',
    summary: "Annotate a dataset's timeline",
    auth: 'telemetry:write',
    body: 'CreateEventsRequest',
    success: [{ status: 201, schema: 'CreateEventsResponse', description: 'the stored events' }],
    errors: ['not_found'],
  },
  {
    method: 'get',
    path: '/api/datasets/events',
    operationId: 'listEvents',
    tag: 'Telemetry',
    summary: "A dataset's annotations in time order (addition to the spec)",
    description: 'Narrow datasets answer on the aligned time axis of their charts.',
    auth: 'datasets:read',
    query: ListEventsQuerySchema,
    success: [{ status: 200, schema: 'EventList', description: 'the events' }],
    errors: ['not_found'],
  },
  {
    method: 'get',
    path: '/api/datasets/export',
    operationId: 'exportDataset',
    tag: 'Telemetry',
    summary: "Download a dataset's raw rows as CSV or MCAP, streamed (addition to the spec)",
    description:
      'Raw rows, never downsampled, in time order, written as they are read (a long flight is never held whole in memory). ' +
      '`channel` repeats (`&channel=a&channel=b`); none exports every channel; an unknown one is 400 naming `channel`. ' +
      'Wide datasets: every channel type, rows where at least one chosen channel has a value. MAVLink (narrow) datasets: every stored ' +
      'signal (numbers, text, unknown ids\' raw payloads), on aligned time; numeric signals exactly the samples Query answers. ' +
      'CSV: header `time,time_unix_us,<channel names…>`, time in RFC 3339 UTC with microseconds and as integer Unix µs, an empty cell where ' +
      'a row has no value, booleans `true`/`false`, text as RFC 4180 strings, bytes as base64; MAVLink frames at one aligned instant share a line. ' +
      'MCAP (Foxglove opens it): MAVLink datasets one channel `/mavlink/<MESSAGE>` per message type and one message per stored frame with ' +
      'every field it carried (numeric arrays as arrays, text as strings, `UNKNOWN_<id>.raw` as base64, NaN as null; named signals choose ' +
      'the message types and fields), wide datasets one channel `/rows`; JSON-schema-encoded JSON messages with log time = sample (aligned) ' +
      'time, in time order across channels; events on `/events` as `foxglove.Log`, a MAVLink flight\'s mode changes among them as `MODE` ' +
      '(`MANUAL, armed`: from the autopilot\'s HEARTBEATs, named as the console names them; a window opens with the mode in force). ' +
      'The file name comes in Content-Disposition. A failure after the first bytes cannot change the status: the connection is then cut ' +
      'before the body ends, which HTTP clients report as an error (and an MCAP reader as a missing footer).',
    auth: 'datasets:read',
    query: ExportQuerySchema,
    success: [{ status: 200, schema: 'ExportFile', description: 'the file, streamed', media: Object.values(EXPORT_MEDIA_TYPES) }],
    errors: ['not_found'],
  },
  // Commands
  {
    method: 'post',
    path: '/api/commands/create',
    operationId: 'createCommand',
    tag: 'Commands',
    summary: 'Log a command on a dataset',
    description:
      'A repeated `clientToken` answers the existing command with `duplicate: true`. With `templateKey`, the template must ' +
      'exist and its `argsSchema` validates `args` (failures name fields like `args.altitude`).',
    auth: 'commands:write',
    body: 'CreateCommandRequest',
    success: [
      { status: 201, schema: 'CreateCommandResponse', description: 'the command was logged' },
      { status: 200, schema: 'CreateCommandResponse', description: 'the clientToken was seen before: the existing command' },
    ],
    errors: ['not_found'],
  },
  {
    method: 'get',
    path: '/api/commands/list',
    operationId: 'listCommands',
    tag: 'Commands',
    summary: "A dataset's commands by relTime, then issue time (retracted ones included)",
    auth: 'commands:read',
    query: ListCommandsQuerySchema,
    success: [{ status: 200, schema: 'CommandList', description: 'the commands' }],
    errors: ['not_found'],
  },
  {
    method: 'get',
    path: '/api/commands/get',
    operationId: 'getCommand',
    tag: 'Commands',
    summary: 'One command by id, retracted or not (addition to the spec)',
    description: "For following a command's status without knowing its dataset. Another organization's command is 404, like a missing one.",
    auth: 'commands:read',
    query: GetCommandQuerySchema,
    success: [{ status: 200, schema: 'CommandRecord', description: 'the command' }],
    errors: ['not_found'],
  },
  {
    method: 'post',
    path: '/api/commands/retract',
    operationId: 'retractCommand',
    tag: 'Commands',
    summary: 'Retract a command (addition to the spec); it can no longer be dispatched',
    auth: 'commands:write',
    body: 'RetractCommandRequest',
    success: [{ status: 200, schema: 'CommandRecord', description: 'the command with retractedAt set' }],
    errors: ['not_found', 'conflict'],
  },
  {
    method: 'post',
    path: '/api/commands/dispatch',
    operationId: 'dispatchCommand',
    tag: 'Commands',
    summary: "Queue a command for delivery to the organization's webhook endpoints",
    description:
      'Each of these fails with 409, in this order: command webhooks off for the deployment, the dataset not armed (or expired), ' +
      'no enabled endpoint, the command no longer `logged` (of racing dispatches exactly one wins).',
    auth: 'commands:write',
    body: 'DispatchRequest',
    success: [{ status: 200, schema: 'DispatchResponse', description: 'the command is queued' }],
    errors: ['not_found', 'conflict'],
  },
  {
    method: 'post',
    path: '/api/commands/ack',
    operationId: 'ackCommand',
    tag: 'Commands',
    summary: 'Acknowledge a delivered command with its single-use `cak_` token',
    description:
      'Send `Authorization: Bearer <ack.token>` from the delivery; no API key. Every token failure is 404. ' +
      'More than 10 attempts per command in a minute answer 429 with Retry-After.',
    auth: 'ack-token',
    body: 'AckRequest',
    success: [{ status: 200, schema: 'AckResponse', description: 'the acknowledgement (duplicate: true when repeated)' }],
    errors: ['not_found', 'conflict', 'rate_limited'],
  },
  {
    method: 'get',
    path: '/api/commands/templates/list',
    operationId: 'listCommandTemplates',
    tag: 'Commands',
    summary: "The organization's command templates, by key (addition to the spec)",
    auth: 'commands:read',
    success: [{ status: 200, schema: 'CommandTemplateList', description: 'the templates' }],
    errors: [],
  },
  {
    method: 'post',
    path: '/api/commands/templates/create',
    operationId: 'createCommandTemplate',
    tag: 'Commands',
    summary: 'Create a command template (addition to the spec)',
    description: '`argsSchema` is a JSON Schema subset the server enforces exactly (see contracts/src/http/templates.ts). The key is unique (409).',
    auth: 'commands:write',
    body: 'CreateCommandTemplateRequest',
    success: [{ status: 201, schema: 'CommandTemplate', description: 'the new template' }],
    errors: ['conflict'],
  },
  {
    method: 'post',
    path: '/api/commands/templates/update',
    operationId: 'updateCommandTemplate',
    tag: 'Commands',
    summary: 'Edit a command template by key (addition to the spec)',
    description: 'Omitted fields keep their value; `argsSchema: null` removes the schema. Existing commands are not re-validated.',
    auth: 'commands:write',
    body: 'UpdateCommandTemplateRequest',
    success: [{ status: 200, schema: 'CommandTemplate', description: 'the updated template' }],
    errors: ['not_found'],
  },
  // Arming
  {
    method: 'post',
    path: '/api/datasets/arm',
    operationId: 'armDataset',
    tag: 'Arming',
    summary: 'Arm a dataset for dispatch until the arming expires',
    auth: 'commands:write',
    body: 'ArmRequest',
    success: [{ status: 200, schema: 'ArmingRecord', description: 'the arming' }],
    errors: ['not_found'],
  },
  {
    method: 'post',
    path: '/api/datasets/disarm',
    operationId: 'disarmDataset',
    tag: 'Arming',
    summary: 'Disarm a dataset',
    auth: 'commands:write',
    body: 'DisarmRequest',
    success: [{ status: 200, schema: 'ArmingRecord', description: 'the arming, now disarmed' }],
    errors: ['not_found'],
  },
  {
    method: 'get',
    path: '/api/datasets/arming',
    operationId: 'getArming',
    tag: 'Arming',
    summary: "A dataset's arming as of now (an expired arming reads `armed: false`)",
    auth: 'commands:read',
    query: ArmingQuerySchema,
    success: [{ status: 200, schema: 'ArmingRecord', description: 'the arming' }],
    errors: ['not_found'],
  },
  // Limits
  {
    method: 'post',
    path: '/api/limits/create',
    operationId: 'createLimitRule',
    tag: 'Limits',
    summary: 'Watch a signal against a bound on a dataset, or on every dataset of an experiment (addition to the spec)',
    description:
      'With `datasetId` the rule watches that dataset of the experiment; without it, every dataset of the experiment, those created later included. ' +
      '`signal` is addressed as Query addresses channels: a wide channel\'s index ("3" for ch_3) or a MAVLink signal name (`mavlink.ATTITUDE.roll`). ' +
      '`above` needs `high`, `below` needs `low`, `outside` both (low < high). Every committed sample of HTTP append, Submit, StreamSubmit and MAVLink ingest ' +
      'is evaluated; a value beyond the bound for `holdMs` (0: at once) becomes one LIMIT event on the dataset\'s timeline, updated when it ends.',
    auth: 'datasets:write',
    body: 'CreateLimitRuleRequest',
    success: [{ status: 201, schema: 'LimitRule', description: 'the new rule' }],
    errors: ['not_found'],
  },
  {
    method: 'get',
    path: '/api/limits/list',
    operationId: 'listLimitRules',
    tag: 'Limits',
    summary: "A dataset's limit rules (its own and its experiment's), or every rule of an experiment",
    auth: 'datasets:read',
    query: ListLimitRulesQuerySchema,
    success: [{ status: 200, schema: 'LimitRuleList', description: 'the rules, oldest first' }],
    errors: ['not_found'],
  },
  {
    method: 'get',
    path: '/api/limits/get',
    operationId: 'getLimitRule',
    tag: 'Limits',
    summary: 'One limit rule',
    auth: 'datasets:read',
    query: GetLimitRuleQuerySchema,
    success: [{ status: 200, schema: 'LimitRule', description: 'the rule' }],
    errors: ['not_found'],
  },
  {
    method: 'post',
    path: '/api/limits/update',
    operationId: 'updateLimitRule',
    tag: 'Limits',
    summary: "Change a rule's name, signal, bound, hold time or severity",
    description:
      'Fields given replace the rule\'s (`low`/`high` null removes a bound); what it watches cannot be edited. ' +
      'An open crossing of the rule is ended at the newest sample it had seen, since it was judged against the old rule.',
    auth: 'datasets:write',
    body: 'UpdateLimitRuleRequest',
    success: [{ status: 200, schema: 'LimitRule', description: 'the updated rule' }],
    errors: ['not_found'],
  },
  {
    method: 'post',
    path: '/api/limits/delete',
    operationId: 'deleteLimitRule',
    tag: 'Limits',
    summary: 'Stop watching a rule (its LIMIT events stay on the timeline)',
    description: 'An open crossing of the rule is ended first, at the newest sample it had seen.',
    auth: 'datasets:write',
    body: 'DeleteLimitRuleRequest',
    success: [{ status: 200, schema: 'DeleteLimitRuleResponse', description: 'deleted' }],
    errors: ['not_found'],
  },
  // Imports
  {
    method: 'post',
    path: '/api/imports/create',
    operationId: 'createImport',
    tag: 'Imports',
    summary: "Import a vehicle's log file (PX4 ULog, ArduPilot DataFlash, MAVLink .tlog or raw capture) into a new narrow dataset (addition to the spec)",
    description:
      'The body is the file itself, streamed to disk as it arrives (bounded by SORTIE_IMPORT_MAX_BYTES, not by the JSON body limit). ' +
      'Its format is recognised from its first bytes unless `format` says it (a raw MAVLink capture needs `format=mavlink`); a file that is ' +
      'none of them is 400 with `details[].field` `body`. The same bytes (by SHA-256) imported before in the organization answer 200 with ' +
      'that import and `duplicate: true`, and nothing new is made. A log is put on UTC by its GPS time; one without GPS time is placed by ' +
      '`start` (its first message at that instant), else so that its last message falls at the moment of import (`report.timeSource`). ' +
      'The answer comes when the import is done, which takes minutes for a log of gigabytes. With `Accept: application/x-ndjson` it is ' +
      '200 as soon as the file has arrived, then NDJSON: an ImportProgress line of phase `upload`, lines of phase `import` (bytes read, ' +
      'messages stored) about four times a second, and one last line, `{"import": CreateImportResponse}` or the error envelope (a failure ' +
      'after the 200 cannot change the status). An import that fails leaves nothing behind: its dataset is dropped.',
    auth: 'telemetry:write',
    rawBody: {
      description: 'The log file as it is, any Content-Type (application/octet-stream); send Content-Length when known, so progress has a total.',
      limit: 'SORTIE_IMPORT_MAX_BYTES',
    },
    query: CreateImportQuerySchema,
    success: [
      { status: 201, schema: 'CreateImportResponse', description: 'the file was imported: the import with its report, `duplicate: false`' },
      {
        status: 200,
        schema: 'CreateImportResponse',
        description: 'the same file was imported before: that import, `duplicate: true`',
        alternative: {
          media: 'application/x-ndjson',
          schema: 'ImportProgressLine',
          description: 'asked for with `Accept: application/x-ndjson`: progress lines while the file is read, then the import or the error envelope',
        },
      },
    ],
    errors: ['not_found'],
  },
  {
    method: 'get',
    path: '/api/imports/list',
    operationId: 'listImports',
    tag: 'Imports',
    summary: "An experiment's or a dataset's log imports, oldest first (addition to the spec)",
    description: 'Give `experimentId` or `datasetId` (or both). An import still being read is listed with `status: "importing"` and no report.',
    auth: 'datasets:read',
    query: ListImportsQuerySchema,
    success: [{ status: 200, schema: 'LogImportList', description: 'the imports' }],
    errors: [],
  },
  {
    method: 'get',
    path: '/api/imports/get',
    operationId: 'getImport',
    tag: 'Imports',
    summary: 'One log import with its report (addition to the spec)',
    auth: 'datasets:read',
    query: GetImportQuerySchema,
    success: [{ status: 200, schema: 'LogImport', description: 'the import' }],
    errors: ['not_found'],
  },
  {
    method: 'get',
    path: '/api/datasets/parameters',
    operationId: 'getFlightParameters',
    tag: 'Imports',
    summary: "A flight's parameters: the value each started with, every change during the flight, and the value it ended with (addition to the spec)",
    description:
      "An imported log's parameters as stored at import (`source: \"log\"`); a MAVLink flight's from its PARAM_VALUE messages in frame order " +
      '(`source: \"mavlink\"`: the first value of a name is its initial one). Sorted by name; a value equal to the one before is not a change.',
    auth: 'datasets:read',
    query: ParametersQuerySchema,
    success: [{ status: 200, schema: 'FlightParameters', description: 'the parameters' }],
    errors: ['not_found'],
  },
  {
    method: 'get',
    path: '/api/datasets/parameters/diff',
    operationId: 'diffFlightParameters',
    tag: 'Imports',
    summary: "Two flights' parameters compared, as they started (`at=initial`, the default) or as they ended (`at=final`) (addition to the spec)",
    description: '`added`: in b and not in a; `removed`: in a and not in b; `changed`: in both with different values; each sorted by name.',
    auth: 'datasets:read',
    query: ParameterDiffQuerySchema,
    success: [{ status: 200, schema: 'ParameterDiff', description: 'the differences' }],
    errors: ['not_found'],
  },
  // Webhooks
  {
    method: 'post',
    path: '/api/webhooks/create',
    operationId: 'createWebhook',
    tag: 'Webhooks',
    summary: 'Register a webhook endpoint; its `whsec_` secret is shown only in this response',
    description:
      'The URL must be https, without credentials or fragment, on port 443 or ≥ 1024, and every address its host resolves to ' +
      'must be public; a refusal is 400 naming the host and the address. `limitEvents: true` (an addition; default false) ' +
      'also delivers limit events (`limit.crossing`) to it.',
    auth: 'webhooks:write',
    body: 'CreateWebhookRequest',
    success: [{ status: 201, schema: 'WebhookEndpointWithSecret', description: 'the endpoint and its secret' }],
    errors: [],
  },
  {
    method: 'get',
    path: '/api/webhooks/list',
    operationId: 'listWebhooks',
    tag: 'Webhooks',
    summary: 'Endpoints without secrets, disabled ones included',
    auth: 'webhooks:read',
    success: [{ status: 200, schema: 'WebhookEndpointList', description: 'the endpoints' }],
    errors: [],
  },
  {
    method: 'post',
    path: '/api/webhooks/update',
    operationId: 'updateWebhook',
    tag: 'Webhooks',
    summary: "Change an endpoint's label, or whether it receives limit events (addition to the spec)",
    description:
      'With `limitEvents: true` the endpoint receives `limit.crossing` deliveries (a LIMIT event\'s start and end) besides commands, ' +
      'signed, retried and counted toward auto-disable like them; endpoints that did not opt in never receive one. ' +
      'The URL and secret are not edited here (register again; rotate).',
    auth: 'webhooks:write',
    body: 'UpdateWebhookRequest',
    success: [{ status: 200, schema: 'WebhookEndpoint', description: 'the endpoint' }],
    errors: ['not_found'],
  },
  {
    method: 'post',
    path: '/api/webhooks/rotate',
    operationId: 'rotateWebhook',
    tag: 'Webhooks',
    summary: "Rotate an endpoint's secret; the new one is shown only in this response",
    description: 'The current secret stays valid for `overlapSeconds` beside the new one (0: immediate cutover).',
    auth: 'webhooks:write',
    body: 'RotateWebhookRequest',
    success: [{ status: 200, schema: 'WebhookEndpointWithSecret', description: 'the endpoint and its new secret' }],
    errors: ['not_found'],
  },
  {
    method: 'post',
    path: '/api/webhooks/delete',
    operationId: 'deleteWebhook',
    tag: 'Webhooks',
    summary: 'Delete an endpoint (its delivery history is kept)',
    auth: 'webhooks:write',
    body: 'DeleteWebhookRequest',
    success: [{ status: 200, schema: 'DeleteWebhookResponse', description: 'deleted' }],
    errors: ['not_found'],
  },
  {
    method: 'post',
    path: '/api/webhooks/test',
    operationId: 'testWebhook',
    tag: 'Webhooks',
    summary: 'Send a signed `ping` event to an endpoint now and answer its delivery attempt (addition to the spec)',
    description:
      'One attempt through the delivery engine (URL rules re-checked, signed with every valid secret, same headers and time-out as a ' +
      'command delivery), not retried. Its body is `{"eventType":"ping","sentAt":"<RFC 3339>","endpoint":{"id","organizationId"}}` ' +
      '(`PingBody` in @sortie/contracts): no command, no ack token. A receiver verifies it like any delivery, answers 2xx and acts on ' +
      'nothing. The attempt is answered, not stored: its `commandId` is `00000000-0000-0000-0000-000000000000` and `eventType` `ping`; ' +
      'a failed ping (statusCode 0 or non-2xx, `error` set) is still 200 here and never counts toward auto-disable. ' +
      'A disabled endpoint is 409.',
    auth: 'webhooks:write',
    body: 'WebhookTestRequest',
    success: [{ status: 200, schema: 'DeliveryAttempt', description: 'the attempt, whatever the receiver answered' }],
    errors: ['not_found', 'conflict'],
  },
  {
    method: 'get',
    path: '/api/webhooks/deliveries',
    operationId: 'listDeliveries',
    tag: 'Webhooks',
    summary: "A command's delivery attempts, newest first (deleted endpoints included)",
    description: '`statusCode` 0 means no HTTP answer; `response` holds the first 2048 bytes; `deliveryId` is the X-Sortie-Delivery sent.',
    auth: 'webhooks:read',
    query: ListDeliveriesQuerySchema,
    success: [{ status: 200, schema: 'DeliveryAttemptList', description: 'the attempts' }],
    errors: ['not_found'],
  },
  {
    method: 'get',
    path: '/api/notifications',
    operationId: 'listNotifications',
    tag: 'Webhooks',
    summary: "The key's user's newest 200 notifications (addition to the spec)",
    description: 'Owners are told here when an endpoint is auto-disabled.',
    auth: 'webhooks:read',
    success: [{ status: 200, schema: 'NotificationList', description: 'the notifications' }],
    errors: [],
  },
] as const satisfies readonly ApiRoute[];
export type ApiRouteTable = typeof ROUTE_TABLE;

/** Every `/api/*` route the service mounts; a test fails when the service and this table disagree. */
export const API_ROUTES: readonly ApiRoute[] = ROUTE_TABLE;
