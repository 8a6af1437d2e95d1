// The sessions of one system id within one connection attempt of the frame sender (frame-sender.ts):
// the session being filled, the ones half-closed and awaiting their answer, and the back-pressure
// that holds the spool reader when the transport or the answers fall behind. Apart from the sender
// because it is the only place that knows when a session is cut.
import type { StreamSubmitResponse } from '@sortie/contracts';
import type { AckTracker } from './ack-tracker.ts';
import { FrameSession, framePoint } from './stream-session.ts';
import type { SubmitStream } from './stream-session.ts';

/** Batches a session may hold unsent before the reader waits for the transport to pull. */
const MAX_QUEUED_BATCHES = 4;

export interface SystemStreamOptions {
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
export class SystemStream {
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
