// One bounded StreamSubmit session: the mavlink-raw-v1 header, then the frames of one system id in
// PointBatch messages, then a half-close. StreamSubmit is client-streaming, so the server answers
// once, after the half-close, with counts for the whole session: that answer is the only
// confirmation the uplink gets, which is why sessions are kept short (a few thousand frames or about
// a second) and why several may be awaiting their answer while the next one is being filled.
//
// The request stream is an async generator that the transport pulls as HTTP/2 flow control lets it:
// a server that writes slowly stops the pulls, the batches queue up here, and room() holds the
// spool reader back.
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { StreamSubmitRequestSchema, StreamSubmitResponse, TelemetryPointSchema } from '@sortie/contracts';
import type { SessionRange } from './ack-tracker.ts';

export const MAVLINK_RAW_V1 = 'mavlink-raw-v1';

export type StreamMessage = MessageInitShape<typeof StreamSubmitRequestSchema>;
export type PointInit = MessageInitShape<typeof TelemetryPointSchema>;

/** The StreamSubmit call: the generated client's `streamSubmit`, or a stand-in in tests. */
export type SubmitStream = (requests: AsyncIterable<StreamMessage>, options: { signal: AbortSignal }) => Promise<StreamSubmitResponse>;

const US_PER_S = 1_000_000n;

/** A mavlink-raw-v1 point: one whole frame, the agent's receive time, the spool seq as frame_seq. */
export function framePoint(seq: bigint, receivedAtUs: bigint, frame: Uint8Array): PointInit {
  return {
    timestamp: { seconds: receivedAtUs / US_PER_S, nanos: Number(receivedAtUs % US_PER_S) * 1000 },
    type: { case: 'bytes', value: frame },
    frameSeq: seq,
  };
}

export interface FrameSessionOptions {
  readonly sysid: number;
  readonly range: SessionRange;
  readonly experimentId: string;
  readonly datasetId: string;
  readonly submit: SubmitStream;
  /** Points per PointBatch message. */
  readonly batchPoints: number;
  /** Aborting cancels the call. */
  readonly signal: AbortSignal;
}

export class FrameSession {
  readonly sysid: number;
  readonly datasetId: string;
  readonly range: SessionRange;
  /** The server's answer; rejects if the call fails. Never unhandled. */
  readonly result: Promise<StreamSubmitResponse>;
  readonly #batchPoints: number;
  readonly #batches: PointInit[][] = [];
  #current: PointInit[] = [];
  #frames = 0;
  #closed = false;
  #settled = false;
  #wakeWriter: (() => void) | null = null;
  #roomWaiters: Array<() => void> = [];

  constructor(options: FrameSessionOptions) {
    this.sysid = options.sysid;
    this.datasetId = options.datasetId;
    this.range = options.range;
    this.#batchPoints = options.batchPoints;
    const { signal } = options;
    signal.addEventListener('abort', () => this.#wakeAll(), { once: true });
    const header = { experimentId: options.experimentId, datasetId: options.datasetId, format: MAVLINK_RAW_V1 };
    this.result = options.submit(this.#messages(header, signal), { signal });
    this.result.then(
      () => this.#onSettled(),
      () => this.#onSettled(),
    );
  }

  /** Frames added so far. */
  get frames(): number {
    return this.#frames;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Whole batches waiting for the transport to pull them. */
  get queuedBatches(): number {
    return this.#batches.length;
  }

  add(point: PointInit): void {
    if (this.#closed) throw new Error('session already closed');
    this.#current.push(point);
    this.#frames++;
    if (this.#current.length >= this.#batchPoints) {
      this.#batches.push(this.#current);
      this.#current = [];
      this.#wakeWriter?.();
    }
  }

  /** Sends the partial batch and half-closes: the server answers once it has written everything. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#current.length > 0) this.#batches.push(this.#current);
    this.#current = [];
    this.#wakeWriter?.();
  }

  /** Resolves once at most `maxBatches` wait to be pulled, or the call has ended. */
  room(maxBatches: number): Promise<void> {
    if (this.#batches.length <= maxBatches || this.#settled) return Promise.resolve();
    return new Promise((resolve) => {
      const check = (): void => {
        if (this.#batches.length <= maxBatches || this.#settled) resolve();
        else this.#roomWaiters.push(check);
      };
      this.#roomWaiters.push(check);
    });
  }

  async *#messages(header: { experimentId: string; datasetId: string; format: string }, signal: AbortSignal): AsyncGenerator<StreamMessage> {
    yield { message: { case: 'header', value: header } };
    for (;;) {
      if (signal.aborted) return;
      const batch = this.#batches.shift();
      if (batch) {
        this.#notifyRoom();
        yield { message: { case: 'batch', value: { points: batch } } };
        continue;
      }
      if (this.#closed) return;
      await new Promise<void>((resolve) => (this.#wakeWriter = resolve));
      this.#wakeWriter = null;
    }
  }

  #notifyRoom(): void {
    const waiters = this.#roomWaiters;
    this.#roomWaiters = [];
    for (const w of waiters) w();
  }

  #onSettled(): void {
    this.#settled = true;
    this.#wakeAll();
  }

  #wakeAll(): void {
    this.#wakeWriter?.();
    this.#notifyRoom();
  }
}
