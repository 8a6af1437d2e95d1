// One Follow stream per open dataset (TelemetryService.Follow over Connect on /api/rpc): the followed
// window's samples while the view is live, and always the dataset's events and command changes, which
// is how the command log and the limit banner stay current without polling. Updates go into a
// LiveStore as they arrive; the view is redrawn at most once per animation frame, however many arrived.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { SortieApiError, type ConsoleApi } from './api.ts';
import { LiveStore } from './live.ts';

export type FollowStatus = 'connecting' | 'following' | 'reconnecting' | 'failed';

export interface Follow {
  store: LiveStore;
  /** Bumped once per animation frame in which updates were applied: what the views re-render on. */
  frame: number;
  status: FollowStatus;
  error: string;
}

export interface FollowParams {
  experimentId: string;
  datasetId: string;
  /** Channels to follow (Query's addressing); none: events and commands only. */
  channelIds: string[];
  /** Of those, the ones kept whole rather than windowed (the track and the mode band). */
  keepAll: string[];
  windowSeconds: number;
  /** Points per channel per window: the plot area's width, one point per pixel as Query asks. */
  budget: number;
  enabled: boolean;
}

/** Reconnection delays: doubled from the first up to the last, back to the first once updates flow again. */
const RETRY_FIRST_MS = 500;
const RETRY_MAX_MS = 10_000;

/**
 * Refused for a reason retrying will not fix (bad key, scope, unknown dataset or channel): stop and say so.
 * What the network or a restarting service caused (UNAVAILABLE, a gateway, a reset) is retried.
 */
function permanent(e: unknown): boolean {
  return e instanceof SortieApiError && e.status >= 400 && e.status < 500 && e.status !== 408 && e.status !== 429;
}

export function useFollow(api: ConsoleApi, p: FollowParams): Follow | undefined {
  const channelKey = p.channelIds.join('\n');
  // A new store for a new request: a changed channel list starts from the server's reset.
  const store = useMemo(() => new LiveStore(p.datasetId, p.channelIds, p.windowSeconds, new Set(p.keepAll)), [p.datasetId, channelKey, p.windowSeconds]);
  const [frame, setFrame] = useState(0);
  const [status, setStatus] = useState<FollowStatus>('connecting');
  const [error, setError] = useState('');

  useEffect(() => {
    if (!p.enabled) return;
    const abort = new AbortController();
    let pendingFrame = 0;
    const draw = () => {
      pendingFrame = 0;
      setFrame((n) => n + 1);
    };
    void (async () => {
      let delay = RETRY_FIRST_MS;
      while (!abort.signal.aborted) {
        try {
          const updates = api.follow(
            { experimentId: p.experimentId, datasetId: p.datasetId, channelIds: store.channelIds as string[], windowMs: p.windowSeconds * 1000, maxPointsPerWindow: Math.min(10_000, Math.max(1, Math.floor(p.budget))) },
            abort.signal,
          );
          for await (const update of updates) {
            const receivedAt = performance.now();
            store.apply(update);
            liveTimings.received(receivedAt, store.head);
            delay = RETRY_FIRST_MS;
            setStatus('following');
            setError('');
            if (!pendingFrame) pendingFrame = requestAnimationFrame(draw);
          }
        } catch (e) {
          if (abort.signal.aborted) return;
          setError(e instanceof Error ? e.message : String(e));
          if (permanent(e)) {
            setStatus('failed');
            return;
          }
        }
        // Ended (the service shut down, or a proxy closed it) or failed: follow again after a pause.
        if (abort.signal.aborted) return;
        setStatus('reconnecting');
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, RETRY_MAX_MS);
      }
    })();
    return () => {
      abort.abort();
      cancelAnimationFrame(pendingFrame);
      setStatus('connecting');
    };
  }, [api, store, p.enabled, p.experimentId]);

  return p.enabled ? { store, frame, status, error } : undefined;
}

/** One update as the page drew it: `performance.now()` at receipt and once drawn, and its newest sample. */
export interface LiveTiming {
  /** Unix milliseconds of the newest sample the update accounts for (its head), if any. */
  headMs: number | undefined;
  receivedAt: number;
  drawnAt: number;
}

const KEPT_TIMINGS = 1000;

/**
 * Frame receipt → pixel drawn, for bench:live: every update applied is recorded with `performance.now()`
 * when it came off the stream (`receivedAt`) and when the animation-frame callback that drew it had
 * called uPlot's setData and the views had committed (`drawnAt`, the same task, before the browser
 * paints). The last 1000 are on `window.__sortieLive.timings`; `performance.timeOrigin + drawnAt` is
 * the wall clock. A few numbers per update, nothing else is kept.
 */
export const liveTimings = {
  pending: [] as Array<{ headMs: number | undefined; receivedAt: number }>,
  timings: [] as LiveTiming[],
  received(receivedAt: number, head: number | undefined): void {
    this.pending.push({ headMs: head === undefined ? undefined : head * 1000, receivedAt });
    // A hidden tab runs no animation frames while updates still arrive: keep the newest only.
    if (this.pending.length > KEPT_TIMINGS) this.pending.splice(0, this.pending.length - KEPT_TIMINGS);
  },
  /** Called once the frame's drawing is done. */
  drawn(): void {
    if (this.pending.length === 0) return;
    const drawnAt = performance.now();
    for (const p of this.pending) this.timings.push({ ...p, drawnAt });
    this.pending.length = 0;
    if (this.timings.length > KEPT_TIMINGS) this.timings.splice(0, this.timings.length - KEPT_TIMINGS);
  },
};
(globalThis as unknown as { __sortieLive: typeof liveTimings }).__sortieLive = liveTimings;
