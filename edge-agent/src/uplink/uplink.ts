// The seam between the vehicle side (sources → pipeline → spool) and the cloud side (gRPC StreamSubmit
// with mavlink-raw-v1, annotations for link events: grpc-uplink.ts). The vehicle side is complete
// without it: with no --cloud the agent spools, and whatever it spooled is sent by a later run that
// has an uplink.
//
// What an uplink gets, and how it must use it:
//
//   Frames   inputs.spool. Read the unacknowledged records in seq order with
//            `spool.records({ afterSeq: spool.ackedSeq, signal })` (follows the tail as new batches
//            become durable; only durable records are ever handed out), or page with
//            `spool.readFrom(afterSeq, max)`. Each SpoolRecord is
//              seq           → frame_seq (monotonic across restarts; per system id it is increasing,
//                              not contiguous: one spool holds every system id)
//              receivedAtUs  → the row's receive time (recorded time for a tlog replay: see
//                              decodeAgentRecord(...).recordedTime)
//              payload       → decodeAgentRecord(payload) from record/agent-record.ts gives sysid,
//                              compid and the raw frame bytes (the mavlink-raw-v1 `bytes`)
//            Route by sysid: one narrow dataset per (sortie × system id), registered on first sight.
//   Acks     `spool.ack(seq)` is cumulative: call it with the highest seq such that the cloud has
//            confirmed every record ≤ seq, whichever dataset it went to (the minimum over streams
//            in flight). Acks are persisted in batches; after a crash the unpersisted tail is sent
//            again, and the server collapses it on frame_seq. Never ack a seq the server has not
//            confirmed: acknowledged segments are deleted.
//   Systems  `inputs.systems.list()` and `onSystem()` name the system ids this process has seen, to
//            register datasets early; records from earlier runs still pending carry their own sysid.
//   Events   inputs.linkEvents: `pending()` (oldest first, survive restarts), the 'queued' event for
//            new ones, `ack(id)` once the annotation is stored. Each QueuedLinkEvent has a stable
//            `key` usable for idempotency; times in the event are µs on the frames' clock (so a
//            replayed outage is annotated at its recorded time), sysid picks the dataset.
//
// An outage of the cloud is never a link loss: link events come only from the vehicle link's
// detector, and the uplink just keeps the spool draining when the cloud is back.
import type { Logger } from 'pino';
import type { LinkEventQueue } from '../link/link-event-queue.ts';
import type { Spool } from '../spool/spool.ts';

/** Where the uplink sends, and as whom (from --cloud, --grpc, --api-key, --experiment, --sortie). */
export interface CloudConfig {
  /** Base URL of the HTTP API (dataset registration, annotations), e.g. https://sortie.example. */
  readonly url: string;
  /** The gRPC endpoint (StreamSubmit); by default the API's host on port 50051. */
  readonly grpcUrl: string;
  readonly apiKey: string;
  readonly experimentId: string;
  /** Dataset name prefix: one narrow dataset per system id, named `<sortie>-sys<id>`. */
  readonly sortie: string;
  /** Longest wait between reconnection attempts, ms. */
  readonly retryMaxMs: number;
}

export interface SystemIds {
  list(): number[];
  /** Called for each system id seen for the first time; returns an unsubscribe function. */
  onSystem(listener: (sysid: number) => void): () => void;
}

export interface UplinkInputs {
  readonly spool: Spool;
  readonly linkEvents: LinkEventQueue;
  readonly systems: SystemIds;
  readonly logger: Logger;
}

export type UplinkState = 'off' | 'connecting' | 'streaming' | 'backing-off';

export interface UplinkStatus {
  readonly state: UplinkState;
  /** Shown to the operator, e.g. the last error while backing off. */
  readonly detail?: string;
  /** Frames handed to the cloud by this process (a frame sent again after a failure counts again). */
  readonly sent?: number;
  /** Frames the cloud confirmed to this process. */
  readonly confirmed?: number;
  /** Confirmed frames the cloud already held (redelivered after a reconnect or a restart). */
  readonly duplicates?: number;
  /** While backing off: seconds until the next attempt. */
  readonly retryInSeconds?: number;
  /** Link events not yet annotated in the cloud. */
  readonly pendingEvents?: number;
}

export interface Uplink {
  /** Starts sending in the background; must not throw for a cloud that is unreachable (retry). */
  start(inputs: UplinkInputs): void;
  /**
   * Resolves when everything spooled so far is acknowledged (a finished replay waits for this before
   * exiting), or when `signal` aborts.
   */
  drain(signal: AbortSignal): Promise<void>;
  /** Stops sending; pending acks are left to the spool to persist on close. */
  stop(): Promise<void>;
  status(): UplinkStatus;
}

/** No cloud: frames stay in the spool for a later run with an uplink. */
export function spoolOnlyUplink(): Uplink {
  return {
    start() {},
    async drain() {},
    async stop() {},
    status: () => ({ state: 'off', detail: 'spool only' }),
  };
}
