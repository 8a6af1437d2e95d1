// The HTTP side of the uplink: registering narrow datasets (POST /api/streams/register) and writing
// link events as annotations (POST /api/datasets/events, and GET to find ones already written). The
// frames themselves go over gRPC (stream-session.ts). Bodies are the contracts' schemas, the ones the
// cloud validates with: requests are typed by them, answers parsed by them.
import { Code, ConnectError } from '@connectrpc/connect';
import {
  API_KEY_HEADER,
  CreateEventsResponseSchema,
  ErrorEnvelopeSchema,
  EventSchema,
  RegisterStreamResponseSchema,
  formatIssuePath,
} from '@sortie/contracts';
import type { CreateEventsRequestSchema, RegisterStreamRequestSchema, TimelineEvent } from '@sortie/contracts';
import { z } from 'zod';

/**
 * One annotation as POST /api/datasets/events takes it. The parsed shape (message and data present)
 * rather than z.input's: the agent always writes both, and the in-memory cloud stores what it gets.
 */
export type CloudEvent = z.infer<typeof CreateEventsRequestSchema>['events'][number];

/** What the uplink reads of an annotation already stored (GET /api/datasets/events). */
export type StoredCloudEvent = Pick<TimelineEvent, 'kind' | 'data'>;

const EventListSchema = z.array(EventSchema);

/** What the uplink needs from the HTTP API; tests substitute an in-memory cloud. */
export interface CloudApi {
  /** Registers (idempotently, by name) a narrow mavlink-raw-v1 dataset; returns its id. */
  registerNarrowDataset(datasetName: string, signal?: AbortSignal): Promise<string>;
  postEvents(datasetId: string, events: readonly CloudEvent[], signal?: AbortSignal): Promise<void>;
  /** Annotations of one kind on a dataset. */
  listEvents(datasetId: string, kind: string, signal?: AbortSignal): Promise<StoredCloudEvent[]>;
}

/** A non-2xx answer: the HTTP status and the error envelope's stable code. */
export class CloudHttpError extends Error {
  override readonly name = 'CloudHttpError';
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const REQUEST_TIMEOUT_MS = 15_000;

export class HttpCloudApi implements CloudApi {
  readonly #base: string;
  readonly #apiKey: string;
  readonly #experimentId: string;

  constructor(options: { baseUrl: string; apiKey: string; experimentId: string }) {
    this.#base = options.baseUrl.replace(/\/+$/, '');
    this.#apiKey = options.apiKey;
    this.#experimentId = options.experimentId;
  }

  async registerNarrowDataset(datasetName: string, signal?: AbortSignal): Promise<string> {
    const request: z.input<typeof RegisterStreamRequestSchema> = {
      experimentId: this.#experimentId,
      datasetName,
      storageShape: 'narrow',
      codec: 'mavlink',
      dialect: 'ardupilotmega',
      format: 'mavlink-raw-v1',
    };
    const body = await this.#call('POST', '/api/streams/register', RegisterStreamResponseSchema, signal, request);
    return body.datasetId;
  }

  async postEvents(datasetId: string, events: readonly CloudEvent[], signal?: AbortSignal): Promise<void> {
    const request: z.input<typeof CreateEventsRequestSchema> = { experimentId: this.#experimentId, datasetId, events: [...events] };
    await this.#call('POST', '/api/datasets/events', CreateEventsResponseSchema, signal, request);
  }

  async listEvents(datasetId: string, kind: string, signal?: AbortSignal): Promise<StoredCloudEvent[]> {
    const query = new URLSearchParams({ datasetId, experimentId: this.#experimentId, kind });
    return await this.#call('GET', `/api/datasets/events?${query}`, EventListSchema, signal);
  }

  /**
   * One request; a 2xx answer parsed by `answer`. A non-2xx answer throws its status with the error
   * envelope's code, or `http_<status>` when the body is no envelope (a proxy's page). A 2xx body the
   * contract does not allow throws 502 `bad_response`: a cloud of another version, or not the cloud.
   */
  async #call<T>(method: string, path: string, answer: z.ZodType<T>, signal: AbortSignal | undefined, json?: unknown): Promise<T> {
    const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
    const response = await fetch(this.#base + path, {
      method,
      headers: { [API_KEY_HEADER]: this.#apiKey, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
      body: json === undefined ? undefined : JSON.stringify(json),
      signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    });
    const text = await response.text();
    let body: unknown = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      body = text;
    }
    const route = `${method} ${path.split('?')[0]}`;
    if (!response.ok) {
      const envelope = ErrorEnvelopeSchema.safeParse(body);
      const code = envelope.success ? envelope.data.error.code : `http_${response.status}`;
      const message = envelope.success ? envelope.data.error.message : text.slice(0, 200);
      throw new CloudHttpError(response.status, code, `${route}: ${response.status} ${code}: ${message}`);
    }
    const parsed = answer.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const where = formatIssuePath(issue.path) || 'body';
      throw new CloudHttpError(502, 'bad_response', `${route}: ${response.status} answer does not match the contract: ${where}: ${issue.message}`);
    }
    return parsed.data;
  }
}

export interface FailureKind {
  /**
   * A retry will not help until someone changes something (the key, its scopes, the experiment id,
   * the server's version): wait the longest back-off between attempts.
   */
  readonly permanent: boolean;
  /** Short label for the status line and logs. */
  readonly label: string;
}

const PERMANENT_GRPC = new Set<Code>([
  Code.Unauthenticated,
  Code.PermissionDenied,
  Code.InvalidArgument,
  Code.NotFound,
  Code.FailedPrecondition,
  Code.Unimplemented,
  Code.OutOfRange,
]);

/** How to treat a failure of a gRPC call or an HTTP request to the cloud. */
export function classifyFailure(error: unknown): FailureKind {
  if (error instanceof CloudHttpError) {
    const permanent = error.status >= 400 && error.status < 500 && error.status !== 408 && error.status !== 429;
    return { permanent, label: `HTTP ${error.status} ${error.code}` };
  }
  if (error instanceof ConnectError) {
    return { permanent: PERMANENT_GRPC.has(error.code), label: `gRPC ${Code[error.code] ?? error.code}` };
  }
  // fetch's TypeError('fetch failed'), socket errors, timeouts: the network or the cloud is away.
  return { permanent: false, label: 'unreachable' };
}

/** The most useful line of an error (fetch hides the socket error in `cause`). */
export function describeFailure(error: unknown): string {
  if (error instanceof ConnectError) return error.rawMessage;
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    if (cause instanceof Error && cause.message) return `${error.message}: ${cause.message}`;
    return error.message;
  }
  return String(error);
}
