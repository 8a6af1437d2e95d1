// An in-memory cloud for the uplink's unit tests: TelemetryService.StreamSubmit over Connect's router
// transport (the real client, the real protocol, no sockets) with the narrow sink's contract (each
// batch written as it arrives, a frame collapsing onto the row of its frame_seq), and the HTTP API
// the uplink uses. Knobs make it go away, refuse the format, fail mid-stream or hold its answers.
import { Code, ConnectError, createRouterTransport } from '@connectrpc/connect';
import type { Transport } from '@connectrpc/connect';
import { TelemetryService } from '@sortie/contracts';
import type { StreamSubmitRequest } from '@sortie/contracts';
import type { CloudApi, CloudEvent, StoredCloudEvent } from '../uplink/cloud-api.ts';

export interface StoredFrame {
  readonly bytes: Uint8Array;
  readonly timestampUs: bigint;
}

export interface SessionLog {
  readonly datasetId: string;
  readonly format: string;
  readonly points: number;
  readonly batches: number;
  readonly outcome: 'answered' | string;
}

export class FakeCloud {
  /** Every call fails as if the cloud were unreachable (gRPC UNAVAILABLE, HTTP fetch failure). */
  down = false;
  /** StreamSubmit answers UNIMPLEMENTED for mavlink-raw-v1 (a server without the narrow sink). */
  unimplemented = false;
  /** The next StreamSubmit stores this many batches, then fails (once). */
  failAfterBatches: number | null = null;
  /** Awaited before a StreamSubmit answers (per dataset), to hold confirmations back. */
  holdAnswer: ((datasetId: string) => Promise<void>) | null = null;

  /** datasetId → frame_seq → frame. */
  readonly frames = new Map<string, Map<bigint, StoredFrame>>();
  readonly datasets = new Map<string, string>();
  readonly events = new Map<string, Array<CloudEvent>>();
  readonly sessions: SessionLog[] = [];
  registerCalls = 0;
  postCalls = 0;
  duplicates = 0;

  readonly transport: Transport;
  readonly api: CloudApi;

  constructor() {
    this.transport = createRouterTransport((router) =>
      router.service(TelemetryService, {
        streamSubmit: async (requests: AsyncIterable<StreamSubmitRequest>) => this.#streamSubmit(requests),
      }),
    );
    const unreachable = (): Error => new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:1') });
    this.api = {
      registerNarrowDataset: async (name) => {
        if (this.down) throw unreachable();
        this.registerCalls++;
        let id = this.datasets.get(name);
        if (!id) {
          id = crypto.randomUUID();
          this.datasets.set(name, id);
        }
        return id;
      },
      postEvents: async (datasetId, events) => {
        if (this.down) throw unreachable();
        this.postCalls++;
        const list = this.events.get(datasetId) ?? [];
        list.push(...events);
        this.events.set(datasetId, list);
      },
      listEvents: async (datasetId, kind): Promise<StoredCloudEvent[]> => {
        if (this.down) throw unreachable();
        return (this.events.get(datasetId) ?? []).filter((e) => e.kind === kind);
      },
    };
  }

  datasetId(name: string): string | undefined {
    return this.datasets.get(name);
  }

  /** Frames stored for a dataset, by frame_seq. */
  storedSeqs(datasetId: string | undefined): bigint[] {
    return [...(datasetId ? (this.frames.get(datasetId)?.keys() ?? []) : [])].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }

  async #streamSubmit(requests: AsyncIterable<StreamSubmitRequest>) {
    if (this.down) throw new ConnectError('connect ECONNREFUSED', Code.Unavailable);
    let datasetId = '';
    let format = '';
    let messages = 0;
    let points = 0;
    let batches = 0;
    let written = 0;
    let duplicates = 0;
    try {
      for await (const request of requests) {
        if (this.down) throw new ConnectError('the cloud went away', Code.Unavailable);
        const m = request.message;
        if (messages++ === 0) {
          if (m.case !== 'header') throw new ConnectError('first message must be the header', Code.InvalidArgument);
          datasetId = m.value.datasetId;
          format = m.value.format;
          if (![...this.datasets.values()].includes(datasetId)) throw new ConnectError(`dataset ${datasetId} not found`, Code.NotFound);
          if (format !== 'mavlink-raw-v1') throw new ConnectError(`format ${format}`, Code.InvalidArgument);
          if (this.unimplemented) throw new ConnectError('ingest of narrow datasets is not available yet', Code.Unimplemented);
          continue;
        }
        if (m.case !== 'batch') throw new ConnectError('expected a batch', Code.InvalidArgument);
        if (this.failAfterBatches !== null && batches >= this.failAfterBatches) {
          this.failAfterBatches = null;
          throw new ConnectError('database connection lost', Code.Internal);
        }
        batches++;
        const table = this.frames.get(datasetId) ?? new Map<bigint, StoredFrame>();
        this.frames.set(datasetId, table);
        for (const p of m.value.points) {
          points++;
          if (p.type.case !== 'bytes' || p.channelId !== '') throw new ConnectError('mavlink-raw-v1 points carry bytes only', Code.InvalidArgument);
          if (table.has(p.frameSeq)) {
            duplicates++;
            continue;
          }
          const ts = p.timestamp!;
          table.set(p.frameSeq, { bytes: p.type.value, timestampUs: ts.seconds * 1_000_000n + BigInt(Math.round(ts.nanos / 1000)) });
          written++;
        }
      }
      if (!datasetId) throw new ConnectError('no header', Code.InvalidArgument);
      await this.holdAnswer?.(datasetId);
      if (this.down) throw new ConnectError('the cloud went away', Code.Unavailable);
      this.duplicates += duplicates;
      this.sessions.push({ datasetId, format, points, batches, outcome: 'answered' });
      return { accepted: BigInt(points), written: BigInt(written), ignored: 0n, ignoredChannelIds: [], messages: BigInt(messages), duplicates: BigInt(duplicates) };
    } catch (error) {
      this.sessions.push({ datasetId, format, points, batches, outcome: error instanceof Error ? error.message : String(error) });
      throw error;
    }
  }
}
