// Every call the console makes to the service, in one module: the pages never build a URL or a header
// themselves, so the key has one way out (the x-api-key header) and moving to another client is one file.
import {
  API_KEY_HEADER,
  ArmingRecordSchema,
  ChannelSchema,
  CommandRecordSchema,
  CommandTemplateSchema,
  ConsoleSessionSchema,
  CreateCommandResponseSchema,
  DeleteWebhookResponseSchema,
  DeliveryAttemptSchema,
  DispatchResponseSchema,
  ErrorEnvelopeSchema,
  EventSchema,
  ExperimentSchema,
  NotificationSchema,
  WebhookEndpointSchema,
  WebhookEndpointWithSecretSchema,
  type ArmRequest,
  type CreateCommandRequest,
  type CreateWebhookRequest,
  type RotateWebhookRequest,
} from '@sortie/contracts';
import { z } from 'zod';

/** A refused call, in the spec's envelope (or Connect's error body for Query). */
export class ConsoleApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: { field: string; message: string }[];
  readonly requestId: string | undefined;
  constructor(status: number, code: string, message: string, details: { field: string; message: string }[] = [], requestId?: string) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
    this.requestId = requestId;
  }
}

/** One series of a Query answer, times in Unix seconds (uPlot's unit) as float64. */
export interface QuerySeries {
  channelId: string;
  times: Float64Array;
  values: Float64Array;
  rawPoints: number;
}

export interface QueryWindow {
  /** Unix seconds, inclusive. */
  from?: number;
  /** Unix seconds, exclusive. */
  to?: number;
}

const ConnectQueryResponse = z.object({
  series: z
    .array(
      z.object({
        channelId: z.string().default(''),
        points: z.array(z.object({ timestamp: z.string(), value: z.union([z.number(), z.string()]).optional() })).default([]),
        rawPoints: z.union([z.string(), z.number()]).default('0'),
      }),
    )
    .default([]),
  totalRawPoints: z.union([z.string(), z.number()]).default('0'),
});

function rfc3339(seconds: number): string {
  return new Date(Math.round(seconds * 1000)).toISOString();
}

/** Connect's JSON for a double: a number, or "NaN" / "Infinity" / "-Infinity" as strings. */
function jsonDouble(value: number | string | undefined): number {
  if (value === undefined) return 0;
  return typeof value === 'number' ? value : Number(value);
}

/** RFC 3339 with up to nanoseconds → Unix seconds, keeping the microseconds Date.parse would drop. */
export function timestampSeconds(text: string): number {
  const match = /\.(\d+)/.exec(text);
  const whole = Date.parse(text.replace(/\.\d+/, '')) / 1000;
  return match ? whole + Number(`0.${match[1]}`) : whole;
}

export type ConsoleApi = ReturnType<typeof createConsoleApi>;

