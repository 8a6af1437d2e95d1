// The HTTP side of the uplink: registering narrow datasets (POST /api/streams/register) and writing
// link events as annotations (POST /api/datasets/events, and GET to find ones already written). The
// frames themselves go over gRPC (stream-session.ts). The calls go through @sortie/client, which types
// them by the contracts' schemas, checks what is sent and parses what comes back; its SortieApiError
// carries the HTTP status and the error envelope's stable code.
import { Code, ConnectError } from '@connectrpc/connect';
import { createSortieClient, SortieApiError, type SortieClient } from '@sortie/client';
import type { CreateEventsRequestSchema, TimelineEvent } from '@sortie/contracts';
import type { z } from 'zod';

/**
 * One annotation as POST /api/datasets/events takes it. The parsed shape (message and data present)
 * rather than z.input's: the agent always writes both, and the in-memory cloud stores what it gets.
 */
export type CloudEvent = z.infer<typeof CreateEventsRequestSchema>['events'][number];

/** What the uplink reads of an annotation already stored (GET /api/datasets/events). */
export type StoredCloudEvent = Pick<TimelineEvent, 'kind' | 'data'>;

/** What the uplink needs from the HTTP API; tests substitute an in-memory cloud. */
export interface CloudApi {
  /** Registers (idempotently, by name) a narrow mavlink-raw-v1 dataset; returns its id. */
  registerNarrowDataset(datasetName: string, signal?: AbortSignal): Promise<string>;
  postEvents(datasetId: string, events: readonly CloudEvent[], signal?: AbortSignal): Promise<void>;
  /** Annotations of one kind on a dataset. */
  listEvents(datasetId: string, kind: string, signal?: AbortSignal): Promise<StoredCloudEvent[]>;
}

/** A failed call with an answer: the HTTP status and the envelope's code (the client's error type). */
export { SortieApiError as CloudHttpError };

const REQUEST_TIMEOUT_MS = 15_000;

export class HttpCloudApi implements CloudApi {
  readonly #client: SortieClient;
  readonly #experimentId: string;

  constructor(options: { baseUrl: string; apiKey: string; experimentId: string }) {
    this.#client = createSortieClient({ baseUrl: options.baseUrl, apiKey: options.apiKey, timeoutMs: REQUEST_TIMEOUT_MS });
    this.#experimentId = options.experimentId;
  }

  async registerNarrowDataset(datasetName: string, signal?: AbortSignal): Promise<string> {
    const answer = await this.#client.datasets.register(
      {
        experimentId: this.#experimentId,
        datasetName,
        storageShape: 'narrow',
        codec: 'mavlink',
        dialect: 'ardupilotmega',
        format: 'mavlink-raw-v1',
      },
      { signal },
    );
    return answer.datasetId;
  }

  async postEvents(datasetId: string, events: readonly CloudEvent[], signal?: AbortSignal): Promise<void> {
    await this.#client.events.create({ experimentId: this.#experimentId, datasetId, events: [...events] }, { signal });
  }

  async listEvents(datasetId: string, kind: string, signal?: AbortSignal): Promise<StoredCloudEvent[]> {
    return await this.#client.events.list({ datasetId, experimentId: this.#experimentId, kind }, { signal });
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
  if (error instanceof SortieApiError) {
    // Status 0: the contract refused the input before sending; no retry makes it valid.
    const permanent = error.status === 0 || (error.status >= 400 && error.status < 500 && error.status !== 408 && error.status !== 429);
    return { permanent, label: error.status === 0 ? `not sent: ${error.code}` : `HTTP ${error.status} ${error.code}` };
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
  if (error instanceof SortieApiError) {
    const request = error.requestId ? ` (request id ${error.requestId})` : '';
    return `${error.status ? `${error.status} ` : ''}${error.code}: ${error.message}${request}`;
  }
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    if (cause instanceof Error && cause.message) return `${error.message}: ${cause.message}`;
    return error.message;
  }
  return String(error);
}
