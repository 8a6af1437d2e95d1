// The cloud uplink: spooled frames → gRPC StreamSubmit (mavlink-raw-v1), one dataset and one stream
// per system id; link events → annotations over HTTP.
//
// Frames. One reader follows the spool from its acked seq and routes each record by system id to
// that system's current session (stream-session.ts). A session is cut after `sessionMaxFrames`
// frames or `sessionMaxMs`, half-closed, and its answer awaited while the next one fills (at most
// `maxSessionsInFlight` awaiting per system, then the reader waits). Each answer settles its
// session in the AckTracker, and the spool is acked up to the tracker's safe seq: everything at or
// below it is confirmed, whichever system it belonged to.
//
// Failures. Any failed call, registration or protocol surprise ends the attempt: the reader stops,
// the other calls are cancelled, and after a jittered exponential back-off (capped, 30 s by
// default) a new attempt reads again from the spool's acked seq. Frames the cloud had already
// stored come back with the same frame_seq and collapse onto their rows, so delivery is at least
// once on the wire and exactly once in the table. Meanwhile the pipeline keeps spooling: a cloud
// outage only grows the lag, and no LINK_LOSS is recorded for it (link events come only from the
// vehicle link's detector).
//
// Link events. Each pending event becomes one annotation on its system's dataset (LINK_LOSS at the
// last frame before the silence; LINK_REGAINED at the first frame after it) carrying the event's
// stable key in `data.key`. Before posting, the dataset's annotations of that kind are listed and an
// event whose key is already there is only acknowledged locally, so a crash between the POST and the
// local ack does not write it twice.
import { createClient } from '@connectrpc/connect';
import type { Transport } from '@connectrpc/connect';
import { createGrpcTransport } from '@connectrpc/connect-node';
import { Code, ConnectError } from '@connectrpc/connect';
import { API_KEY_HEADER, TelemetryService } from '@sortie/contracts';
import type { StreamSubmitResponse } from '@sortie/contracts';
import { sleep } from '../core/clock.ts';
import type { QueuedLinkEvent } from '../link/link-event-queue.ts';
import { linkEventKey } from '../link/link-event-queue.ts';
import { withDefaults } from '../core/option-defaults.ts';
import { decodeAgentRecord } from '../record/agent-record.ts';
import { AckTracker } from './ack-tracker.ts';
import { Backoff, DEFAULT_BACKOFF } from './backoff.ts';
import type { BackoffOptions } from './backoff.ts';
import { CloudHttpError, HttpCloudApi, classifyFailure, describeFailure } from './cloud-api.ts';
import type { CloudApi, CloudEvent } from './cloud-api.ts';
import { DatasetRegistry } from './dataset-registry.ts';
import { FrameSession, framePoint } from './stream-session.ts';
import type { SubmitStream } from './stream-session.ts';
import type { CloudConfig, Uplink, UplinkInputs, UplinkState, UplinkStatus } from './uplink.ts';

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

/** How long a newly queued link event waits for its companion before it is annotated, ms. */
const EVENT_COALESCE_MS = 250;

/** Batches a session may hold unsent before the reader waits for the transport to pull. */
const MAX_QUEUED_BATCHES = 4;

interface Counters {
  sent: number;
  confirmed: number;
  written: number;
  duplicates: number;
  sessions: number;
  failures: number;
  annotations: number;
}