export function createConsoleApi(apiKey: string, base = '') {
  async function call<T>(schema: z.ZodType<T>, method: 'GET' | 'POST', path: string, options: { query?: Record<string, string | string[] | undefined>; body?: unknown } = {}): Promise<T> {
    const response = await send(method, path, options);
    return schema.parse(await response.json());
  }

  async function send(method: 'GET' | 'POST', path: string, options: { query?: Record<string, string | string[] | undefined>; body?: unknown; accept?: string } = {}): Promise<Response> {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) params.append(name, v);
    }
    const url = `${base}${path}${params.size > 0 ? `?${params}` : ''}`;
    const headers: Record<string, string> = { [API_KEY_HEADER]: apiKey, accept: options.accept ?? 'application/json' };
    let body: string | undefined;
    if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.body);
    }
    const response = await fetch(url, { method, headers, body, credentials: 'omit', cache: 'no-store' });
    if (!response.ok) throw await errorOf(response);
    return response;
  }

  return {
    session: () => call(ConsoleSessionSchema, 'GET', '/console/session'),
    experiments: () => call(z.array(ExperimentSchema), 'GET', '/api/experiments/list'),
    channels: (experimentId: string, datasetId: string) =>
      call(z.array(ChannelSchema), 'GET', '/api/datasets/channels', { query: { experimentId, datasetId } }),
    events: (experimentId: string, datasetId: string) => call(z.array(EventSchema), 'GET', '/api/datasets/events', { query: { experimentId, datasetId } }),
    commands: (experimentId: string, datasetId: string) =>
      call(z.array(CommandRecordSchema), 'GET', '/api/commands/list', { query: { experimentId, datasetId } }),
    templates: () => call(z.array(CommandTemplateSchema), 'GET', '/api/commands/templates/list'),
    createCommand: (body: Partial<CreateCommandRequest> & Pick<CreateCommandRequest, 'experimentId' | 'datasetId' | 'commandText' | 'relTime'>) =>
      call(CreateCommandResponseSchema, 'POST', '/api/commands/create', { body }),
    retractCommand: (commandId: string, reason: string) => call(CommandRecordSchema, 'POST', '/api/commands/retract', { body: { commandId, reason } }),
    dispatchCommand: (commandId: string, ackTimeoutSeconds: number) =>
      call(DispatchResponseSchema, 'POST', '/api/commands/dispatch', { body: { commandId, ackTimeoutSeconds } }),
    arming: (experimentId: string, datasetId: string) => call(ArmingRecordSchema, 'GET', '/api/datasets/arming', { query: { experimentId, datasetId } }),
    arm: (body: Partial<ArmRequest> & Pick<ArmRequest, 'datasetId'>) => call(ArmingRecordSchema, 'POST', '/api/datasets/arm', { body }),
    disarm: (experimentId: string, datasetId: string) => call(ArmingRecordSchema, 'POST', '/api/datasets/disarm', { body: { experimentId, datasetId } }),
    deliveries: (commandId: string) => call(z.array(DeliveryAttemptSchema), 'GET', '/api/webhooks/deliveries', { query: { commandId } }),
    webhooks: () => call(z.array(WebhookEndpointSchema), 'GET', '/api/webhooks/list'),
    createWebhook: (body: Partial<CreateWebhookRequest> & Pick<CreateWebhookRequest, 'url'>) =>
      call(WebhookEndpointWithSecretSchema, 'POST', '/api/webhooks/create', { body }),
    rotateWebhook: (body: Partial<RotateWebhookRequest> & Pick<RotateWebhookRequest, 'id'>) =>
      call(WebhookEndpointWithSecretSchema, 'POST', '/api/webhooks/rotate', { body }),
    deleteWebhook: (id: string) => call(DeleteWebhookResponseSchema, 'POST', '/api/webhooks/delete', { body: { id } }),
    testWebhook: (endpointId: string) => call(DeliveryAttemptSchema, 'POST', '/api/webhooks/test', { body: { endpointId } }),
    notifications: () => call(z.array(NotificationSchema), 'GET', '/api/notifications'),

    /** TelemetryService.Query over Connect's JSON protocol on the HTTP port (the server's M4/LTTB downsampling). */
    async query(input: { experimentId: string; datasetId: string; channelIds: string[]; window?: QueryWindow; maxPointsPerChannel: number }) {
      const body: Record<string, unknown> = {
        experimentId: input.experimentId,
        datasetId: input.datasetId,
        channelIds: input.channelIds,
        maxPointsPerChannel: Math.max(1, Math.floor(input.maxPointsPerChannel)),
      };
      if (input.window?.from !== undefined) body.from = rfc3339(input.window.from);
      if (input.window?.to !== undefined) body.to = rfc3339(input.window.to);
      const response = await fetch(`${base}/api/rpc/sortie.telemetry.v1.TelemetryService/Query`, {
        method: 'POST',
        headers: { [API_KEY_HEADER]: apiKey, 'content-type': 'application/json', 'connect-protocol-version': '1' },
        body: JSON.stringify(body),
        credentials: 'omit',
        cache: 'no-store',
      });
      if (!response.ok) throw await connectErrorOf(response);
      const answer = ConnectQueryResponse.parse(await response.json());
      const series: QuerySeries[] = answer.series.map((s) => {
        const times = new Float64Array(s.points.length);
        const values = new Float64Array(s.points.length);
        s.points.forEach((p, i) => {
          times[i] = timestampSeconds(p.timestamp);
          values[i] = jsonDouble(p.value);
        });
        return { channelId: s.channelId, times, values, rawPoints: Number(s.rawPoints) };
      });
      return { series, totalRawPoints: Number(answer.totalRawPoints) };
    },

    /** The export route's CSV of `channels` over the window, raw rows; fetched (the key travels in a header, never a URL). */
    async exportCsv(input: { experimentId: string; datasetId: string; channels: string[]; window?: QueryWindow }): Promise<Blob> {
      const response = await send('GET', '/api/datasets/export', {
        query: {
          datasetId: input.datasetId,
          experimentId: input.experimentId,
          format: 'csv',
          channel: input.channels,
          start: input.window?.from !== undefined ? rfc3339(input.window.from) : undefined,
          end: input.window?.to !== undefined ? rfc3339(input.window.to) : undefined,
        },
        accept: 'text/csv',
      });
      return response.blob();
    },
  };
}

async function errorOf(response: Response): Promise<ConsoleApiError> {
  const requestId = response.headers.get('x-request-id') ?? undefined;
  const parsed = ErrorEnvelopeSchema.safeParse(await response.json().catch(() => undefined));
  if (!parsed.success) return new ConsoleApiError(response.status, 'http_error', `the service answered HTTP ${response.status}`, [], requestId);
  const e = parsed.data.error;
  return new ConsoleApiError(response.status, e.code, e.message, e.details, e.request_id || requestId);
}

async function connectErrorOf(response: Response): Promise<ConsoleApiError> {
  const body = (await response.json().catch(() => undefined)) as { code?: string; message?: string } | undefined;
  return new ConsoleApiError(response.status, body?.code ?? 'http_error', body?.message ?? `Query answered HTTP ${response.status}`, [], response.headers.get('x-request-id') ?? undefined);
}
