// The link-event half of the gRPC uplink: each pending link event becomes one annotation on its
// system's dataset (LINK_LOSS at the last frame before the silence; LINK_REGAINED at the first frame
// after it) carrying the event's stable key in `data.key`. Before posting, the dataset's annotations
// of that kind are listed and an event whose key is already there is only acknowledged locally, so a
// crash between the POST and the local ack does not write it twice. Apart from the frames because it
// shares nothing with them but the dataset registry and the stop signal.
import { sleep } from '../core/clock.ts';
import type { QueuedLinkEvent } from '../link/link-event-queue.ts';
import { linkEventKey } from '../link/link-event-queue.ts';
import { Backoff } from './backoff.ts';
import type { BackoffOptions } from './backoff.ts';
import { CloudHttpError, classifyFailure, describeFailure } from './cloud-api.ts';
import type { CloudApi, CloudEvent } from './cloud-api.ts';
import type { DatasetRegistry } from './dataset-registry.ts';
import type { UplinkInputs } from './uplink.ts';

/** How long a newly queued link event waits for its companion before it is annotated, ms. */
const EVENT_COALESCE_MS = 250;

export interface LinkEventSenderOptions {
  readonly inputs: UplinkInputs;
  readonly registry: Promise<DatasetRegistry>;
  readonly api: CloudApi;
  readonly backoff: BackoffOptions;
  /** Aborted when the uplink stops. */
  readonly stop: AbortSignal;
  readonly counters: { annotations: number };
  /** Called after each event the cloud holds (wakes drain()). */
  readonly progress: () => void;
}

export class LinkEventSender {
  readonly #o: LinkEventSenderOptions;
  #queued = false;
  #wake: (() => void) | null = null;

  constructor(options: LinkEventSenderOptions) {
    this.#o = options;
  }

  /** A new event is in the queue. */
  queued(): void {
    this.#queued = true;
    this.#wake?.();
  }

  /** Ends a wait for new events (on stop). */
  wake(): void {
    this.#wake?.();
  }

  /** Annotates pending events until the uplink stops. */
  async run(): Promise<void> {
    const { linkEvents, logger } = this.#o.inputs;
    const backoff = new Backoff(this.#o.backoff);
    let canList = true;
    while (!this.#o.stop.aborted) {
      this.#queued = false;
      const pending = linkEvents.pending();
      if (pending.length === 0) {
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
          if (this.#queued || this.#o.stop.aborted) resolve();
        });
        this.#wake = null;
        // A gap seen only when the next frame arrives (a fast replay) queues the loss and the regain
        // together: wait for both, so that the LINK_LOSS carries its regain.
        await sleep(EVENT_COALESCE_MS, this.#o.stop);
        continue;
      }
      const registry = await this.#o.registry;
      let current: number | null = null;
      try {
        for (const queued of pending) {
          current = queued.event.sysid;
          const annotation = toAnnotation(queued, pending);
          const datasetId = await registry.datasetId(queued.event.sysid, this.#o.stop);
          let already = false;
          if (canList) {
            try {
              const stored = await this.#o.api.listEvents(datasetId, annotation.kind, this.#o.stop);
              already = stored.some((e) => e.data?.['key'] === queued.key);
            } catch (error) {
              if (!(error instanceof CloudHttpError && error.status === 403)) throw error;
              canList = false;
              logger.warn({ error: error.message }, 'the API key cannot read annotations (datasets:read): link events are posted without checking for an earlier delivery');
            }
          }
          if (!already) {
            await this.#o.api.postEvents(datasetId, [annotation], this.#o.stop);
            this.#o.counters.annotations++;
            logger.info({ kind: annotation.kind, sysid: queued.event.sysid, datasetId, at: annotation.timestamp }, 'link event annotated in the cloud');
          }
          await linkEvents.ack(queued.id);
          this.#o.progress();
        }
        backoff.reset();
      } catch (error) {
        if (this.#o.stop.aborted) break;
        // The cached dataset id is unknown to the cloud: register again on the next attempt.
        if (error instanceof CloudHttpError && error.status === 404 && current !== null) await registry.forget(current);
        const kind = classifyFailure(error);
        const delay = backoff.next({ permanent: kind.permanent });
        logger.warn({ error: describeFailure(error), kind: kind.label, retryInMs: delay }, 'could not annotate a link event; retrying');
        await sleep(delay, this.#o.stop);
      }
    }
  }
}

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
