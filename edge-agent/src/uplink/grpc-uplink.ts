// The cloud uplink: spooled frames → gRPC StreamSubmit (mavlink-raw-v1), one dataset and one stream
// per system id; link events → annotations over HTTP. This file puts the two halves together and
// answers for them (start, drain, stop, status); each half has its own file.
//
// Frames (frame-sender.ts). One reader follows the spool from its acked seq and routes each record
// by system id to that system's current session (system-stream.ts, stream-session.ts). A session is
// cut after `sessionMaxFrames` frames or `sessionMaxMs`, half-closed, and its answer awaited while
// the next one fills (at most `maxSessionsInFlight` awaiting per system, then the reader waits).
// Each answer settles its session in the AckTracker, and the spool is acked up to the tracker's safe
// seq: everything at or below it is confirmed, whichever system it belonged to.
//
// Failures. Any failed call, registration or protocol surprise ends the attempt: the reader stops,
// the other calls are cancelled, and after a jittered exponential back-off (capped, 30 s by
// default) a new attempt reads again from the spool's acked seq. Frames the cloud had already
// stored come back with the same frame_seq and collapse onto their rows, so delivery is at least
// once on the wire and exactly once in the table. Meanwhile the pipeline keeps spooling: a cloud
// outage only grows the lag, and no LINK_LOSS is recorded for it (link events come only from the
// vehicle link's detector).
//
// Link events (link-event-sender.ts). Each pending event becomes one annotation on its system's
// dataset, keyed so that a crash between the POST and the local ack does not write it twice.
import { createClient } from '@connectrpc/connect';
import type { Transport } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { API_KEY_HEADER, TelemetryService } from '@sortie/contracts';
import { withDefaults } from '../core/option-defaults.ts';
import { DEFAULT_BACKOFF } from './backoff.ts';
import type { BackoffOptions } from './backoff.ts';
import { HttpCloudApi } from './cloud-api.ts';
import type { CloudApi } from './cloud-api.ts';
import { DatasetRegistry } from './dataset-registry.ts';
import { FrameSender } from './frame-sender.ts';
import type { AttemptStatus, FrameCounters } from './frame-sender.ts';
import { LinkEventSender } from './link-event-sender.ts';
import type { SubmitStream } from './stream-session.ts';
import type { CloudConfig, Uplink, UplinkInputs, UplinkStatus } from './uplink.ts';

export interface GrpcUplinkOptions {
  /** Cut a session after this many frames (default 2,000). */
  readonly sessionMaxFrames?: number;
  /** …or this long after its first frame, ms (default 1,000). */
  readonly sessionMaxMs?: number;
  /** Points per PointBatch message (default 500; the spec's guidance is 200 to 1,000). */
  readonly batchPoints?: number;
  /** Sessions per system awaiting their answer before the reader waits (default 2). */
  readonly maxSessionsInFlight?: number;
  /** Deadline of one session's call, ms (default 60 s). */
  readonly sessionTimeoutMs?: number;
  /** On stop, how long sessions already sent may take to answer before they are cancelled, ms. */
  readonly stopGraceMs?: number;
  readonly backoff?: BackoffOptions;
  /** Stand-ins for tests: the HTTP API, and the gRPC transport (e.g. createRouterTransport). */
  readonly api?: CloudApi;
  readonly transport?: Transport;
}

const DEFAULTS = {
  sessionMaxFrames: 2000,
  sessionMaxMs: 1000,
  batchPoints: 500,
  maxSessionsInFlight: 2,
  sessionTimeoutMs: 60_000,
  stopGraceMs: 2000,
} as const;

/** What DEFAULTS completes: every option but the test stand-ins and the backoff, whose cap comes from the cloud config. */
type SessionOptions = Required<Omit<GrpcUplinkOptions, 'api' | 'transport' | 'backoff'>>;

/** The defaults above, for the benchmark to print what it ran with. */
export const GRPC_UPLINK_DEFAULTS = DEFAULTS;

/** Totals since start, for logs and tests. */
type Counters = FrameCounters & { annotations: number };

export class GrpcUplink implements Uplink {
  readonly #cloud: CloudConfig;
  readonly #opts: SessionOptions & { backoff: BackoffOptions };
  readonly #api: CloudApi;
  readonly #submit: SubmitStream;
  readonly #stop = new AbortController();
  readonly #counters: Counters = { sent: 0, confirmed: 0, written: 0, duplicates: 0, sessions: 0, failures: 0, annotations: 0 };
  #inputs: UplinkInputs | null = null;
  #registry: Promise<DatasetRegistry> | null = null;
  #loops: Promise<unknown> | null = null;
  readonly #status: AttemptStatus = { state: 'connecting', detail: undefined, retryAtMs: null };
  #progressWaiters = new Set<() => void>();
  #events: LinkEventSender | null = null;
  #unsubscribe: Array<() => void> = [];

