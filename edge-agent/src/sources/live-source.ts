// What the live links (serial, UDP) have in common: bytes arrive when the vehicle sends them, are
// stamped with the agent clock and queued for the pipeline, and the link never ends by itself.
// Only how the bytes are received (and what the state line says) differs per link.
import { agentClock } from '../core/clock.ts';
import type { Clock } from '../core/clock.ts';
import { ChunkQueue } from './chunk-queue.ts';
import type { Source, SourceChunk, SourceKind, SourceStats } from './source.ts';

export interface LiveSourceOptions {
  readonly clock?: Clock;
  readonly maxQueuedBytes?: number;
}

export abstract class LiveSource implements Source {
  abstract readonly kind: SourceKind;
  abstract readonly description: string;
  readonly recordedTime = false;
  readonly #clock: Clock;
  readonly #queue: ChunkQueue;
  #bytesRead = 0;
  #chunks = 0;

  protected constructor(options: LiveSourceOptions) {
    this.#clock = options.clock ?? agentClock;
    this.#queue = new ChunkQueue(options.maxQueuedBytes ?? 16 * 1024 * 1024);
  }

  abstract state(): string;
  abstract close(): Promise<void>;

  chunks(): AsyncIterable<SourceChunk> {
    return this.#queue;
  }

  now(): number {
    return this.#queue.oldestReceivedAtUs() ?? this.#clock.nowUs();
  }

  stats(): SourceStats {
    return { bytesRead: this.#bytesRead, chunks: this.#chunks, discardedBytes: 0, droppedBytes: this.#queue.droppedBytes };
  }

  progress(): null {
    return null;
  }

  ended(): boolean {
    return false;
  }

  /** Counts and queues bytes just received, stamped now; `origin` names the sender where a link has several. */
  protected receive(bytes: Buffer, origin?: string): void {
    this.#bytesRead += bytes.length;
    this.#chunks++;
    const receivedAtUs = this.#clock.nowUs();
    this.#queue.push(origin === undefined ? { bytes, receivedAtUs } : { bytes, receivedAtUs, origin });
  }

  /** Ends chunks() after what is queued; with an error, the pipeline's iteration throws it. */
  protected endChunks(error?: Error): void {
    this.#queue.end(error);
  }
}
