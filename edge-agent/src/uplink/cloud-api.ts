// The HTTP side of the uplink: registering narrow datasets (POST /api/streams/register) and writing
// link events as annotations (POST /api/datasets/events, and GET to find ones already written). The
// frames themselves go over gRPC (stream-session.ts).
import { Code, ConnectError } from '@connectrpc/connect';

export const API_KEY_HEADER = 'x-api-key';

/** One annotation as POST /api/datasets/events takes it. */
export interface CloudEvent {
  /** ISO 8601. */
  readonly timestamp: string;
  readonly kind: string;
  readonly message: string;
  readonly data: Record<string, unknown>;
}

export interface StoredCloudEvent {
  readonly kind: string;
  readonly data: Record<string, unknown>;
}

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
    const body = await this.#call('POST', '/api/streams/register', signal, {
      experimentId: this.#experimentId,
      datasetName,
      storageShape: 'narrow',
      codec: 'mavlink',
      dialect: 'ardupilotmega',
      format: 'mavlink-raw-v1',
    });
    const id = (body as { datasetId?: unknown } | null)?.datasetId;
    if (typeof id !== 'string' || id === '') throw new CloudHttpError(502, 'bad_response', 'streams/register answered without a datasetId');
    return id;
  }

  async postEvents(datasetId: string, events: readonly CloudEvent[], signal?: AbortSignal): Promise<void> {
    await this.#call('POST', '/api/datasets/events', signal, { experimentId: this.#experimentId, datasetId, events });
  }

  async listEvents(datasetId: string, kind: string, signal?: AbortSignal): Promise<StoredCloudEvent[]> {
    const query = new URLSearchParams({ datasetId, experimentId: this.#experimentId, kind });
    const body = await this.#call('GET', `/api/datasets/events?${query}`, signal);
    if (!Array.isArray(body)) throw new CloudHttpError(502, 'bad_response', 'datasets/events answered something other than a list');
    return body as StoredCloudEvent[];
  }

  async #call(method: string, path: string, signal: AbortSignal | undefined, json?: unknown): Promise<unknown> {
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
    if (!response.ok) {
      const error = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
      const code = typeof error?.code === 'string' ? error.code : `http_${response.status}`;
      const message = typeof error?.message === 'string' ? error.message : text.slice(0, 200);
      throw new CloudHttpError(response.status, code, `${method} ${path.split('?')[0]}: ${response.status} ${code}: ${message}`);
    }
    return body;
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