  constructor(cloud: CloudConfig, options: GrpcUplinkOptions = {}) {
    this.#cloud = cloud;
    this.#opts = {
      ...withDefaults<SessionOptions>(DEFAULTS, options),
      backoff: options.backoff ?? { ...DEFAULT_BACKOFF, capMs: cloud.retryMaxMs ?? DEFAULT_BACKOFF.capMs },
    };
    this.#api = options.api ?? new HttpCloudApi({ baseUrl: cloud.url, apiKey: cloud.apiKey, experimentId: cloud.experimentId });
    const transport =
      options.transport ??
      createGrpcTransport({
        baseUrl: cloud.grpcUrl,
        // A cloud that vanished without closing the connection is noticed within ~25 s.
        pingIntervalMs: 15_000,
        pingTimeoutMs: 10_000,
      });
    const client = createClient(TelemetryService, transport);
    const headers = { [API_KEY_HEADER]: cloud.apiKey };
    const timeoutMs = this.#opts.sessionTimeoutMs;
    this.#submit = (requests, { signal }) => client.streamSubmit(requests, { headers, signal, timeoutMs });
  }

  start(inputs: UplinkInputs): void {
    if (this.#inputs) throw new Error('uplink already started');
    this.#inputs = inputs;
    const registry = DatasetRegistry.open({
      api: this.#api,
      dir: inputs.spool.dir,
      key: { cloudUrl: this.#cloud.url, experimentId: this.#cloud.experimentId },
      sortie: this.#cloud.sortie,
    });
    this.#registry = registry;
    const progress = (): void => this.#progress();
    const frames = new FrameSender({
      inputs,
      registry,
      submit: this.#submit,
      experimentId: this.#cloud.experimentId,
      opts: this.#opts,
      stop: this.#stop.signal,
      status: this.#status,
      counters: this.#counters,
      progress,
    });
    const events = new LinkEventSender({
      inputs,
      registry,
      api: this.#api,
      backoff: this.#opts.backoff,
      stop: this.#stop.signal,
      counters: this.#counters,
      progress,
    });
    this.#events = events;
    // Register datasets as soon as a system id shows up, before its first frame is even durable.
    const register = (sysid: number): void => {
      void registry.then((r) => r.datasetId(sysid, this.#stop.signal)).catch(() => {});
    };
    for (const sysid of inputs.systems.list()) register(sysid);
    this.#unsubscribe.push(inputs.systems.onSystem(register));
    const onQueued = (): void => events.queued();
    inputs.linkEvents.on('queued', onQueued);
    this.#unsubscribe.push(() => inputs.linkEvents.off('queued', onQueued));
    this.#loops = Promise.allSettled([frames.run(), events.run()]);
  }

  async drain(signal: AbortSignal): Promise<void> {
    const inputs = this.#inputs;
    if (!inputs) return;
    while (!signal.aborted && !this.#stop.signal.aborted) {
      if (this.#drained(inputs)) return;
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          this.#progressWaiters.delete(done);
          signal.removeEventListener('abort', done);
          resolve();
        };
        const timer = setTimeout(done, 250);
        this.#progressWaiters.add(done);
        signal.addEventListener('abort', done, { once: true });
      });
    }
  }

  async stop(): Promise<void> {
    if (!this.#stop.signal.aborted) this.#stop.abort();
    this.#events?.wake();
    for (const off of this.#unsubscribe.splice(0)) off();
    const wasStarted = this.#loops !== null && this.#status.state !== 'off';
    await this.#loops;
    this.#status.state = 'off';
    this.#status.detail = 'stopped';
    if (wasStarted) this.#inputs?.logger.info({ ...this.#counters, ackedSeq: String(this.#inputs.spool.ackedSeq) }, 'uplink stopped');
  }

  status(): UplinkStatus {
    const c = this.#counters;
    const { state, detail, retryAtMs } = this.#status;
    const retryInSeconds = state === 'backing-off' && retryAtMs !== null ? Math.max(0, (retryAtMs - Date.now()) / 1000) : undefined;
    return {
      state,
      ...(detail ? { detail } : {}),
      sent: c.sent,
      confirmed: c.confirmed,
      duplicates: c.duplicates,
      ...(retryInSeconds === undefined ? {} : { retryInSeconds }),
      pendingEvents: this.#inputs?.linkEvents.pending().length ?? 0,
    };
  }

  /** Totals since start, for logs and tests. */
  counters(): Readonly<Counters> {
    return { ...this.#counters };
  }

  #drained(inputs: UplinkInputs): boolean {
    const { spool, linkEvents } = inputs;
    return spool.ackedSeq >= spool.nextSeq - 1n && linkEvents.pending().length === 0;
  }

  #progress(): void {
    for (const wake of [...this.#progressWaiters]) wake();
  }
}