/** The failure that ended an attempt, with the system whose dataset it concerned (if one). */
class AttemptFailure extends Error {
  override readonly name = 'AttemptFailure';
  readonly sysid: number | null;
  constructor(cause: unknown, sysid: number | null) {
    super(describeFailure(cause), { cause });
    this.sysid = sysid;
  }
}

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
  #state: UplinkState = 'connecting';
  #detail: string | undefined;
  #retryAtMs: number | null = null;
  #progressWaiters = new Set<() => void>();
  #eventWake: (() => void) | null = null;
  #eventsQueued = false;
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
    // Register datasets as soon as a system id shows up, before its first frame is even durable.
    const register = (sysid: number): void => {
      void registry.then((r) => r.datasetId(sysid, this.#stop.signal)).catch(() => {});
    };
    for (const sysid of inputs.systems.list()) register(sysid);
    this.#unsubscribe.push(inputs.systems.onSystem(register));
    const onQueued = (): void => {
      this.#eventsQueued = true;
      this.#eventWake?.();
    };
    inputs.linkEvents.on('queued', onQueued);
    this.#unsubscribe.push(() => inputs.linkEvents.off('queued', onQueued));
    this.#loops = Promise.allSettled([this.#framesLoop(), this.#eventsLoop()]);
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
    this.#eventWake?.();
    for (const off of this.#unsubscribe.splice(0)) off();
    const wasStarted = this.#loops !== null && this.#state !== 'off';
    await this.#loops;
    this.#state = 'off';
    this.#detail = 'stopped';
    if (wasStarted) this.#inputs?.logger.info({ ...this.#counters, ackedSeq: String(this.#inputs.spool.ackedSeq) }, 'uplink stopped');
  }

  status(): UplinkStatus {
    const c = this.#counters;
    const retryInSeconds = this.#state === 'backing-off' && this.#retryAtMs !== null ? Math.max(0, (this.#retryAtMs - Date.now()) / 1000) : undefined;
    return {
      state: this.#state,
      ...(this.#detail ? { detail: this.#detail } : {}),
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

  // --- frames -----------------------------------------------------------------------------------

  async #framesLoop(): Promise<void> {
    const { logger } = this.#inputs!;
    const backoff = new Backoff(this.#opts.backoff);
    let lastProblem = '';
    let downSinceMs: number | null = null;
    while (!this.#stop.signal.aborted) {
      this.#state = 'connecting';
      this.#retryAtMs = null;
      try {
        await this.#attempt(() => {
          if (downSinceMs !== null) {
            logger.info({ outageSeconds: (Date.now() - downSinceMs) / 1000, backlog: this.#inputs!.spool.stats().pending }, 'cloud reachable again: streaming the backlog');
            downSinceMs = null;
            lastProblem = '';
          }
          backoff.reset();
        });
      } catch (error) {
        if (this.#stop.signal.aborted) break;
        const failure = error instanceof AttemptFailure ? error : new AttemptFailure(error, null);
        const cause = failure.cause;
        const kind = classifyFailure(cause);
        this.#counters.failures++;
        if (cause instanceof ConnectError && cause.code === Code.NotFound && failure.sysid !== null) {
          // The cached dataset id is unknown to the cloud: register again on the next attempt.
          await (await this.#registry!).forget(failure.sysid);
        }
        const delay = backoff.next({ permanent: kind.permanent });
        downSinceMs ??= Date.now();
        this.#state = 'backing-off';
        this.#detail = `${kind.label}: ${failure.message}`;
        this.#retryAtMs = Date.now() + delay;
        const problem = this.#detail;
        const fields = { error: failure.message, kind: kind.label, permanent: kind.permanent, retryInMs: delay, failures: backoff.failures };
        if (problem !== lastProblem || backoff.failures % 10 === 0) {
          if (kind.permanent) logger.error(fields, 'the cloud refuses the uplink; retrying at the longest interval, frames stay in the spool');
          else logger.warn(fields, 'cloud unreachable; frames stay in the spool and are sent when it is back');
        } else {
          logger.debug(fields, 'cloud still unreachable');
        }
        lastProblem = problem;
        this.#progress();
        await sleep(delay, this.#stop.signal);
      }
    }
  }

  /**
   * One connection attempt: streams until stopped (resolves) or until something fails (rejects with
   * an AttemptFailure). `onSuccess` runs after each confirmed session.
   */
  async #attempt(onSuccess: () => void): Promise<void> {
    const inputs = this.#inputs!;
    const { spool, logger } = inputs;
    const registry = await this.#registry!;
    const opts = this.#opts;
    const baseline = spool.ackedSeq;
    const tracker = new AckTracker(baseline);
    const reading = new AbortController();
    const calls = new AbortController();
    const stopReading = (): void => reading.abort();
    this.#stop.signal.addEventListener('abort', stopReading, { once: true });
    let failure: AttemptFailure | null = null;
    const fail = (error: unknown, sysid: number | null): void => {
      if (failure || this.#stop.signal.aborted) return;
      failure = error instanceof AttemptFailure ? error : new AttemptFailure(error, sysid);
      reading.abort();
      calls.abort();
    };
    const ackSafe = (): void => {
      const safe = tracker.safeAck();
      if (safe > spool.ackedSeq) {
        try {
          spool.ack(safe);
        } catch (error) {
          fail(error, null);
        }
      }
    };
    const onAnswer = (session: FrameSession, response: StreamSubmitResponse): void => {
      if (failure) return;
      if (!session.closed) {
        fail(new Error('the cloud answered a StreamSubmit session before it was half-closed'), session.sysid);
        return;
      }
      if (response.accepted !== BigInt(session.frames)) {
        fail(new Error(`the cloud accepted ${response.accepted} of ${session.frames} frames of a session`), session.sysid);
        return;
      }
      tracker.settle(session.range);
      this.#counters.confirmed += session.frames;
      this.#counters.written += Number(response.written);
      this.#counters.duplicates += Number(response.duplicates);
      this.#counters.sessions++;
      this.#state = 'streaming';
      this.#detail = undefined;
      onSuccess();
      ackSafe();
      this.#progress();
    };

    const streams = new Map<number, SystemStream>();
    try {
      for await (const record of spool.records({ afterSeq: baseline, signal: reading.signal, batchSize: 1024 })) {
        let decoded;
        try {
          decoded = decodeAgentRecord(record.payload);
        } catch (error) {
          // Cannot happen for records this agent wrote; never let one wedge the uplink.
          logger.warn({ seq: String(record.seq), error: (error as Error).message }, 'skipping a spool record that is not an agent record');
          tracker.skip(record.seq);
          if (tracker.unsettled === 0) ackSafe();
          continue;
        }
        let stream = streams.get(decoded.sysid);
        if (!stream) {
          let datasetId: string;
          try {
            datasetId = await registry.datasetId(decoded.sysid, reading.signal);
          } catch (error) {
            fail(error, decoded.sysid);
            break;
          }
          stream = new SystemStream({
            sysid: decoded.sysid,
            experimentId: this.#cloud.experimentId,
            datasetId,
            submit: this.#submit,
            tracker,
            signal: calls.signal,
            readingSignal: reading.signal,
            opts,
            onAnswer,
            onFailure: (error) => fail(error, decoded.sysid),
          });
          streams.set(decoded.sysid, stream);
        }
        this.#counters.sent++;
        await stream.push(record.seq, record.receivedAtUs, decoded.frame);
        if (failure) break;
      }
    } catch (error) {
      fail(error, null);
    } finally {
      this.#stop.signal.removeEventListener('abort', stopReading);
    }

    if (!failure) {
      // Stopping: send what is queued, give the answers a moment, then cancel.
      for (const s of streams.values()) s.cut();
      const settled = Promise.allSettled([...streams.values()].flatMap((s) => s.inFlight().map((x) => x.result)));
      await Promise.race([settled, sleep(opts.stopGraceMs)]);
    }
    for (const s of streams.values()) s.dispose();
    calls.abort();
    if (failure) throw failure;
  }

  // --- link events ------------------------------------------------------------------------------

  async #eventsLoop(): Promise<void> {
    const { linkEvents, logger } = this.#inputs!;
    const backoff = new Backoff(this.#opts.backoff);
    let canList = true;
    while (!this.#stop.signal.aborted) {
      this.#eventsQueued = false;
      const pending = linkEvents.pending();
      if (pending.length === 0) {
        await new Promise<void>((resolve) => {
          this.#eventWake = resolve;
          if (this.#eventsQueued || this.#stop.signal.aborted) resolve();
        });
        this.#eventWake = null;
        // A gap seen only when the next frame arrives (a fast replay) queues the loss and the regain
        // together: wait for both, so that the LINK_LOSS carries its regain.
        await sleep(EVENT_COALESCE_MS, this.#stop.signal);
        continue;
      }
      const registry = await this.#registry!;
      let current: number | null = null;
      try {
        for (const queued of pending) {
          current = queued.event.sysid;
          const annotation = toAnnotation(queued, pending);
          const datasetId = await registry.datasetId(queued.event.sysid, this.#stop.signal);
          let already = false;
          if (canList) {
            try {
              const stored = await this.#api.listEvents(datasetId, annotation.kind, this.#stop.signal);
              already = stored.some((e) => e.data?.['key'] === queued.key);
            } catch (error) {
              if (!(error instanceof CloudHttpError && error.status === 403)) throw error;
              canList = false;
              logger.warn({ error: error.message }, 'the API key cannot read annotations (datasets:read): link events are posted without checking for an earlier delivery');
            }
          }
          if (!already) {
            await this.#api.postEvents(datasetId, [annotation], this.#stop.signal);
            this.#counters.annotations++;
            logger.info({ kind: annotation.kind, sysid: queued.event.sysid, datasetId, at: annotation.timestamp }, 'link event annotated in the cloud');
          }
          await linkEvents.ack(queued.id);
          this.#progress();
        }
        backoff.reset();
      } catch (error) {
        if (this.#stop.signal.aborted) break;
        // The cached dataset id is unknown to the cloud: register again on the next attempt.
        if (error instanceof CloudHttpError && error.status === 404 && current !== null) await registry.forget(current);
        const kind = classifyFailure(error);
        const delay = backoff.next({ permanent: kind.permanent });
        logger.warn({ error: describeFailure(error), kind: kind.label, retryInMs: delay }, 'could not annotate a link event; retrying');
        await sleep(delay, this.#stop.signal);
      }
    }
  }
}

interface SystemStreamOptions {
  readonly sysid: number;
  readonly experimentId: string;
  readonly datasetId: string;
  readonly submit: SubmitStream;
  readonly tracker: AckTracker;
  /** Cancels the calls. */
  readonly signal: AbortSignal;
  /** Ends waits of the reader. */
  readonly readingSignal: AbortSignal;
  readonly opts: { sessionMaxFrames: number; sessionMaxMs: number; batchPoints: number; maxSessionsInFlight: number };
  readonly onAnswer: (session: FrameSession, response: StreamSubmitResponse) => void;
  readonly onFailure: (error: unknown) => void;
}

/** The sessions of one system id within one attempt: the one being filled and those awaiting an answer. */
class SystemStream {
  readonly #o: SystemStreamOptions;
  #current: FrameSession | null = null;
  #timer: NodeJS.Timeout | null = null;
  readonly #waiting = new Set<FrameSession>();

  constructor(options: SystemStreamOptions) {
    this.#o = options;
  }

  inFlight(): FrameSession[] {
    return [...this.#waiting];
  }

  async push(seq: bigint, receivedAtUs: bigint, frame: Uint8Array): Promise<void> {
    const o = this.#o;
    const session = this.#current ?? this.#open();
    session.add(framePoint(seq, receivedAtUs, frame));
    o.tracker.add(session.range, seq);
    if (session.frames >= o.opts.sessionMaxFrames) this.cut();
    // Back-pressure: the transport has not pulled what is queued, or too many answers are due.
    if (session.queuedBatches > MAX_QUEUED_BATCHES) await this.#until(() => session.room(MAX_QUEUED_BATCHES));
    while (this.#waiting.size >= o.opts.maxSessionsInFlight && !o.readingSignal.aborted) {
      await this.#until(() => Promise.race([...this.#waiting].map((s) => s.result.then(noop, noop))));
    }
  }

  /** Half-closes the session being filled (its answer confirms it). */
  cut(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    const session = this.#current;
    if (!session) return;
    this.#current = null;
    session.close();
    this.#waiting.add(session);
  }

  dispose(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #open(): FrameSession {
    const o = this.#o;
    const session = new FrameSession({
      sysid: o.sysid,
      range: o.tracker.begin(),
      experimentId: o.experimentId,
      datasetId: o.datasetId,
      submit: o.submit,
      batchPoints: o.opts.batchPoints,
      signal: o.signal,
    });
    session.result.then(
      (response) => {
        this.#waiting.delete(session);
        o.onAnswer(session, response);
      },
      (error: unknown) => {
        this.#waiting.delete(session);
        if (this.#current === session) this.#current = null;
        o.onFailure(error);
      },
    );
    this.#current = session;
    this.#timer = setTimeout(() => this.cut(), o.opts.sessionMaxMs);
    return session;
  }

  /** Waits for `what`, or until the reader is told to stop. */
  #until(what: () => Promise<unknown>): Promise<unknown> {
    const signal = this.#o.readingSignal;
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        signal.removeEventListener('abort', done);
        resolve(undefined);
      };
      signal.addEventListener('abort', done, { once: true });
      what().then(done, done);
    });
  }
}

function noop(): void {}

/** µs since the epoch → ISO 8601 with µs. */
export function isoFromUs(us: number): string {
  const ms = Math.floor(us / 1000);
  const micros = Math.round(us - ms * 1000);
  return new Date(ms).toISOString().replace(/Z$/, `${String(micros).padStart(3, '0')}Z`);
}

/**
 * The annotation for one queued link event. A LINK_LOSS whose LINK_REGAINED is also pending (a
 * replay, or a cloud that was away during the outage) carries the regain in its data too.
 */
export function toAnnotation(queued: QueuedLinkEvent, pending: readonly QueuedLinkEvent[]): CloudEvent {
  const e = queued.event;
  // Every time here is on the agent's clock (the clock frames' receive times are on); the cloud lists
  // the annotation on the flight's aligned time and says so in its own data.
  const common = { key: queued.key, source: 'edge-agent', clock: 'agent', sysid: e.sysid, lastFrameAt: isoFromUs(e.lastFrameUs) };
  if (e.type === 'LINK_LOSS') {
    const regained = pending.find((p) => p.event.type === 'LINK_REGAINED' && p.event.sysid === e.sysid && p.event.lastFrameUs === e.lastFrameUs);
    const regain =
      regained && regained.event.type === 'LINK_REGAINED'
        ? { regainedAt: isoFromUs(regained.event.regainedAtUs), outageSeconds: regained.event.outageUs / 1e6 }
        : {};
    return {
      timestamp: isoFromUs(e.lastFrameUs),
      kind: 'LINK_LOSS',
      message: `vehicle link lost: no frame from system ${e.sysid} for more than ${e.thresholdUs / 1e6} s`,
      data: { ...common, detectedAt: isoFromUs(e.detectedAtUs), thresholdSeconds: e.thresholdUs / 1e6, ...regain },
    };
  }
  return {
    timestamp: isoFromUs(e.regainedAtUs),
    kind: 'LINK_REGAINED',
    message: `vehicle link regained: system ${e.sysid} after ${(e.outageUs / 1e6).toFixed(3)} s of silence`,
    data: {
      ...common,
      lossKey: linkEventKey({ type: 'LINK_LOSS', sysid: e.sysid, lastFrameUs: e.lastFrameUs, detectedAtUs: 0, thresholdUs: 0 }),
      regainedAt: isoFromUs(e.regainedAtUs),
      outageSeconds: e.outageUs / 1e6,
    },
  };
}
